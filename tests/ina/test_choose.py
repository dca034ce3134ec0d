"""The per-layer choice of SwitchGNN's blocking: the cost model against the simulator and a hand
calculation, and the choice against the baselines on cases where the answer is known."""

import numpy as np
import pytest

from netweave.graph import load_dataset, rmat
from netweave.ina import boundary_relation
from netweave.ina.choose import PathModel, choose_plan, price
from netweave.ina.replay import Replay
from netweave.ina.plan import ina_plan
from netweave.partition import metis_partition, random_partition
from netweave.sim import SimConfig, sim_network, simulate
from netweave.topology import load_topology_spec


def _net(m, gbps=100, latency_us=2):
    return sim_network(load_topology_spec(f"star:n={m},gbps={gbps},latency_us={latency_us}"))


def test_completion_by_hand():
    """Two hosts at 1 GB/s, 1 kB messages, 1 µs links: L = 2 µs + 2 µs, S = 2 µs."""
    net = _net(2, gbps=8, latency_us=1)
    model = PathModel.of(net, 1000)
    assert model.latency_s == pytest.approx(4e-6) and model.barrier_s == pytest.approx(2e-6)
    # block 0: host 0 sends 3, host 1 receives 3 (drained at 3 µs + queueing); block 1: 1 each way
    replay = Replay(up=np.array([[3, 0], [1, 1]]), down=np.array([[0, 3], [1, 1]]), peak_aggregators=np.zeros(2),
                    unaggregated=np.zeros(2), drained_s=np.array([[0, 4e-6], [2e-6, 2e-6]]))
    d0, d1 = 4e-6, 2e-6  # max(3 µs of sending, 4 µs drained); max(1 µs, 2 µs)
    assert model.completion(replay, 1000, overlap=False) == pytest.approx(d0 + 4e-6 + 2e-6 + d1 + 4e-6)
    # overlapped: host 0 starts block 1 at 3 µs, host 1 at 0; host 1's link has block 0 until 4 µs, then 1 µs more
    assert model.completion(replay, 1000, overlap=True) == pytest.approx(5e-6 + 4e-6)


@pytest.fixture(scope="module")
def dense():
    """A dense graph over 16 workers: best effort overflows, so blocks pay (reddit-like in small)."""
    g = rmat(2000, 120_000, seed=1)
    return boundary_relation(g, random_partition(g, 16, seed=0)), _net(16)


@pytest.mark.parametrize("blocking, overlap", [("single", False), ("destination", False), ("hybrid", False),
                                               ("multilevel", False), ("paper", False), ("destination", True),
                                               ("multilevel", True)])
