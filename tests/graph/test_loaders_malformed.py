"""Malformed inputs to every loader end in one clear NetweaveError line."""

import pickle
import shutil

import numpy as np
import pytest
import scipy.sparse as sp

from netweave.errors import NetweaveError
from netweave.graph import load_dataset
from netweave.graph.musae import load_musae
from netweave.graph.npz import load_npz
from netweave.graph.planetoid import load_planetoid


def one_line(exc_info):
    assert "\n" not in str(exc_info.value)


def test_npz_wrong_keys(tmp_path):
    np.savez(tmp_path / "x.npz", foo=np.arange(3))
    with pytest.raises(NetweaveError, match="no adjacency .*keys: foo") as e:
        load_npz(tmp_path / "x.npz")
    one_line(e)


def test_npz_not_a_zip(tmp_path):
    (tmp_path / "x.npz").write_bytes(b"garbage, not a zip")
    with pytest.raises(NetweaveError, match="not a readable .npz") as e:
        load_npz(tmp_path / "x.npz")
    one_line(e)


def test_npz_flat_layout_is_symmetrised(tmp_path):
    adj = sp.csr_array(np.array([[0, 1, 0], [0, 0, 1], [0, 0, 0]], dtype=np.float32))
    np.savez(tmp_path / "f.npz", adj_data=adj.data, adj_indices=adj.indices, adj_indptr=adj.indptr,
             adj_shape=adj.shape, attr_matrix=np.eye(3, dtype=np.float32), labels=np.array([3, 5, 3]))
    g = load_npz(tmp_path / "f.npz")
    assert g.num_edges == 2 and g.degrees.tolist() == [1, 2, 1]
    assert g.labels.tolist() == [0, 1, 0] and g.feature_dim == 3
    assert (g.train_mask | g.val_mask | g.test_mask).all()


def test_npz_label_count_mismatch(tmp_path):
    adj = sp.csr_array(np.ones((3, 3)))
    np.savez(tmp_path / "m.npz", adj_data=adj.data, adj_indices=adj.indices, adj_indptr=adj.indptr,
             adj_shape=adj.shape, labels=np.array([0, 1]))
    with pytest.raises(NetweaveError, match="2 labels for 3 nodes"):
        load_npz(tmp_path / "m.npz")


def test_planetoid_missing_parts_and_corrupt_pickle(tmp_path, shared):
    d = tmp_path / "p"
    d.mkdir()
    for f in (shared / "planetoid").glob("ind.cora.*"):
        shutil.copy(f, d / f.name)
    (d / "ind.cora.ty").unlink()
    with pytest.raises(NetweaveError, match="missing for cora: ind.cora.ty") as e:
        load_planetoid(d, "cora")
    one_line(e)
    (d / "ind.cora.ty").write_bytes(b"\x80\x04not a pickle")
    with pytest.raises(NetweaveError, match="not a readable Planetoid pickle"):
        load_planetoid(d, "cora")
    with pytest.raises(NetweaveError, match="available: cora"):
        load_planetoid(d, "pubmed")


def test_planetoid_needs_a_name_when_several(shared):
    with pytest.raises(NetweaveError, match="name one as planetoid"):
        load_planetoid(shared / "planetoid")


def test_musae_synthetic_and_errors(tmp_path):
    d = tmp_path / "m"
    d.mkdir()
    (d / "edges.csv").write_text("id_1,id_2\n0,1\n1,2\n2,2\n")
    (d / "features.json").write_text('{"0": [0, 3, 3], "1": [1], "2": []}')
    (d / "target.csv").write_text("id,page_type\n0,tv\n1,company\n2,tv\n3,tv\n")
    g = load_musae(d)
    assert g.num_nodes == 4 and g.num_edges == 2 and g.feature_dim == 4
    assert g.dense_features()[0].tolist() == [1, 0, 0, 1]  # repeated id counts once
    assert g.labels.tolist() == [1, 0, 1, 1]
    (d / "features.json").write_text("{broken")
    with pytest.raises(NetweaveError, match="not valid JSON"):
        load_musae(d)
    (d / "edges.csv").write_text("id_1,id_2\n0,1\n1,abc\n")
    with pytest.raises(NetweaveError, match="line 3"):
        load_musae(d)
    with pytest.raises(NetweaveError, match="no edges.csv"):
        load_musae(tmp_path)


def test_musae_binned_regression_target(shared):
    g = load_dataset(f"{shared}/musae/squirrel")
    counts = np.bincount(g.labels)
    assert counts.size == 5 and counts.min() > 0.15 * g.num_nodes  # equal-frequency bins


def test_unknown_spec_and_directory(tmp_path):
    with pytest.raises(NetweaveError, match="unknown dataset 'nope'"):
        load_dataset("nope")
    with pytest.raises(NetweaveError, match="neither MUSAE"):
        load_dataset(str(tmp_path))


def test_pickle_in_planetoid_dir_detected(tmp_path):
    d = tmp_path / "q"
    d.mkdir()
    (d / "ind.toy.graph").write_bytes(pickle.dumps({0: [1]}))
    with pytest.raises(NetweaveError, match="missing for toy"):
        load_dataset(str(d))


