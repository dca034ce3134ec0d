"""The host all-reduce baseline against closed forms (Patarasuk and Yuan's ring: every rank sends
2 (N − 1) / N · S; a binomial tree: S up and S down each edge) and a brute-force ring written here."""

import numpy as np
import pytest

from netweave.errors import NetweaveError
from netweave.route.allreduce import allreduce_time_s, link_bytes, ring_edge_bytes
from netweave.topology import load_topology_spec

S = 1e6  # bytes all-reduced


def brute_force_ring(workers: int, size: float) -> np.ndarray:
    """Bytes each rank sends in a reduce-scatter then an all-gather, chunk by chunk (S / N each),
    counted by playing the schedule: rank r sends chunk (r − step) mod N in each of 2 (N − 1) steps."""
    sent = np.zeros(workers)
    have = [{r} for r in range(workers)]  # reduce-scatter: which ranks' values chunk r's holder has summed
    for step in range(workers - 1):
        for r in range(workers):
            sent[r] += size / workers  # one chunk to rank r + 1
        have = [have[r] | have[(r - 1) % workers] for r in range(workers)]
    assert all(len(h) == workers for h in have)  # someone holds every complete chunk
    for step in range(workers - 1):  # all-gather: the complete chunks travel once round
        sent += size / workers
    return sent


@pytest.mark.parametrize("n", [2, 3, 4, 8])
def test_ring_on_a_star_matches_the_closed_form_and_the_schedule(n):
    topo = load_topology_spec(f"star:n={n},gbps=10")
    workers = list(topo.workers)
    loads = link_bytes(topo, workers, S, "ring")
    expect = 2 * (n - 1) / n * S
    assert ring_edge_bytes(n, S) == pytest.approx(expect) == pytest.approx(brute_force_ring(n, S)[0])
    for w in workers:  # each rank's link carries its send up and its predecessor's down
        assert loads[w, "S0"] == pytest.approx(expect) and loads["S0", w] == pytest.approx(expect)
    assert allreduce_time_s(topo, workers, S, "ring") == pytest.approx(expect * 8 / 10e9)
    assert allreduce_time_s(topo, workers, S, "ring", scale=0.01) == pytest.approx(expect * 8 / 10e7)


def test_binomial_tree_root_carries_one_copy_per_child_each_way():
    topo = load_topology_spec("star:n=8,gbps=10")
    workers = list(topo.workers)
    loads = link_bytes(topo, workers, S, "tree")
    # rank 0's children are 1, 2, 4 (i & (i − 1) == 0); rank 4's are 5, 6; rank 6's is 7
    assert loads[workers[0], "S0"] == pytest.approx(3 * S) and loads["S0", workers[0]] == pytest.approx(3 * S)
    assert loads[workers[4], "S0"] == pytest.approx(3 * S)  # 2 children down + its own S up
    assert loads[workers[7], "S0"] == pytest.approx(S)
    assert allreduce_time_s(topo, workers, S, "tree") == pytest.approx(3 * S * 8 / 10e9)


def test_ring_edges_that_share_a_link_share_its_rate():
    # two leaves of two workers each (H0, the PS, hangs off the root): the ring H1 H2 H3 H4 crosses
    # between the leaves twice (H2 -> H3, H4 -> H1), once each way, so each leaf uplink carries one
    # ring edge's bytes per direction and the hosts' own links one each
    topo = load_topology_spec("tree:leaves=2,hosts=2,gbps=10,host_gbps=10-10")
    workers = ["H1", "H2", "H3", "H4"]
    loads = link_bytes(topo, workers, S, "ring")
    edge = ring_edge_bytes(4, S)
    assert set(loads) == {(w, leaf) for w, leaf in zip(workers, "L0 L0 L1 L1".split())} | {
        (leaf, w) for w, leaf in zip(workers, "L0 L0 L1 L1".split())} | {
        ("L0", "R0"), ("R0", "L1"), ("L1", "R0"), ("R0", "L0")}
    assert all(v == pytest.approx(edge) for v in loads.values())


def test_one_worker_moves_nothing_and_unknown_kind_is_named():
    topo = load_topology_spec("star:n=2")
    assert allreduce_time_s(topo, [topo.workers[0]], S) == 0.0
    with pytest.raises(NetweaveError, match="unknown all-reduce 'butterfly'"):
        link_bytes(topo, list(topo.workers), S, "butterfly")


def test_route_reports_ring_and_tree_beside_ina_on_the_same_task():
    """``netweave route --precisions``' summary: the ring and tree baselines of the same workers,
    from the closed form (default model: 100 MB of fp32 gradients, 0.05 s of compute)."""
    from netweave.scenarios import RouteScenario

    r = RouteScenario(topology="star:n=9,gbps=10", algorithm="pahina", workers=8,
                      precisions={"fp16": 8}).run().summary()
    ring = 0.05 + 2 * 7 / 8 * 100e6 * 8 / 10e9
    assert r["ring_iteration_time_s"] == pytest.approx(ring)
    assert r["ring_training_time_s"] == pytest.approx(1000 * ring)
    assert r["speedup_vs_ring"] == pytest.approx(ring / r["iteration_time_s"])
    assert r["tree_iteration_time_s"] > r["ring_iteration_time_s"]  # the tree's root link carries 3 S each way
