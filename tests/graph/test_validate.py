"""The graph validator (graph/validate.py): every rule refuses what it should, in one line naming
the file and the member, and lets every valid graph through unchanged."""

import pickle
import re

import numpy as np
import pytest
import scipy.sparse as sp

from netweave.errors import NetweaveError
from netweave.graph import Graph, from_edges, load_dataset, load_graph
from netweave.graph.npz import load_npz
from netweave.graph.validate import (check_csr, check_csr_bounds, check_features, check_labels, check_mask,
                                     checked_matrix, sparse_features, validate_graph)
from netweave.partition.metis import metis_labels

W = "g.npz"  # the `where` of the direct calls


def refused(match, call, *args, **kwargs) -> str:
    """Assert ``call`` raises one NetweaveError line matching ``match``; returns the line."""
    with pytest.raises(NetweaveError, match=match) as e:
        call(*args, **kwargs)
    assert "\n" not in str(e.value)
    return str(e.value)


@pytest.fixture
def g() -> Graph:
    """A small valid graph with every kind of node data: 6 vertices, 6 edges, dense features."""
    rng = np.random.default_rng(0)
    return from_edges([0, 1, 2, 3, 4, 5, 0], [1, 2, 3, 4, 5, 0, 3], 6,
                      features=rng.normal(size=(6, 3)).astype(np.float32), labels=np.array([0, 1, 2, 0, 1, 2]),
                      train_mask=np.array([1, 1, 0, 0, 0, 0], bool), val_mask=np.array([0, 0, 1, 1, 0, 0], bool),
                      test_mask=np.array([0, 0, 0, 0, 1, 1], bool), name="six")


def csr(g: Graph):
    return g.indptr.copy(), g.indices.copy()


# -- the CSR ----------------------------------------------------------------------------------------

def test_a_valid_graph_passes_unchanged(g):
    assert validate_graph(g, W) is g
    indptr, indices = check_csr(g.indptr, g.indices, W)
    assert indptr is g.indptr and indices is g.indices


def test_empty_graphs_pass():
    check_csr(np.zeros(1, np.int64), np.zeros(0, np.int32), W)  # no vertices
    indptr, indices = check_csr(np.zeros(5, np.int64), np.zeros(0, np.int64), W)  # 4 isolated vertices
    assert indices.dtype == np.int32


def test_indptr_rules(g):
    indptr, indices = csr(g)
    refused(r"^g.npz: member 'indptr' must be a 1-D integer array, got float64", check_csr, indptr.astype(float), indices, W)
    refused(r"member 'indptr' must be a 1-D integer array, got int64 of shape \(1, 7\)", check_csr, indptr[None], indices, W)
    refused(r"member 'indptr' is empty", check_csr, indptr[:0], indices[:0], W)
    bad = indptr.copy()
    bad[0] = -100
    refused(r"member 'indptr' starts at -100, not 0", check_csr, bad, indices, W)
    bad = indptr.copy()
    bad[2] = 0  # 0, 3, 0, 7, ...
    refused(r"member 'indptr' decreases at row 1 \(3 then 0\)", check_csr, bad, indices, W)
    bad = indptr.copy()
    bad[-1] += 1000
    refused(r"member 'indptr' ends at 1014 but member 'indices' holds 14 entries", check_csr, bad, indices, W)
    refused(r"member 'indptr' ends at 14 but member 'indices' holds 13 entries", check_csr, indptr, indices[:-1], W)


def test_indices_rules(g):
    indptr, indices = csr(g)
    refused(r"member 'indices' must be a 1-D integer array, got float32", check_csr, indptr, indices.astype(np.float32), W)
    for value in (-5, 6, 10**6, -(2**40)):
        bad = indices.astype(np.int64)
        bad[3] = value
        refused(rf"member 'indices' holds vertex id {value} at position 3, outside \[0, 6\); re-create the file",
                check_csr, indptr, bad, W)
    wide = check_csr(indptr, indices.astype(np.uint64), W)[1]  # unsigned and wide ids are fine, narrowed losslessly
    assert wide.dtype == np.int32 and (wide == indices).all()