def toy_planetoid(d, **override):
    """A tiny valid Planetoid set ``ind.toy.*``: 2 train rows, 3 allx rows, test ids 3 and 4."""
    parts = {"x": sp.csr_matrix(np.ones((2, 3))), "y": np.eye(2)[[0, 1]], "allx": sp.csr_matrix(np.ones((3, 3))),
             "ally": np.eye(2)[[0, 1, 0]], "tx": sp.csr_matrix(np.ones((2, 3))), "ty": np.eye(2)[[1, 0]],
             "graph": {0: [1], 1: [0, 2], 2: [3], 3: [4], 4: [0]}, "test.index": "3\n4\n"} | override
    d.mkdir(exist_ok=True)
    for name, value in parts.items():
        path = d / f"ind.toy.{name}"
        path.write_text(value) if name == "test.index" else path.write_bytes(pickle.dumps(value, protocol=2))
    return d


def test_toy_planetoid_loads(tmp_path):
    g = load_planetoid(toy_planetoid(tmp_path / "p"), "toy")
    assert g.num_nodes == 5 and g.num_edges == 5 and g.feature_dim == 3 and g.test_mask.sum() == 2


@pytest.mark.parametrize("override, match", [
    ({"x": "features"}, r"ind.toy.x: expected a 2-D feature matrix .* got str"),
    ({"tx": [[1, 2, 3]]}, r"ind.toy.tx: expected a 2-D feature matrix .* got list"),
    ({"allx": np.array(["a", "b"])}, r"ind.toy.allx: expected a 2-D feature matrix .* got ndarray of shape \(2,\)"),
    ({"y": sp.csr_matrix(np.eye(2))}, r"ind.toy.y: expected a 2-D one-hot label array"),
    ({"ty": np.zeros(2)}, r"ind.toy.ty: expected a 2-D one-hot label array"),
    ({"graph": [[0, 1]]}, r"ind.toy.graph: expected a dict of integer vertex -> list of integer neighbours"),
    ({"graph": {0: ["a"]}}, r"ind.toy.graph: expected a dict"),
    ({"graph": {0: 5}}, r"ind.toy.graph: expected a dict"),
    ({"graph": {0: [-1]}}, r"ind.toy.graph: negative vertex id -1"),
    ({"graph": {0: [99]}}, r"ind.toy.graph: vertex ids go up to 99 but there are only 5 feature rows"),
    ({"y": np.eye(2)[[0, 1, 1]]}, r"ind.toy.x: 2 rows but ind.toy.y has 3"),
    ({"tx": sp.csr_matrix(np.ones((2, 4)))}, r"feature columns differ \(ind.toy.x: 3, ind.toy.tx: 4"),
    ({"ty": np.eye(3)[[1, 0]]}, r"label columns differ"),
    ({"test.index": ""}, r"ind.toy.test.index: test ids must be distinct"),
    ({"test.index": "3\n1000000000000\n"}, r"test id 1000000000000 is beyond the 5 vertices"),
    ({"test.index": "3\nfour\n"}, r"ind.toy.test.index: expected one integer per line"),
])
def test_planetoid_wrong_types_and_shapes_are_one_line(tmp_path, override, match):
    d = toy_planetoid(tmp_path / "p", **override)
    with pytest.raises(NetweaveError, match=match) as e:
        load_planetoid(d, "toy")
    one_line(e)


def test_planetoid_part_that_is_not_a_file(tmp_path):
    d = toy_planetoid(tmp_path / "p")
    (d / "ind.toy.ty").unlink()
    (d / "ind.toy.ty").mkdir()
    with pytest.raises(NetweaveError, match="ind.toy.ty: not a regular file"):
        load_planetoid(d, "toy")


def test_npz_pickled_members_of_the_wrong_type(tmp_path):
    np.savez(tmp_path / "w.npz", adj_matrix=np.array("text", dtype=object))
    with pytest.raises(NetweaveError, match="member 'adj_matrix' must be a 2-D sparse matrix, got str"):
        load_npz(tmp_path / "w.npz")
    np.savez(tmp_path / "e.npz", adj_matrix=np.array(shutil.rmtree, dtype=object))  # pickled by name
    with pytest.raises(NetweaveError, match="refused to load shutil.rmtree"):
        load_npz(tmp_path / "e.npz")


def test_npz_truncated_is_one_line(tmp_path):
    np.savez(tmp_path / "t.npz", adj_data=np.ones(1000), adj_indices=np.arange(1000), adj_indptr=np.arange(1001),
             adj_shape=np.array([1000, 1000]))
    data = (tmp_path / "t.npz").read_bytes()
    (tmp_path / "t.npz").write_bytes(data[: len(data) // 2])
    with pytest.raises(NetweaveError, match="not a readable .npz archive") as e:
        load_npz(tmp_path / "t.npz")
    one_line(e)


def test_dev_zero_and_directories_as_datasets(tmp_path):
    with pytest.raises(NetweaveError, match="not a regular file"):
        load_dataset("/dev/zero")
    with pytest.raises(NetweaveError, match="not a regular file"):
        load_dataset("snap:/dev/zero")
    with pytest.raises(NetweaveError, match="not a regular file"):
        load_dataset("npz:/dev/zero")
    with pytest.raises(NetweaveError, match="is a directory; name its edge list files with a glob"):
        load_dataset(f"snap:{tmp_path}")
