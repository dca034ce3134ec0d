"""PartitionScenario wires dataset → partition → relation → statistics, with a typed result."""

import pytest

from netweave.errors import NetweaveError
from netweave.graph import load_dataset
from netweave.partition import comm_relation, partition_by_method, partition_stats
from netweave.scenarios import PartitionScenario, feature_bytes


def test_the_summary_is_the_layers_called_by_hand():
    r = PartitionScenario(dataset="cora", method="random", parts=4, seed=1, feature_dim=64).run()
    g = load_dataset("cora")
    p = partition_by_method(g, "random", 4, None, 1)
    assert (r.partition.parts == p.parts).all()
    s = r.summary()
    assert {k: s[k] for k in ("num_nodes", "num_edges", "feature_dim")} == {"num_nodes": 2708, "num_edges": g.num_edges,
                                                                              "feature_dim": 64}
    by_hand = partition_stats(g, p, comm_relation(g, p), feature_bytes(64)).summary()
    assert {k: s[k] for k in by_hand} == by_hand
    assert s["load_time_s"] >= 0 and s["comm_relation_time_s"] >= 0


def test_the_feature_width_defaults_to_the_datasets_and_must_be_positive():
    assert PartitionScenario(dataset="cora", method="random", parts=2).run().summary()["feature_dim"] == 1433
    with pytest.raises(NetweaveError, match="--feature-dim 0 must be positive"):
        PartitionScenario(dataset="cora", method="random", parts=2, feature_dim=0).run()