def _edit(g: Graph, row: int, new_row: list[int]):
    """The CSR of ``g`` with row ``row`` replaced by ``new_row`` (indptr adjusted)."""
    rows = [list(g.indices[g.indptr[v]:g.indptr[v + 1]]) for v in range(g.num_nodes)]
    rows[row] = new_row
    indptr = np.zeros(g.num_nodes + 1, np.int64)
    np.cumsum([len(r) for r in rows], out=indptr[1:])
    return indptr, np.array(sum(rows, []), np.int32)


def test_canonical_form_rules(g):
    # row 0 is [1, 3, 5]
    refused(r"member 'indices' has a self-loop at vertex 0", check_csr, *_edit(g, 0, [0, 1, 3, 5]), W)
    refused(r"member 'indices' lists neighbour 3 of vertex 0 twice \(a duplicate edge\)", check_csr, *_edit(g, 0, [1, 3, 3, 5]), W)
    refused(r"member 'indices' is not sorted in row 0 \(neighbour 1 after a larger one\)", check_csr, *_edit(g, 0, [3, 1, 5]), W)
    line = refused(r"member 'indices' is not symmetric: edge 0 -> 2 has no 2 -> 0", check_csr, *_edit(g, 0, [1, 2, 3, 5]), W)
    assert "graph.from_edges builds one from any edge list" in line
    refused(r"is not symmetric: edge 1 -> 0 has no 0 -> 1", check_csr, *_edit(g, 0, [3, 5]), W)  # an edge missing one way
    for args in (_edit(g, 0, [0, 1, 3, 5]), _edit(g, 0, [3, 1, 5]), _edit(g, 0, [1, 2, 3, 5])):
        check_csr(*args, W, canonical=False)  # only the bounds


def test_symmetry_is_not_fooled_by_equal_in_and_out_degrees():
    # the directed cycle 0 -> 1 -> 2 -> 0: every vertex has in-degree = out-degree = 1
    refused(r"is not symmetric: edge 0 -> 1 has no 1 -> 0", check_csr, np.array([0, 1, 2, 3]), np.array([1, 2, 0]), W)
    # both directions of 0-1 and 1-2, but vertex 1 lists 0 twice where 2 should be
    refused(r"lists neighbour 0 of vertex 1 twice", check_csr, np.array([0, 1, 3, 4]), np.array([1, 0, 0, 1]), W)


def test_symmetry_agrees_with_scipy_on_random_graphs():
    rng = np.random.default_rng(1)
    for trial in range(30):
        n = int(rng.integers(2, 40))
        g = from_edges(rng.integers(0, n, 3 * n), rng.integers(0, n, 3 * n), n)
        check_csr(g.indptr, g.indices, W)
        if g.indices.size == 0:
            continue
        # drop one directed copy: asymmetric, still sorted and simple
        drop = int(rng.integers(g.indices.size))
        keep = np.ones(g.indices.size, bool)
        keep[drop] = False
        rows = g.edge_sources()
        indptr = np.zeros(n + 1, np.int64)
        np.cumsum(np.bincount(rows[keep], minlength=n), out=indptr[1:])
        a = sp.csr_array((np.ones(keep.sum()), g.indices[keep], indptr), shape=(n, n))
        assert (a != a.T).nnz > 0
        refused("is not symmetric", check_csr, indptr, g.indices[keep], W)


# -- features ---------------------------------------------------------------------------------------

@pytest.mark.parametrize("value, shown", [(np.nan, "nan"), (np.inf, "inf"), (-np.inf, "-inf"), (1e39, "1e+39")])
def test_dense_features_must_be_finite_float32(g, value, shown):
    f = g.features.astype(np.float64)
    f[4, 2] = value
    refused(rf"^g.npz: member 'features' holds {re.escape(shown)} at vertex 4, column 2; features must be finite float32",
            check_features, f, 6, W)


