"""The ``netweave`` command: JSON contracts, artefacts, and one-line errors with exit status 2."""

import json
import subprocess
import sys

import numpy as np
import pytest

from netweave.cli import main
from netweave.partition import load_partition
from netweave.topology import load_topology


def run(capsys, *argv):
    with pytest.raises(SystemExit) as exit_info:
        main(list(argv))
    captured = capsys.readouterr()
    return exit_info.value.code or 0, captured.out, captured.err


def run_json(capsys, *argv):
    code, out, err = run(capsys, *argv, "--json")
    assert code == 0, err
    assert out.count("\n") == 1  # exactly one JSON object on stdout
    return json.loads(out)


def test_graph_stats_cora(capsys):
    s = run_json(capsys, "graph", "stats", "cora")
    assert (s["num_nodes"], s["num_edges"], s["feature_dim"], s["num_classes"]) == (2708, 5278, 1433, 7)
    assert s["degree_max"] == 168 and s["num_test"] == 1000


def test_partition_json_and_out(capsys, tmp_path):
    s = run_json(capsys, "partition", "cora", "--parts", "4", "--method", "metis", "--seed", "1",
                 "--feature-dim", "128", "--out", str(tmp_path / "p.npz"))
    assert s["num_parts"] == 4 and s["feature_bytes"] == 512
    assert s["host_exchange_bytes"] == s["halo_vertices_total"] * 512
    assert load_partition(tmp_path / "p.npz").sizes().tolist() == s["part_sizes"]
    for method in ("random", "range"):
        assert run_json(capsys, "partition", "cora", "-k", "3", "--method", method)["method"] == method


def test_partition_hierarchical_uses_topology_machines(capsys, tmp_path):
    s = run_json(capsys, "partition", "cora", "--method", "hierarchical", "--topology", "dgx1x2",
                 "--out", str(tmp_path / "h.npz"))
    assert s["num_parts"] == 16 and len(s["part_sizes"]) == 16
    assert np.bincount(load_partition(tmp_path / "h.npz").parts).size == 16


def test_topology_show_and_export(capsys, tmp_path):
    s = run_json(capsys, "topology", "show", "fattree:k=8")
    assert s["nodes_by_kind"] == {"host": 128, "switch": 80}
    code, _, err = run(capsys, "topology", "export", "dgx1", "--out", str(tmp_path / "d.yaml"))
    assert code == 0 and "wrote" in err
    assert load_topology(tmp_path / "d.yaml").workers == [f"G{i}" for i in range(8)]
    s = run_json(capsys, "topology", "show", str(tmp_path / "d.yaml"), "--links")
    assert s["num_links"] == len(s["links"]) == 29


def test_datasets_lists_formats(capsys):
    s = run_json(capsys, "datasets")
    assert "cora" in s["bundled"] and {"npz", "snap", "musae", "planetoid"} <= set(s["formats"])
    assert {"rmat", "er", "reddit-like", "products-like"} <= set(s["generators"])


@pytest.mark.parametrize("argv, match", [
    (("graph", "stats", "nosuch.txt"), "unknown dataset"),
    (("partition", "cora", "--parts", "99999"), "exceeds the graph's 2708 vertices"),
    (("partition", "cora"), "--parts K is required"),
    (("partition", "cora", "--method", "hierarchical"), "needs --topology"),
    (("topology", "show", "leafspine:leaves=2"), "needs the parameter spines"),
    (("graph", "stats", "rmat:n=10,m=1000"), "impossible"),
])
def test_bad_input_is_one_line_exit_2(capsys, argv, match):
    code, out, err = run(capsys, *argv)
    assert code == 2 and out == ""
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("netweave: error:") and match in lines[0]


def test_unwritable_out_is_one_line(capsys, tmp_path):
    code, _, err = run(capsys, "topology", "export", "dgx1", "--out", str(tmp_path / "no" / "dir" / "x.yaml"))
    assert code == 2 and err.strip().count("\n") == 0 and "does not exist" in err


