"""``netweave sweep``: the grid, the process pool, resumption after an interruption, and bad input."""

import json

import pytest

from netweave.errors import NetweaveError
from netweave.sweep import cases, load_config, sweep

CONFIG = {"name": "t", "kind": "route",
          "grid": {"algorithm": ["ps", "ecmp", "aro"], "seed": [0, 1]},
          "fixed": {"topology": "leafspine:leaves=4,spines=2,hosts=4,ina=0.5,pipelines=2,seed=1", "workers": 6}}


def test_grid_runs_in_a_pool_and_resumes_without_redoing_cases(tmp_path):
    rows = sweep(CONFIG, tmp_path, workers=2)
    assert len(rows) == 6 and [r["params"]["algorithm"] for r in rows] == ["ps", "ps", "ecmp", "ecmp", "aro", "aro"]
    aro = [r for r in rows if r["params"]["algorithm"] == "aro"]
    assert all(r["result"]["optimal"] for r in aro)
    lines = (tmp_path / "results.jsonl").read_text().splitlines()
    (tmp_path / "results.jsonl").write_text("\n".join(lines[:3]) + "\n" + lines[3][:20])  # interrupted mid-line
    ran = []
    again = sweep(CONFIG, tmp_path, workers=2, on_result=ran.append)
    assert len(ran) == 3 and [r["result"]["min_rate_gbps"] for r in again] == [r["result"]["min_rate_gbps"] for r in rows]
    assert {r["id"] for r in ran} == {json.loads(line)["id"] for line in lines[3:]}  # exactly the lost ones


def test_ina_cases(tmp_path):
    config = {"kind": "ina", "grid": {"strategy": ["host", "switchgnn"]},
              "fixed": {"dataset": "cora", "workers": 4, "switch_memory": "200KB", "blocking": "paper"}}
    rows = sweep(config, tmp_path, workers=1)
    assert rows[1]["result"]["num_blocks"] > 1 and rows[0]["result"]["traffic_reduction"] == 0


def test_bad_configs_are_one_line(tmp_path):
    (tmp_path / "bad.yaml").write_text("kind: magic\ngrid: {a: [1]}\n")
    with pytest.raises(NetweaveError, match="needs 'kind'"):
        load_config(tmp_path / "bad.yaml")
    (tmp_path / "bad2.yaml").write_text("kind: ina\ngrid: {a: 1}\n")
    with pytest.raises(NetweaveError, match="non-empty list"):
        load_config(tmp_path / "bad2.yaml")
    with pytest.raises(NetweaveError, match="no such file"):
        load_config(tmp_path / "missing.yaml")
    assert len(cases({"grid": {"a": [1, 2], "b": [3, 4, 5]}, "fixed": {"c": 0}})) == 6
    with pytest.raises(NetweaveError, match="bad ina parameter"):
        sweep({"kind": "ina", "grid": {"colour": ["red"]}}, tmp_path / "i", workers=1)


