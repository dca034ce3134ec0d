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