def test_dense_feature_shapes_and_types(g):
    refused(r"member 'features' has shape \(5, 3\); expected \(6, F\)", check_features, g.features[:5], 6, W)
    refused(r"member 'features' has shape \(18,\)", check_features, g.features.ravel(), 6, W)
    refused(r"member 'features' must hold numbers, got <U1", check_features, np.full((6, 2), "a"), 6, W)
    assert check_features(np.ones((6, 2), np.int8), 6, W).dtype == np.int8  # integers are fine, kept as they are
    assert check_features(np.zeros((6, 0), np.float32), 6, W).shape == (6, 0)


def _sparse_members():
    f = sp.csr_array(np.array([[1, 0, 2], [0, 0, 3], [4, 5, 0]], np.float32))
    return dict(data=f.data.copy(), indices=f.indices.copy(), indptr=f.indptr.copy(), shape=np.array(f.shape))


def test_sparse_feature_rules():
    ok = sparse_features(**_sparse_members(), n=3, where=W)
    assert ok.shape == (3, 3) and ok.toarray()[2, 1] == 5
    cases = [
        ({"indices": np.array([0, 2, 2, 0, 10**7])}, r"member 'feat_indices' holds column 10000000 at position 4, outside \[0, 3\)"),
        ({"indices": np.array([0, -1, 2, 0, 1])}, r"member 'feat_indices' holds column -1 at position 1"),
        ({"indptr": np.array([0, 2, 1, 5])}, r"member 'feat_indptr' decreases at row 1"),
        ({"indptr": np.array([0, 2, 3, 9])}, r"member 'feat_indptr' ends at 9 but member 'feat_indices' holds 5"),
        ({"indptr": np.array([-1, 2, 3, 5])}, r"member 'feat_indptr' starts at -1"),
        ({"indptr": np.array([0, 2, 5])}, r"member 'feat_indptr' has shape \(3,\) for 3 rows; expected \(4,\)"),
        ({"shape": np.array([4, 3])}, r"member 'feat_shape' says 4 rows for 3 vertices"),
        ({"shape": np.array([3, -1])}, r"member 'feat_shape' must be two non-negative integers"),
        ({"shape": np.array([3.0, 3.0])}, r"member 'feat_shape' must be two non-negative integers"),
        ({"data": np.ones(4, np.float32)}, r"member 'feat_data' holds 4 values but member 'feat_indices' 5 ids"),
        ({"data": np.array([1, 2, np.nan, 4, 5], np.float32)}, r"member 'feat_data' holds nan at position 2"),
        ({"data": np.array(["a"] * 5)}, r"member 'feat_data' must hold numbers"),
    ]
    for change, match in cases:
        refused(match, sparse_features, **(_sparse_members() | change), n=3, where=W)


