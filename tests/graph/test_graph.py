import numpy as np
import pytest
import scipy.sparse as sp

from netweave.errors import NetweaveError
from netweave.graph import Graph, from_edges, load_graph
from netweave.graph.csr import induced_subgraph, row_positions
from netweave.graph.graph import remap_ids, sorted_unique


def test_from_edges_symmetrises_dedupes_and_drops_self_loops():
    g = from_edges([0, 1, 1, 2, 2, 3], [1, 0, 2, 2, 1, 0], 5)
    assert g.num_nodes == 5 and g.num_edges == 3  # {0,1}, {1,2}, {0,3}
    dense = sp.csr_array((np.ones(g.indices.size), g.indices, g.indptr), shape=(5, 5)).toarray()
    assert (dense == dense.T).all() and dense.trace() == 0
    assert dense[0, 1] == dense[1, 2] == dense[0, 3] == 1
    assert g.degrees.tolist() == [2, 2, 1, 1, 0]
    assert g.indices.dtype == np.int32 and g.indptr.dtype == np.int64
    for v in range(5):  # rows sorted
        row = g.indices[g.indptr[v]:g.indptr[v + 1]]
        assert (np.diff(row) > 0).all()


def test_from_edges_rejects_out_of_range_and_mismatched_arrays():
    with pytest.raises(NetweaveError, match="out of range"):
        from_edges([0, 5], [1, 2], 5)
    with pytest.raises(NetweaveError, match="differ in length"):
        from_edges([0, 1], [1], 5)


def test_stats_and_roundtrip(tmp_path):
    rng = np.random.default_rng(0)
    feats = sp.random_array((6, 4), density=0.5, random_state=0, dtype=np.float32).tocsr()
    g = from_edges([0, 1, 2], [1, 2, 3], 6, features=feats, labels=np.array([0, 1, 1, 2, 0, 1]),
                   train_mask=np.array([1, 0, 0, 0, 0, 1], bool), name="t")
    s = g.stats()
    assert s["num_nodes"] == 6 and s["num_edges"] == 3 and s["feature_dim"] == 4 and s["num_classes"] == 3
    assert s["isolated_nodes"] == 2 and s["degree_max"] == 2 and s["num_train"] == 2
    g.save(tmp_path / "g.npz")
    h = load_graph(tmp_path / "g.npz")
    assert np.array_equal(h.indptr, g.indptr) and np.array_equal(h.indices, g.indices)
    assert np.array_equal(h.dense_features(), g.dense_features()) and h.name == "t"
    dense = g.with_(features=rng.standard_normal((6, 3)).astype(np.float32))
    dense.save(tmp_path / "d.npz")
    assert np.array_equal(load_graph(tmp_path / "d.npz").features, dense.features)


def test_sorted_unique_and_remap():
    x = np.array([5, 1, 5, 3, 1], dtype=np.int64)
    assert sorted_unique(x).tolist() == [1, 3, 5]
    assert sorted_unique(np.empty(0, np.int64)).size == 0
    s, d, ids = remap_ids(np.array([100, 7]), np.array([7, -3]))
    assert ids.tolist() == [-3, 7, 100] and s.tolist() == [2, 1] and d.tolist() == [1, 0]


def test_row_positions_and_induced_subgraph(small_graph: Graph):
    g = small_graph
    rows = np.array([5, 0, 17])
    pos, ptr = row_positions(g.indptr, rows)
    expect = np.concatenate([g.indices[g.indptr[r]:g.indptr[r + 1]] for r in rows])
    assert np.array_equal(g.indices[pos], expect) and ptr[-1] == expect.size
    verts = np.arange(0, 60, 2)
    sub_ptr, sub_idx = induced_subgraph(g.indptr, g.indices, verts)
    keep = set(verts.tolist())
    for i, v in enumerate(verts):
        nb = [u // 2 for u in g.indices[g.indptr[v]:g.indptr[v + 1]] if u in keep]
        assert sub_idx[sub_ptr[i]:sub_ptr[i + 1]].tolist() == nb