def test_console_script_runs_without_torch():
    code = ("import sys, netweave.cli, netweave.graph, netweave.partition, netweave.topology, netweave.plan,"
            " netweave.runtime;"
            "sys.exit('torch' in sys.modules)")
    assert subprocess.run([sys.executable, "-c", code]).returncode == 0


def test_plan_json_out_and_validate(capsys, tmp_path):
    s = run_json(capsys, "plan", "cora", "--topology", "dgx1", "--planner", "spst", "--cost-model", "dgcl",
                 "--out", str(tmp_path / "p.npz"))
    assert s["planner"] == "spst" and s["num_workers"] == 8 and s["num_stages"] == len(s["stage_times_s"])
    assert s["predicted_time_s"] == pytest.approx(sum(s["stage_times_s"]))
    assert s["p2p_predicted_time_s"] > 2 * s["predicted_time_s"]
    assert s["total_bytes"] == sum(s["bytes_per_link"].values()) and "planning_time_s" in s
    v = run_json(capsys, "plan", "cora", "--validate", str(tmp_path / "p.npz"), "--topology", "dgx1")
    assert v["valid"] and v["checked_against_dataset"] and v["checked_against_topology"]
    p2p = run_json(capsys, "plan", "cora", "--topology", "dgx1", "--planner", "p2p", "--cost-model", "dgcl")
    assert p2p["num_stages"] == 1 and p2p["predicted_time_s"] == s["p2p_predicted_time_s"]
    # the default α–β model: SPST is never predicted slower than P2P, and both models are reported
    ab = run_json(capsys, "plan", "cora", "--topology", "dgx1")
    assert ab["cost_model"] == "alpha-beta" and ab["predicted_time_s"] <= ab["p2p_predicted_time_s"]
    assert ab["dgcl_predicted_time_s"] < ab["alpha_beta_predicted_time_s"]


def test_plan_with_parts_file(capsys, tmp_path):
    run_json(capsys, "partition", "cora", "-k", "8", "--method", "random", "--out", str(tmp_path / "r.npz"))
    s = run_json(capsys, "plan", "cora", "--topology", "pcie8", "--parts-file", str(tmp_path / "r.npz"))
    assert s["num_workers"] == 8
    code, _, err = run(capsys, "plan", "cora", "--topology", "dgx1x2", "--parts-file", str(tmp_path / "r.npz"))
    assert code == 2 and "has 8 parts but there are 16 workers" in err


def test_plan_validate_rejects_broken_plan(capsys, tmp_path):
    run_json(capsys, "plan", "cora", "--topology", "dgx1", "--cost-model", "dgcl", "--out", str(tmp_path / "p.npz"))
    with np.load(tmp_path / "p.npz") as z:
        arrays = dict(z)
    arrays["hop_stage"] = arrays["hop_stage"][::-1].copy()  # scramble the stages
    np.savez(tmp_path / "bad.npz", **arrays)
    code, out, err = run(capsys, "plan", "cora", "--validate", str(tmp_path / "bad.npz"))
    assert code == 2 and out == "" and err.startswith("netweave: error: invalid plan:")


@pytest.mark.parametrize("argv, message", [
    (("train", "cora", "--workers", "4", "--topology", "dgx1"), "has 8 workers but --workers is 4"),
    (("train", "cora", "--workers", "2", "--epochs", "0"), "--epochs 0 must be at least 1"),
    (("train", "cora", "--workers", "2", "--comm", "allreduce", "--plan-file", "x.npz"), "--plan-file needs --comm"),
])
def test_train_rejects_bad_input_in_one_line(capsys, argv, message):
    pytest.importorskip("torch_geometric")
    code, out, err = run(capsys, *argv)
    assert code == 2 and out == "" and err.count("\n") == 1 and message in err


