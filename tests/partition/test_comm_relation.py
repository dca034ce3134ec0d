"""CommRelation and partition statistics against brute-force computations on small graphs."""

import numpy as np
import pytest

from netweave.graph import Graph, load_dataset
from netweave.partition import comm_relation, partition_stats, random_partition


def neighbours(g: Graph, v: int) -> list[int]:
    return g.indices[g.indptr[v]:g.indptr[v + 1]].tolist()


@pytest.mark.parametrize("k", [2, 3, 5])
def test_send_sets_match_brute_force(small_graph, k):
    g = small_graph
    p = random_partition(g, k, seed=k)
    comm = comm_relation(g, p)
    for i in range(k):
        for j in range(k):
            expect = sorted(u for u in range(g.num_nodes) if p.parts[u] == i and i != j
                            and any(p.parts[v] == j for v in neighbours(g, u)))
            assert comm.send(i, j).tolist() == expect
        assert comm.local(i).tolist() == [u for u in range(g.num_nodes) if p.parts[u] == i]
        halo = comm.halo(i)
        assert set(halo.tolist()) == {v for u in comm.local(i) for v in neighbours(g, u) if p.parts[v] != i}
        assert (np.diff(p.parts[halo]) >= 0).all()  # grouped by owner


@pytest.mark.parametrize("k", [2, 4])
def test_local_graph_reproduces_neighbourhoods(small_graph, k):
    g = small_graph
    p = random_partition(g, k, seed=0)
    comm = comm_relation(g, p)
    for j in range(k):
        lg = comm.local_graph(g, j)
        assert lg.num_local == (p.parts == j).sum()
        assert (lg.indices >= 0).all() and lg.indices.max(initial=-1) < lg.global_ids.size
        for row, u in enumerate(lg.global_ids[:lg.num_local]):
            got = lg.global_ids[lg.indices[lg.indptr[row]:lg.indptr[row + 1]]]
            assert got.tolist() == neighbours(g, u)


def test_stats_match_brute_force(small_graph):
    g = small_graph
    k, fb = 3, 512
    p = random_partition(g, k, seed=7)
    comm = comm_relation(g, p)
    s = partition_stats(g, p, comm, fb).summary()
    edges = {(min(u, v), max(u, v)) for u in range(g.num_nodes) for v in neighbours(g, u)}
    cut = sum(p.parts[u] != p.parts[v] for u, v in edges)
    needers = {u: {p.parts[v] for v in neighbours(g, u)} - {p.parts[u]} for u in range(g.num_nodes)}
    copies = sum(len(w) for w in needers.values())
    assert s["edge_cut"] == cut
    assert s["boundary_vertices"] == sum(1 for w in needers.values() if w)
    assert s["host_exchange_bytes"] == copies * fb
    assert s["replication_factor"] == pytest.approx((g.num_nodes + copies) / g.num_nodes)
    assert s["vertex_balance"] == pytest.approx(p.sizes().max() / (g.num_nodes / k))
    assert sum(s["halo_sizes"]) == copies and sum(s["part_sizes"]) == g.num_nodes


def test_volume_matrix_is_pairwise_counts():
    g = load_dataset("cora")
    p = random_partition(g, 4, seed=0)
    comm = comm_relation(g, p)
    vol = comm.volume()
    assert np.diag(vol).sum() == 0
    assert all(vol[i, j] == comm.send(i, j).size for i in range(4) for j in range(4))
