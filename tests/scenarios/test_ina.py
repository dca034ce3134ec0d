"""InaScenario wires dataset → partition → relation → InaPlan → simulation, with a typed result."""

import pytest

from netweave.errors import NetweaveError
from netweave.scenarios import FEATURE_DIM, InaScenario, feature_bytes


def test_a_verified_layer_and_its_summary():
    r = InaScenario(dataset="cora", workers=4, strategy="switchgnn", switch_memory=20_000, verify=True, seed=1,
                    blocking="paper").run()
    assert r.verify_max_rel_error is not None and r.verify_max_rel_error < 1e-9  # sums equal A_cross @ X
    s = r.summary()
    assert s["traffic_reduction"] == pytest.approx(1 - r.sim.traffic_bytes / r.layer.host_traffic_bytes)
    assert s["num_blocks"] == r.layer.plan.num_blocks > 1 and s["feature_bytes"] == feature_bytes(1433)
    assert InaScenario(dataset="er:n=80,m=300", workers=4).run().layer.plan.feature_bytes == feature_bytes(FEATURE_DIM)


def test_keyword_only_and_one_line_errors():
    with pytest.raises(TypeError):
        InaScenario("cora")  # noqa
    with pytest.raises(NetweaveError, match="--workers 1"):
        InaScenario(workers=1).run()
    with pytest.raises(NetweaveError, match="has 8 hosts"):
        InaScenario(workers=4, topology="star:n=8").run()
    with pytest.raises(NetweaveError, match="unknown blocking 'metis'"):
        InaScenario(blocking="metis").run()


def test_timeslot_of_a_ring_in_gamr_order():
    from netweave.scenarios import TimeslotScenario

    s = TimeslotScenario(dataset="ring:n=12", order="gamr").run().summary()
    assert s["arrival_slots"] == 12 and s["z"] >= 12 and s["drain_slots"] == s["z"] - 12
    assert 0 < s["output_busy_share"] <= 1
    with pytest.raises(NetweaveError, match="--k 0 must be at least 1"):
        TimeslotScenario(k=0).run()


def test_prepared_inputs_serve_every_strategy_and_must_match():
    base = InaScenario(dataset="cora", workers=4, strategy="host")
    inputs = base.prepare()
    for strategy in ("host", "straw", "switchgnn"):
        sc = InaScenario(dataset="cora", workers=4, strategy=strategy, switch_memory=200_000)
        assert sc.run(inputs).summary()["traffic_bytes"] == sc.run().summary()["traffic_bytes"]
    with pytest.raises(ValueError, match="inputs prepared for"):
        InaScenario(dataset="cora", workers=4, seed=1).run(inputs)