def test_train_one_worker_json(capsys):
    pytest.importorskip("torch_geometric")
    r = run_json(capsys, "train", "cora", "--epochs", "3", "--model", "gin", "--hidden", "8")
    assert r["workers"] == 1 and r["comm"] == "none" and len(r["epochs"]) == 3
    assert r["exchange_bytes_per_epoch"] == 0 and r["epochs"][-1]["loss"] < r["epochs"][0]["loss"]


# -- ina -----------------------------------------------------------------------------------------
INA_KEYS = ("traffic_bytes", "host_traffic_bytes", "traffic_reduction", "completion_time_s", "max_queue_bytes",
            "peak_aggregator_bytes", "num_blocks", "unaggregated_messages")


@pytest.mark.parametrize("strategy,memory", [("host", "100MB"), ("straw", "unlimited"), ("switchgnn", "20KB")])
def test_ina_reports_and_verifies(capsys, tmp_path, strategy, memory):
    blocks = ["--blocking", "paper"] if strategy == "switchgnn" else []  # the paper's blocks, synchronised under loss
    s = run_json(capsys, "ina", "cora", "--workers", "4", "--strategy", strategy, "--switch-memory", memory,
                 "--feature-dim", "16", "--loss", "0.02", "--verify", "--timeline", str(tmp_path / "t.csv"), *blocks)
    assert all(k in s for k in INA_KEYS) and s["verify_max_rel_error"] < 1e-9
    assert (s["traffic_reduction"] > 0) == (strategy != "host")  # host: resends only add
    assert (s["num_blocks"] > 1) == (strategy == "switchgnn") and s["resends"] > 0
    header = (tmp_path / "t.csv").read_text().splitlines()[0].split(",")
    assert header[:5] == ["time_s", "delivered_gbps", "aggregated_gbps", "aggregator_bytes", "max_queue_bytes"]
    assert header[5:] == [f"run_{k}" for k in s["run"]]  # the run's metadata on every row
    rows = np.loadtxt(tmp_path / "t.csv", delimiter=",", skiprows=1, ndmin=2, usecols=range(5))
    assert rows[-1, 0] <= s["completion_time_s"]


def test_ina_auto_blocking_reports_every_candidate(capsys):
    s = run_json(capsys, "ina", "cora", "--workers", "8", "--switch-memory", "100KB", "--verify")
    choice = s["choice"]
    assert s["strategy"] == "switchgnn" and s["blocking"] == "auto" and s["verify_max_rel_error"] < 1e-9
    assert {c["blocking"] for c in choice["candidates"]} >= {"host", "single", "destination", "hybrid", "multilevel"}
    best = min(c["predicted_completion_s"] for c in choice["candidates"] if not c["pruned"])
    assert choice["predicted_completion_s"] <= best * 1.01
    assert s["traffic_bytes"] == choice["predicted_traffic_bytes"]  # a star without loss: the replay is exact
    code, _, err = run(capsys, "ina", "cora", "--overlap")
    assert code == 2 and "explicit --blocking" in err