def test_scipy_matrices_from_pickles_are_checked_before_scipy_reads_them():
    fix = "re-download it"
    m = sp.csr_matrix(np.eye(3, dtype=np.float32))
    m.indices = np.array([0, 1, 10**7], np.int32)  # what an unpickled matrix may carry
    refused(r"x: the matrix \(indices\) holds column 10000000 at position 2", checked_matrix, m, "x", "the matrix", fix)
    c = sp.csc_matrix(np.eye(3, dtype=np.float32))
    c.indices = np.array([0, 1, 7], np.int32)
    refused(r"the matrix \(indices\) holds row 7 at position 2, outside \[0, 3\)", checked_matrix, c, "x", "the matrix", fix)
    o = sp.coo_matrix(np.eye(3, dtype=np.float32))
    if hasattr(o, "coords"):  # scipy >= 1.13
        o.coords = (np.array([0, 1, 9], np.int32), o.coords[1])
    else:
        o.row = np.array([0, 1, 9], np.int32)
    refused(r"the matrix \(row\) holds row 9 at position 2", checked_matrix, o, "x", "the matrix", fix)
    lil = sp.lil_matrix((2, 2), dtype=np.float32)
    lil.rows[0], lil.data[0] = [5], [1.0]
    refused(r"the matrix \(indices\) holds column 5", checked_matrix, lil, "x", "the matrix", fix)
    odd = sp.csr_matrix(np.eye(2))
    odd.indptr = "abc"
    refused(r"the matrix \(indptr\)", checked_matrix, odd, "x", "the matrix", fix)
    refused(r"must be a 2-D matrix", checked_matrix, [1, 2], "x", "the matrix", fix)
    # round trips of valid matrices are the same matrix, whatever the format
    dense = np.array([[0, 1.5], [2, 0]], np.float32)
    for value in (dense, sp.csr_matrix(dense), sp.csc_array(dense), sp.coo_matrix(dense), sp.lil_matrix(dense)):
        value = pickle.loads(pickle.dumps(value))
        assert (checked_matrix(value, "x", "m", fix).toarray() == dense).all()


# -- labels and masks -------------------------------------------------------------------------------

def test_label_rules():
    assert check_labels(np.array([0, 2, 1]), 3, W).dtype == np.int64
    assert check_labels(np.array([0.0, 2.0, 1.0]), 3, W).tolist() == [0, 2, 1]  # whole floats are class ids
    assert check_labels(np.array([True, False, True]), 3, W).tolist() == [1, 0, 1]
    refused(r"member 'labels' holds 1.5 at vertex 1; class ids are whole numbers", check_labels, np.array([0, 1.5, 1]), 3, W)
    refused(r"member 'labels' holds nan at vertex 2", check_labels, np.array([0, 1, np.nan]), 3, W)
    refused(r"member 'labels' holds -1 at vertex 0; class ids are 0, 1, 2", check_labels, np.array([-1, 1, 1]), 3, W)
    line = refused(r"member 'labels' holds class 1000000000 at vertex 1, but the graph has 3 vertices and so at most 3 "
                   r"classes", check_labels, np.array([0, 10**9, 1]), 3, W)
    assert "number classes densely from 0" in line
    refused(r"holds class 3 at vertex 0", check_labels, np.array([3, 0, 0]), 3, W)  # max label < n
    refused(r"member 'labels' has shape \(2,\); expected \(3,\)", check_labels, np.array([0, 1]), 3, W)
    refused(r"member 'labels' must hold integer class ids, got <U1", check_labels, np.array(["a", "b", "c"]), 3, W)


def test_mask_rules():
    assert check_mask(np.array([True, False]), 2, W, "member 'train_mask'").dtype == bool
    m = check_mask(np.array([1, 0], np.uint8), 2, W, "member 'train_mask'")
    assert m.dtype == bool and m.tolist() == [True, False]
    refused(r"member 'val_mask' holds 2 at vertex 1; a mask is boolean", check_mask, np.array([0, 2]), 2, W, "member 'val_mask'")
    refused(r"member 'test_mask' must be boolean .* got float64", check_mask, np.array([0.0, 1.0]), 2, W, "member 'test_mask'")
    refused(r"member 'train_mask' has shape \(3,\); expected \(2,\)", check_mask, np.ones(3, bool), 2, W, "member 'train_mask'")


