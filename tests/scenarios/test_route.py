"""RouteScenario decides once which model a routing runs on, and wires jobs → routes → rates."""

import pytest

from netweave.errors import NetweaveError
from netweave.route import random_job
from netweave.route.plan import PrecisionResult, RouteResult, route_jobs
from netweave.scenarios import PRECISION_MIX, RouteScenario
from netweave.topology import load_topology_spec

LEAFSPINE = "leafspine:leaves=4,spines=2,hosts=4,ina=0.5,pipelines=2,seed=1"


def test_the_model_follows_the_algorithm_and_the_precisions():
    def kind(algorithm, mix=None):
        return type(RouteScenario(topology=LEAFSPINE, algorithm=algorithm, workers=6, precisions=mix, seed=1).run())

    assert kind("aro") is kind("grid") is kind("ps") is RouteResult  # one precision: ARO's model for all
    assert kind("pahina") is kind("atp") is PrecisionResult
    assert kind("grid", PRECISION_MIX) is kind("ps", PRECISION_MIX) is PrecisionResult
    with pytest.raises(NetweaveError, match="mixes precisions"):
        kind("aro", PRECISION_MIX)


def test_the_result_is_the_router_called_by_hand():
    r = RouteScenario(topology=LEAFSPINE, algorithm="aro", workers=6, seed=2).run()
    topo = load_topology_spec(LEAFSPINE)
    by_hand = route_jobs(topo, random_job(topo, 6, None, 2), "aro", 2)
    assert r.summary() | {"solve_time_s": 0} == by_hand.summary() | {"solve_time_s": 0}


def test_one_source_of_jobs():
    with pytest.raises(NetweaveError, match="exactly one of --jobs FILE and --workers W"):
        RouteScenario(topology=LEAFSPINE).run()
    with pytest.raises(NetweaveError, match="unknown algorithm"):
        RouteScenario(topology=LEAFSPINE, algorithm="magic", workers=3).run()


def test_route_check_evaluates_saved_routes_to_the_planned_rates(tmp_path):
    from netweave.route.plan import save_routes
    from netweave.scenarios import RouteCheck

    r = RouteScenario(topology=LEAFSPINE, algorithm="aro", workers=6, seed=2).run()
    save_routes(r, tmp_path / "routes.json")
    s = RouteCheck(topology=LEAFSPINE, routes_file=str(tmp_path / "routes.json")).run().summary()
    assert s["routes"] == str(tmp_path / "routes.json") and s["min_rate_gbps"] == min(s["evaluated_rates_gbps"].values())
    assert s["min_rate_gbps"] == pytest.approx(r.summary()["min_rate_gbps"])