def test_ina_leaf_spine_table_and_plot(capsys, tmp_path):
    code, out, err = run(capsys, "ina", "cora", "--workers", "8", "--topology", "leafspine:leaves=2,spines=2,hosts=4",
                         "--strategy", "straw", "--plot", str(tmp_path / "t.png"))
    assert code == 0 and "traffic_reduction" in out and "core_bytes" in out
    assert (tmp_path / "t.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


@pytest.mark.parametrize("argv,message", [
    (["--workers", "4", "--topology", "star:n=8"], "make them agree"),
    (["--workers", "4", "--strategy", "switchgnn", "--switch-memory", "unlimited"], "finite"),
    (["--workers", "4", "--switch-memory", "lots"], "--switch-memory"),
    (["--workers", "8", "--topology", "dgx1"], "GPUs"),
    (["--workers", "4", "--loss", "2"], "loss rate"),
    (["--workers", "4", "--start", "0"], "boundary vertex"),
])
def test_ina_bad_input_is_one_line(capsys, argv, message):
    code, out, err = run(capsys, "ina", "cora", *argv)
    assert code == 2 and out == "" and message in err and err.count("\n") == 1


@pytest.mark.parametrize("graph,order,z", [("star:n=40", "gamr", 40), ("ring:n=12", "gamr", 14)])
def test_timeslot_reproduces_the_section_3_2_2_analysis(capsys, graph, order, z):
    s = run_json(capsys, "timeslot", graph, "--order", order)
    assert s["z"] == z and s["arrival_slots"] == int(graph.split("=")[1])


def test_timeslot_random_star_waits_for_the_hub(capsys):
    zs = [run_json(capsys, "timeslot", "star:n=40", "--order", "random", "--seed", str(s))["z"] for s in range(30)]
    assert min(zs) >= 40 and max(zs) <= 2 * 40 - 1 and np.mean(zs) > 45


# -- route ---------------------------------------------------------------------------------------
LEAFSPINE = "leafspine:leaves=4,spines=2,hosts=4,ina=0.5,pipelines=2,seed=1"


def test_route_plans_writes_and_evaluates(capsys, tmp_path):
    s = run_json(capsys, "route", "--topology", LEAFSPINE, "--workers", "10", "--out", str(tmp_path / "r.json"))
    assert s["optimal"] and s["objective_gbps"] == pytest.approx(s["tasks"]["J0.T0"]["rate_gbps"])
    assert s["upper_bound_gbps"] >= s["objective_gbps"] and s["solve_time_s"] >= 0
    assert all(k.endswith(("_gbps", "_s")) for k, v in s.items() if isinstance(v, float))  # units in key names
    paths = s["tasks"]["J0.T0"]["paths"]
    assert len(paths) == 10 and all(p[-1] == s["tasks"]["J0.T0"]["ps"] for p in paths.values())
    e = run_json(capsys, "route", "--topology", LEAFSPINE, "--evaluate", str(tmp_path / "r.json"))
    assert e["evaluated_rates_gbps"]["J0.T0"] == pytest.approx(s["objective_gbps"])
    for algorithm in ("ecmp", "grid", "aggtree", "ps"):
        b = run_json(capsys, "route", "--topology", LEAFSPINE, "--workers", "10", "--algorithm", algorithm)
        assert 0 < b["min_rate_gbps"] <= s["objective_gbps"] + 1e-9


def test_route_jobs_file(capsys, tmp_path):
    (tmp_path / "jobs.yaml").write_text("jobs:\n  - name: A\n    tasks:\n      - {ps: H0, workers: [H5, H6, H9, H13]}\n"
                                        "      - {ps: H1, workers: [H5, H6, H9, H13]}\n")
    s = run_json(capsys, "route", "--topology", LEAFSPINE, "--jobs", str(tmp_path / "jobs.yaml"))
    assert set(s["tasks"]) == {"A.T0", "A.T1"} and s["total_rate_gbps"] <= s["upper_bound_gbps"] + 1e-9


@pytest.mark.parametrize("argv,message", [
    (["--topology", LEAFSPINE], "exactly one of --jobs"),
    (["--topology", LEAFSPINE, "--workers", "5", "--ps", "H99"], "unknown node 'H99'"),
    (["--topology", "leafspine:leaves=2,spines=2,hosts=2", "--workers", "3"], "needs INA switches"),
    (["--topology", LEAFSPINE, "--workers", "500"], "hosts besides the PS"),
    (["--topology", LEAFSPINE, "--evaluate", "missing.json"], "no such file"),
])
def test_route_bad_input_is_one_line(capsys, argv, message):
    code, out, err = run(capsys, "route", *argv)
    assert code == 2 and out == "" and message in err and err.count("\n") == 1


def test_route_precision_aware_schemes(capsys, tmp_path):
    topo = "fattree:k=4,ina=0.4,seed=1,gbps=10"
    times = {}
    for algorithm in ("pahina", "atp", "grid", "ps"):
        s = run_json(capsys, "route", "--topology", topo, "--workers", "12", "--precisions", "fp8:5,fp16:3,fp32:2",
                     "--algorithm", algorithm, "--out", str(tmp_path / f"{algorithm}.json"))
        task = s["tasks"]["J0.T0"]
        assert set(task["worker_rates_gbps"]) == set(task["paths"]) and len(task["paths"]) == 12
        assert all(p[-1] == task["ps"] for p in task["paths"].values())
        times[algorithm] = s["training_time_s"]
    assert times["pahina"] <= min(times["atp"], times["ps"])
    code, out, err = run(capsys, "route", "--topology", topo, "--workers", "4", "--precisions", "fp8:1,fp16:1",
                         "--algorithm", "aggtree")
    assert code == 2 and "does not model mixed precisions" in err and "pahina" in err and err.count("\n") == 1


def test_route_aro_takes_one_precision_per_task(capsys, tmp_path):
    """DESIGN's jobs format names a precision per task; one precision changes nothing for ARO."""
    task = "{ps: H0, workers: [H5, H6, H9, H13]"
    (tmp_path / "plain.yaml").write_text(f"jobs:\n  - name: A\n    tasks:\n      - {task}}}\n")
    (tmp_path / "fp16.yaml").write_text(f"jobs:\n  - name: A\n    tasks:\n      - {task}, precision: fp16}}\n")
    (tmp_path / "mixed.yaml").write_text(f"jobs:\n  - name: A\n    tasks:\n      - {task}, precision: fp16, "
                                         "worker_precision: {H6: fp8}}\n")
    plain = run_json(capsys, "route", "--topology", LEAFSPINE, "--jobs", str(tmp_path / "plain.yaml"))
    for algorithm in ("aro", "ecmp", "aggtree"):
        s = run_json(capsys, "route", "--topology", LEAFSPINE, "--jobs", str(tmp_path / "fp16.yaml"), "--algorithm", algorithm)
        assert s["algorithm"] == algorithm and s["min_rate_gbps"] > 0
        if algorithm == "aro":
            assert s["tasks"] == plain["tasks"]
        code, out, err = run(capsys, "route", "--topology", LEAFSPINE, "--jobs", str(tmp_path / "mixed.yaml"),
                             "--algorithm", algorithm)
        assert code == 2 and out == "" and err.count("\n") == 1
        assert "A.T0 mixes precisions (fp8, fp16)" in err and "--algorithm pahina" in err
    for algorithm in ("grid", "ps"):  # one file, one model: ARO's rates for a uniform precision ...
        s = run_json(capsys, "route", "--topology", LEAFSPINE, "--jobs", str(tmp_path / "fp16.yaml"), "--algorithm", algorithm)
        assert "objective_gbps" in s and "training_time_s" not in s
        # ... and the precision-aware model where a task mixes precisions
        m = run_json(capsys, "route", "--topology", LEAFSPINE, "--jobs", str(tmp_path / "mixed.yaml"), "--algorithm", algorithm)
        assert "training_time_s" in m


def test_aggsvc_demo(capsys):
    s = run_json(capsys, "aggsvc", "demo", "--workers", "10", "--loss", "0.1", "--dup", "0.1", "--reorder", "0.2",
                 "--seed", "1")
    assert s["exact"] and s["leftover_state"] == 0 and s["resent"] > 0
    code, out, err = run(capsys, "aggsvc", "demo", "--dup", "2")
    assert code == 2 and "--dup" in err


def test_kernels_bench_on_cpu(capsys):
    pytest.importorskip("triton")
    s = run_json(capsys, "kernels", "bench", "rmat:n=200,m=600,seed=1", "--gpus", "2", "--dim", "4", "--repeats", "1")
    assert s["device"] == "cpu" and min(s["reference_s"], s["torch_sparse_s"], s["non_overlapped_s"], s["mgg_s"]) > 0
    code, out, err = run(capsys, "kernels", "bench", "cora", "--ps", "64")
    assert code == 2 and "ps in 1..32" in err