def test_prediction_follows_the_simulator(dense, blocking, overlap):
    """Traffic exactly and completion within 5 % on a star without loss, every blocking."""
    rel, net = dense
    plan = ina_plan(rel, "switchgnn", 512, 200 * 4 * 128, "gamr", 0, blocking=blocking, overlap=overlap,
                    forward=blocking != "paper")
    assert plan.overlap == overlap
    traffic, completion = price(plan, PathModel.of(net, 512), 200 * 4 // (2 if overlap else 1))
    sim = simulate(plan, net, SimConfig())
    assert traffic == sim.traffic_bytes
    assert completion == pytest.approx(sim.completion_time_s, rel=0.05)


def test_the_choice_is_the_cheapest_candidate_and_beats_both_baselines(dense):
    rel, net = dense
    memory = 200 * 4 * 128
    choice = choose_plan(rel, net, 512, memory, overlap=(False,))
    live = [c for c in choice.candidates if not c.pruned]
    assert {c.blocking for c in choice.candidates} >= {"host", "single", "multicast", "destination"}
    baselines = [c for c in live if c.blocking == "host" or c.is_strawman]
    assert len(baselines) == 2
    good = [c for c in live if c.traffic_bytes <= min(b.traffic_bytes for b in baselines)
            and c.completion_s <= min(b.completion_s for b in baselines)]
    assert choice.chosen in good and choice.chosen.completion_s <= min(c.completion_s for c in good) * 1.01
    assert choice.summary()["blocking"] == choice.chosen.blocking and len(choice.summary()["candidates"]) == len(choice.candidates)
    assert price(choice.plan, PathModel.of(net, 512), 200 * 4) == (choice.chosen.traffic_bytes, choice.chosen.completion_s)
    got = simulate(choice.plan, net, SimConfig())
    host = simulate(ina_plan(rel, "host", 512), net, SimConfig())
    straw = simulate(ina_plan(rel, "straw", 512, memory, "random", 0), net, SimConfig())
    assert got.traffic_bytes < min(host.traffic_bytes, straw.traffic_bytes)
    assert got.completion_time_s < min(host.completion_time_s, straw.completion_time_s)


def test_a_sparse_graph_stays_in_one_block():
    """cora fits under GAMR in a seventh of its demand: no block, no barrier."""
    g = load_dataset("cora")
    rel = boundary_relation(g, metis_partition(g, 8, seed=0))
    demand = rel.destinations().size * 45 * 128
    choice = choose_plan(rel, _net(8), 5732, demand // 5)
    assert choice.plan.num_blocks == 1 and choice.chosen.blocking in ("single", "destination", "hybrid", "multilevel")
    paper = ina_plan(rel, "switchgnn", 5732, demand // 5, "gamr", 0, blocking="paper")
    assert paper.num_blocks > 1  # sized by demand, the paper's rule needs blocks


def test_pruned_candidates_cannot_win():
    """A candidate stopped early would have needed more blocks than the best completion allows."""
    g = load_dataset("cora")
    rel = boundary_relation(g, metis_partition(g, 8, seed=0))
    net = _net(8)
    choice = choose_plan(rel, net, 5732, 45 * 128 * 6)
    model = PathModel.of(net, 5732)
    for c in choice.candidates:
        if c.pruned:
            full = ina_plan(rel, "switchgnn", 5732, 45 * 128 * 6, "gamr", 0, blocking=c.blocking, overlap=c.overlap)
            assert price(full, model, 6 * 45 // (2 if c.overlap else 1))[1] > choice.chosen.completion_s


@pytest.mark.parametrize("blocking", ["paper", "multilevel", "hybrid", "destination"])
@pytest.mark.parametrize("overlap", [False, True])
def test_the_pruning_bound_is_below_the_prediction(dense, blocking, overlap):
    """The bound that stops a METIS blocking early, taken over a finished plan's blocks, never
    exceeds the plan's predicted completion (else pruning could drop the best candidate)."""
    rel, net = dense
    model = PathModel.of(net, 512)
    plan = ina_plan(rel, "switchgnn", 512, 200 * 4 * 128, "gamr", 0, blocking=blocking, overlap=overlap,
                    forward=blocking != "paper")
    assert plan.num_blocks > 2
    bound = model.bound(rel.parts, 512, np.inf, plan.overlap)
    kept = np.ones(plan.dst.size, bool) if plan.forward is None else ~plan.forward[plan.dst]
    sets = [bound.sending_s(np.unique(plan.src[kept & (plan.block == b)])) for b in range(plan.num_blocks)]
    predicted = price(plan, model, 200 * 4 // (2 if overlap else 1))[1]
    assert 0 < bound.completion_s(sets) <= predicted


def test_a_metis_blocking_that_cannot_win_stops_after_its_first_split(dense):
    from netweave.ina.blocks import TooManyBlocks

    rel, net = dense
    model = PathModel.of(net, 512)
    full = ina_plan(rel, "switchgnn", 512, 200 * 4 * 128, "gamr", 0, blocking="multilevel", forward=True)
    predicted = price(full, model, 200 * 4)[1]
    with pytest.raises(TooManyBlocks):
        ina_plan(rel, "switchgnn", 512, 200 * 4 * 128, "gamr", 0, blocking="multilevel", forward=True,
                 bound=model.bound(rel.parts, 512, predicted / 4, False))
    same = ina_plan(rel, "switchgnn", 512, 200 * 4 * 128, "gamr", 0, blocking="multilevel", forward=True,
                    bound=model.bound(rel.parts, 512, predicted, False))
    assert np.array_equal(same.block, full.block)


def test_metis_blockings_are_skipped_beyond_their_size_limit(dense, monkeypatch):
    import netweave.ina.choose as choose

    rel, net = dense
    monkeypatch.setattr(choose, "METIS_MAX_CROSS_EDGES", rel.dst.size - 1)
    choice = choose_plan(rel, net, 512, 200 * 4 * 128)
    skipped = [c for c in choice.candidates if c.skipped]
    assert {(c.blocking, c.overlap) for c in skipped} == {("hybrid", False), ("hybrid", True),
                                                         ("multilevel", False), ("multilevel", True)}
    assert all(c.pruned and c.completion_s is None and "cross edges" in c.summary()["skipped"] for c in skipped)
    assert choice.chosen.blocking not in ("hybrid", "multilevel") and not choice.chosen.skipped
