"""Multi-level blocks: each fits the switch, every cross edge is in exactly one block."""

import numpy as np
import pytest

from netweave.errors import NetweaveError
from netweave.graph import load_dataset, rmat
from netweave.ina import boundary_relation
from netweave.ina.blocks import multilevel_blocks
from netweave.partition import metis_partition, random_partition


@pytest.mark.parametrize("name, memory_kb", [("cora", 4), ("cora", 64), ("rmat", 16), ("rmat", 1024)])
def test_blocks_fit_and_cover_every_edge_once(name, memory_kb):
    g = load_dataset("cora") if name == "cora" else rmat(3000, 30000, seed=2)
    parts = metis_partition(g, 8, seed=0) if name == "cora" else random_partition(g, 16, seed=0)
    rel = boundary_relation(g, parts)
    feature_bytes = 256  # two aggregators per destination
    blocks = multilevel_blocks(rel, feature_bytes, memory_kb * 1024, seed=0)
    assert blocks.block.min() == 0 and blocks.block.max() == blocks.num_blocks - 1  # all edges, one block each
    capacity = memory_kb * 1024 // 128
    for b in range(blocks.num_blocks):
        dst = rel.dst[blocks.block == b]
        assert np.unique(dst).size * 2 <= capacity
    demand = rel.destinations().size * 2
    assert blocks.num_blocks >= -(-demand // capacity)
    if demand <= capacity:
        assert blocks.num_blocks == 1


def test_too_small_a_switch_is_one_clear_error():
    g = load_dataset("cora")
    rel = boundary_relation(g, metis_partition(g, 4, seed=0))
    with pytest.raises(NetweaveError, match="needs 12 aggregators"):
        multilevel_blocks(rel, 1433, 1024)


def test_per_edge_memory_bounds_every_block_by_its_smallest_edge():
    """Switches that differ (issue 16): each edge carries the smallest memory among the switches that
    aggregate it; a block holds edges of one budget and fits it; one memory for every edge is the int case."""
    g = rmat(3000, 30000, seed=2)
    rel = boundary_relation(g, random_partition(g, 16, seed=0))
    uniform = multilevel_blocks(rel, 256, 16 * 1024, seed=0)
    same = multilevel_blocks(rel, 256, np.full(rel.dst.size, 16 * 1024), seed=0)
    assert np.array_equal(uniform.block, same.block) and np.array_equal(uniform.levels, same.levels)
    budget = np.where(rel.parts[rel.dst] < 8, 16 * 1024, 1024 * 1024)  # half the destinations sit behind a small switch
    blocks = multilevel_blocks(rel, 256, budget, seed=0)
    assert blocks.block.min() == 0 and blocks.block.max() == blocks.num_blocks - 1
    for b in range(blocks.num_blocks):
        e = blocks.block == b
        assert np.unique(budget[e]).size == 1 and np.unique(rel.dst[e]).size * 2 <= budget[e][0] // 128
    assert blocks.num_blocks < uniform.num_blocks  # edges that avoid the small switch are not cut to its size
    with pytest.raises(NetweaveError, match="per-edge switch memories"):
        multilevel_blocks(rel, 256, budget[:5])
    with pytest.raises(NetweaveError, match="smallest switch on its path has 1 "):
        multilevel_blocks(rel, 256, np.where(budget > 16 * 1024, budget, 128))


def _gamr_peak(rel, edges, chunks):
    from netweave.ina.occupancy import edge_set_peak
    from netweave.ina.orders import dependency_order

    sender = rel.senders()[edges]
    seq = dependency_order(sender, rel.dst[edges], "gamr", 0)
    rank = np.empty(rel.parts.size, dtype=np.int64)
    rank[seq] = np.arange(seq.size)
    return edge_set_peak(sender, rel.dst[edges], rel.parts, rank[sender], chunks)


@pytest.mark.parametrize("cut", ["metis", "destination"])
def test_peak_sizing_fits_every_block_and_needs_fewer(cut):
    """Sized by the GAMR-order peak, a block may hold more destinations than fit at once, never more
    than are open at once; it needs no more blocks than sizing by demand."""
    from netweave.ina.blocks import multilevel_blocks

    g = rmat(3000, 30000, seed=2)
    rel = boundary_relation(g, random_partition(g, 16, seed=0))
    capacity = 64 * 1024 // 128
    peak = multilevel_blocks(rel, 256, 64 * 1024, seed=0, sizing="peak", cut=cut)
    demand = multilevel_blocks(rel, 256, 64 * 1024, seed=0)
    assert np.array_equal(np.unique(peak.block), np.arange(peak.num_blocks))
    assert peak.num_blocks <= demand.num_blocks
    beyond = 0
    for b in range(peak.num_blocks):
        edges = np.flatnonzero(peak.block == b)
        assert _gamr_peak(rel, edges, 2) <= capacity
        beyond += np.unique(rel.dst[edges]).size * 2 > capacity
    assert beyond > 0  # some block holds more destinations than the demand rule allows


def test_destination_blocks_keep_destinations_whole():
    from netweave.ina.blocks import TooManyBlocks, destination_blocks

    g = load_dataset("cora")
    rel = boundary_relation(g, metis_partition(g, 8, seed=0))
    blocks = destination_blocks(rel, 256, 8 * 1024)
    assert np.array_equal(np.unique(blocks.block), np.arange(blocks.num_blocks))
    per_dst = np.zeros(rel.parts.size, dtype=np.int64) - 1
    for b in range(blocks.num_blocks):
        edges = np.flatnonzero(blocks.block == b)
        assert _gamr_peak(rel, edges, 2) <= 64
        v = np.unique(rel.dst[edges])
        assert (per_dst[v] == -1).all()  # a destination is in one block only
        per_dst[v] = b
    with pytest.raises(TooManyBlocks):
        destination_blocks(rel, 256, 8 * 1024, max_blocks=blocks.num_blocks - 1)
    with pytest.raises(TooManyBlocks):
        multilevel_blocks(rel, 256, 8 * 1024, max_blocks=2)
