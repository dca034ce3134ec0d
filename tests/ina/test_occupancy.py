"""The occupancy replay against two things it does not share code with: the strawman's traffic
function and a plain-Python sweep of when each aggregator is open."""

import numpy as np
import pytest

from netweave.graph import load_dataset, rmat
from netweave.ina import boundary_relation, interleave, straw_traffic
from netweave.ina.occupancy import edge_set_peak
from netweave.ina.replay import plan_replay
from netweave.ina.orders import block_orders
from netweave.ina.plan import ina_plan
from netweave.partition import metis_partition, random_partition

F = 64 * 4  # two aggregators per destination


@pytest.fixture(scope="module", params=["cora", "rmat"])
def rel(request):
    g = load_dataset("cora") if request.param == "cora" else rmat(1500, 9000, seed=2)
    parts = metis_partition(g, 8, seed=0) if request.param == "cora" else random_partition(g, 6, seed=1)
    return boundary_relation(g, parts)


def _worker_orders(rel, position):
    """Each worker's senders by ascending position (what the plan's units follow)."""
    sender = rel.senders()
    first = np.unique(sender, return_index=True)
    orders = []
    for w in range(rel.num_workers):
        mine = first[0][rel.parts[first[0]] == w]
        pos = position[first[1][rel.parts[first[0]] == w]]
        orders.append(mine[np.argsort(pos, kind="stable")])
    return orders


@pytest.mark.parametrize("memory", [None, 64 * 128, 600 * 128])
def test_one_block_replay_is_the_strawman_traffic(rel, memory):
    plan = ina_plan(rel, "straw", F, memory, "gamr", 0)
    replay = plan_replay(plan, None if memory is None else memory // 128)
    ref = straw_traffic(rel, F, memory, interleave(rel, _worker_orders(rel, block_orders(rel, plan.block, "gamr"))))
    assert np.array_equal(replay.up[0], ref.up) and np.array_equal(replay.down[0], ref.down)
    assert replay.peak_aggregators[0] == ref.peak_aggregators and replay.unaggregated[0] == ref.unaggregated


def _brute_peak(rel, position, chunks):
    """Open aggregators after every arrival, counted by a plain sweep over the interleaved order."""
    seq = interleave(rel, _worker_orders(rel, position))
    need = {int(v): int(rel.need[v]) for v in rel.destinations()}
    got, open_now, peak = {}, 0, 0
    for u in seq:
        for v in rel.dst[rel.send_ptr[u]:rel.send_ptr[u + 1]]:
            v = int(v)
            if got.get(v, 0) == 0:
                open_now += 1
            got[v] = got.get(v, 0) + 1
            peak = max(peak, open_now)
            if got[v] == need[v]:
                open_now -= 1
    return peak * chunks


@pytest.mark.parametrize("order", ["gamr", "random"])
def test_edge_set_peak_against_a_plain_sweep(rel, order):
    position = block_orders(rel, np.zeros(rel.dst.size, dtype=np.int64), order, seed=3)
    peak = edge_set_peak(rel.senders(), rel.dst, rel.parts, position, 2)
    assert peak == _brute_peak(rel, position, 2)
    assert peak <= rel.destinations().size * 2


def test_gamr_keeps_fewer_aggregators_open_than_the_demand():
    g = load_dataset("cora")
    rel = boundary_relation(g, metis_partition(g, 8, seed=0))
    gamr = edge_set_peak(rel.senders(), rel.dst, rel.parts, block_orders(rel, np.zeros(rel.dst.size, np.int64), "gamr"), 1)
    rand = edge_set_peak(rel.senders(), rel.dst, rel.parts, block_orders(rel, np.zeros(rel.dst.size, np.int64), "random"), 1)
    assert gamr < rand < rel.destinations().size  # cora: 85 vs 602 destinations under GAMR


def test_blocks_replay_on_fresh_aggregators(rel):
    """A multi-block plan: every block's messages are those of its own edges alone."""
    plan = ina_plan(rel, "switchgnn", F, 40 * 2 * 128, "gamr", 0, blocking="destination", forward=False)
    replay = plan_replay(plan)  # unlimited: every destination of a block gets one result
    assert plan.num_blocks > 1
    for b in range(plan.num_blocks):
        e = plan.block == b
        assert replay.up[b].sum() == np.unique(plan.src[e]).size
        assert replay.down[b].sum() == np.unique(plan.dst[e]).size
        assert np.array_equal(replay.down[b], np.bincount(rel.parts[np.unique(plan.dst[e])], minlength=rel.num_workers))