def test_validate_graph_converts_losslessly_and_names_members(g):
    h = g.with_(labels=g.labels.astype(np.float32), train_mask=g.train_mask.astype(np.int8),
                indices=g.indices.astype(np.int64))
    v = validate_graph(h, W)
    assert v.labels.dtype == np.int64 and v.train_mask.dtype == bool and v.indices.dtype == np.int32
    assert (v.labels == g.labels).all() and (v.train_mask == g.train_mask).all()
    refused(r"^data/: target.csv holds class 9 at vertex 0.*; fix it$", validate_graph,
            g.with_(labels=np.array([9, 0, 0, 0, 0, 0])), "data/", {"labels": "target.csv"}, fix="fix it")
    bad = g.features.copy()
    bad[0, 0] = np.nan
    refused(r"member 'features' holds nan at vertex 0, column 0", validate_graph, g.with_(features=bad), W)
    refused(r"has a self-loop", validate_graph, g.with_(indices=_edit(g, 0, [0, 1, 3, 5])[1],
                                                        indptr=_edit(g, 0, [0, 1, 3, 5])[0]), W)
    validate_graph(g.with_(indices=_edit(g, 0, [0, 1, 3, 5])[1], indptr=_edit(g, 0, [0, 1, 3, 5])[0]), W,
                   canonical=False)


# -- at load ----------------------------------------------------------------------------------------

def _save(path, g: Graph, **members):
    arrays = {"indptr": g.indptr, "indices": g.indices, "name": np.array(g.name), "features": g.features,
              "labels": g.labels, "train_mask": g.train_mask} | members
    np.savez(path, **{k: v for k, v in arrays.items() if v is not None})


@pytest.mark.parametrize("members, match", [
    ({"indices": np.array([1, 3, 5, 0, 2, 1, 3, 0, 2, 4, 3, 5, 0, 10**6], np.int32)},
     r"member 'indices' holds vertex id 1000000 at position 13"),
    ({"indices": np.array([1, 3, 5, 0, 2, 1, 3, 0, 2, 4, 3, 5, 0, -4])}, r"member 'indices' holds vertex id -4"),
    ({"indptr": np.array([0, 3, 5, 7, 10, 12, 1014])}, r"member 'indptr' ends at 1014"),
    ({"indptr": np.array([-100, 3, 5, 7, 10, 12, 14])}, r"member 'indptr' starts at -100"),
    ({"indptr": np.arange(7), "indices": np.arange(6)}, r"member 'indices' has a self-loop at vertex 0"),
    ({"indices": np.array([1, 3, 5, 0, 2, 1, 3, 0, 2, 4, 3, 5, 0, 0])}, r"member 'indices' lists neighbour 0 of vertex 5 twice"),
    ({"labels": np.array([0, 1, 2, 0, 1, 1e9])}, r"member 'labels' holds class 1000000000 at vertex 5"),
    ({"labels": np.array([0, 1, 2, 0, 1, 1.5])}, r"member 'labels' holds 1.5 at vertex 5"),
    ({"train_mask": np.array([0, 1, 2, 0, 0, 0])}, r"member 'train_mask' holds 2 at vertex 2"),
    ({"train_mask": np.array([0.0, 1, 1, 0, 0, 0])}, r"member 'train_mask' must be boolean"),
    ({"features": np.full((6, 2), np.inf, np.float32)}, r"member 'features' holds inf at vertex 0, column 0"),
    ({"features": None, "feat_data": np.ones(2, np.float32), "feat_indices": np.array([0, 9]),
      "feat_indptr": np.array([0, 1, 2, 2, 2, 2, 2]), "feat_shape": np.array([6, 3])},
     r"member 'feat_indices' holds column 9 at position 1, outside \[0, 3\)"),
    ({"feat_data": np.ones(1, np.float32)}, r"holds both dense 'features' and sparse feat_data"),
    ({"features": None, "feat_data": np.ones(1, np.float32)}, r"sparse features without feat_indices, feat_indptr, feat_shape"),
    ({"name": np.arange(3)}, r"member 'name' must be one string"),
])
def test_saved_graph_members_are_checked_at_load(tmp_path, g, members, match):
    _save(tmp_path / "g.npz", g, **members)
    line = refused(match, load_graph, tmp_path / "g.npz")
    assert line.startswith(f"{tmp_path / 'g.npz'}: ")
    refused(match, load_dataset, str(tmp_path / "g.npz"))  # and through the dataset spec