def test_every_kind_maps_its_yaml_onto_its_scenario(tmp_path):
    """A case's keys are the scenario's fields, strings as on the command line (sizes, mixes, heuristics)."""
    from netweave.scenarios import ExchangeScenario, InaScenario, RouteScenario
    from netweave.scenarios.fields import scenario_from

    ina = scenario_from("ina", {"dataset": "cora", "switch_memory": "2MB", "loss": 0.01})
    assert isinstance(ina, InaScenario) and ina.switch_memory == 2_000_000 and ina.sim.loss == 0.01
    prec = scenario_from("precision", {"topology": "fattree:k=4", "workers": 4, "precisions": "fp8:1,fp16:1"})
    assert isinstance(prec, RouteScenario) and prec.algorithm == "pahina" and prec.precisions == {"fp8": 1, "fp16": 1}
    route = scenario_from("route", {"topology": "fattree:k=4", "workers": 4, "accelerations": "app,sro"})
    assert route.algorithm == "aro" and route.accelerations == ("app", "sro")
    with pytest.raises(NetweaveError, match="applies only to --algorithm aro"):  # PAHInA has no §III-C heuristics
        scenario_from("precision", {"topology": "fattree:k=4", "workers": 4, "accelerations": "app"})
    with pytest.raises(NetweaveError, match="bad ina parameter 'workers': expected an integer, got 'two'"):
        scenario_from("ina", {"workers": "two"})  # types are checked against the fields, nothing is converted
    with pytest.raises(NetweaveError, match="bad partition parameter 'parts': expected an integer or null"):
        scenario_from("partition", {"dataset": "ring:n=8", "parts": [2, 3]})
    with pytest.raises(NetweaveError, match="bad route parameter 'workers'"):
        scenario_from("route", {"topology": "star:n=4", "workers": True})  # a bool is not an int
    rows = sweep({"kind": "exchange", "grid": {"planner": ["p2p", "spst"]},
                  "fixed": {"dataset": "cora", "topology": "dgx1:gpus=4", "cost_model": "dgcl"}}, tmp_path, workers=1)
    direct = ExchangeScenario(dataset="cora", topology="dgx1:gpus=4", planner="p2p", cost_model="dgcl").run()
    assert rows[0]["result"]["predicted_time_s"] == direct.cost.total_s and rows[1]["result"]["planner"] == "spst"


@pytest.mark.parametrize("config, message", [
    ({"kind": "route", "grid": {"seed": [0]}, "fixed": {"topology": "fattree:k=4"}}, "needs workers"),
    ({"kind": "ina", "grid": {"colour": ["red"]}}, "bad ina parameter 'colour': not a field of InaScenario"),
    ({"kind": "exchange", "grid": {"planner": ["spst", "magic"]}}, "unknown planner 'magic'"),
])
def test_a_bad_case_fails_before_anything_is_written(tmp_path, config, message):
    with pytest.raises(NetweaveError, match=message):
        sweep(config, tmp_path / "out", workers=1)
    assert not (tmp_path / "out").exists()


def test_cli_sweep(tmp_path, capsys, closed_port):
    from netweave.cli import main

    (tmp_path / "s.yaml").write_text(json.dumps(CONFIG))
    with pytest.raises(SystemExit) as e:
        main(["sweep", str(tmp_path / "s.yaml"), "--out", str(tmp_path / "o"), "--workers", "2", "--json"])
    assert (e.value.code or 0) == 0 and json.loads(capsys.readouterr().out)["cases"] == 6
    with pytest.raises(SystemExit) as e:
        main(["sweep", str(tmp_path / "s.yaml"), "--out", str(tmp_path / "o2"), "--ray", f"127.0.0.1:{closed_port}"])
    err = capsys.readouterr().err.strip().splitlines()
    assert e.value.code == 2 and len(err) == 1 and "cannot reach a Ray cluster" in err[0] and "ray start --head" in err[0]


@pytest.mark.slow
def test_a_local_ray_cluster_gives_the_pool_rows_and_resumes(tmp_path):
    pytest.importorskip("ray", reason="the ray extra is not installed")
    config = dict(CONFIG, grid={"algorithm": ["ps", "aro"], "seed": [0]})
    def rates(rows):
        return [(r["params"], r["result"]["min_rate_gbps"], r["result"]["objective_gbps"]) for r in rows]

    pool = rates(sweep(config, tmp_path / "pool", workers=2))
    assert rates(sweep(config, tmp_path / "ray", ray="local")) == pool
    bad = dict(config, kind="ina", grid={"colour": ["red"]}, fixed={})
    with pytest.raises(NetweaveError, match="bad ina parameter"):  # the case's own error, not Ray's wrapping
        sweep(bad, tmp_path / "ray", ray="local")
    ran = []
    assert rates(sweep(config, tmp_path / "ray", ray="local", on_result=ran.append)) == pool and not ran