def test_saved_graphs_load_unchanged(tmp_path, g):
    g.save(tmp_path / "g.npz")
    h = load_graph(tmp_path / "g.npz")
    for key in ("indptr", "indices", "features", "labels", "train_mask", "val_mask", "test_mask"):
        a, b = getattr(g, key), getattr(h, key)
        assert a.dtype == b.dtype and (a == b).all(), key
    sparse = g.with_(features=sp.csr_array(g.features))
    sparse.save(tmp_path / "s.npz")
    assert (load_graph(tmp_path / "s.npz").features.toarray() == g.features).all()
    cora = load_dataset("cora")  # the bundled graph passes every rule
    assert cora.num_nodes == 2708 and cora.num_edges == 5278 and cora.num_classes == 7


def test_gnn_benchmark_files_are_checked(tmp_path):
    adj = sp.csr_array(np.array([[0, 1, 0], [1, 0, 1], [0, 1, 0]], np.float32))
    flat = dict(adj_data=adj.data, adj_indices=adj.indices, adj_indptr=adj.indptr, adj_shape=adj.shape)
    np.savez(tmp_path / "nan.npz", **flat, attr_matrix=np.array([[1, 2], [np.nan, 0], [0, 0]], np.float32))
    refused(r"nan.npz: member 'attr_matrix' holds nan at vertex 1, column 0", load_npz, tmp_path / "nan.npz")
    np.savez(tmp_path / "half.npz", **flat, labels=np.array([0, 1.5, 1]))
    refused(r"half.npz: member 'labels' holds 1.5 at vertex 1", load_npz, tmp_path / "half.npz")
    np.savez(tmp_path / "col.npz", **(flat | {"adj_indices": np.array([1, 0, 2, 7], np.int32)}))
    refused(r"col.npz: member 'adj_indices' holds column 7 at position 3, outside \[0, 3\)", load_npz, tmp_path / "col.npz")
    np.savez(tmp_path / "ok.npz", **flat, labels=np.array([2.0, 5.0, 2.0]))  # whole floats: remapped as before
    assert load_npz(tmp_path / "ok.npz").labels.tolist() == [0, 1, 0]


def test_generated_graphs_pass_and_keep_their_arrays():
    g = load_dataset("rmat:n=300,m=1200,feat=4,classes=3")
    check_csr(g.indptr, g.indices, "rmat")  # the full canonical form, though the load skips its pass
    assert g.labels.dtype == np.int64 and g.train_mask.dtype == bool


# -- METIS's own guard ------------------------------------------------------------------------------

@pytest.mark.parametrize("bits", [64, 32])
def test_metis_refuses_arrays_out_of_bounds_before_c_reads_them(g, bits):
    if bits == 32:
        pytest.importorskip("ctypes")
        from netweave.partition.metis32 import metis32_library
        try:
            metis32_library()
        except NetweaveError:
            pytest.skip("no 32-bit system METIS")
    indptr, indices = csr(g)
    bad = indices.copy()
    bad[0] = 10**6
    refused(r"METIS's input: the neighbour array holds vertex id 1000000 at position 0", metis_labels, indptr, bad, 2, bits=bits)
    bad = indptr.copy()
    bad[-1] = 10**6
    refused(r"METIS's input: the row-pointer array ends at 1000000", metis_labels, bad, indices, 2, bits=bits)
    refused(r"METIS's input: \(3,\) vertex weights for 6 vertices", metis_labels, indptr, indices, 2,
            vertex_weights=np.ones(3, np.int64), bits=bits)
    refused(r"METIS's input: \(3,\) target part weights for 2 parts", metis_labels, indptr, indices, 2,
            target_weights=[0.2, 0.3, 0.5], bits=bits)
    assert metis_labels(indptr, indices, 2, bits=bits).shape == (6,)
    check_csr_bounds(indptr, indices, "x")
