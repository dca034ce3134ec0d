"""``netweave repro``: every name at a tiny scale writes its CSV, plot and paper-vs-netweave table,
``all`` writes the summary, reruns resume from NAME.jsonl; unknown names and scales and a missing
GPU are one line."""

import json

import pytest

from netweave.cli import main
from netweave.errors import NetweaveError
from netweave.repro import MGG_RUN, REPROS, reproduce, reproduce_all


def _cli(args, capsys) -> dict:
    with pytest.raises(SystemExit) as e:
        main(args + ["--json"])
    assert (e.value.code or 0) == 0
    return json.loads(capsys.readouterr().out)


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    """``netweave repro all --scale tiny`` once, its cases in a pool of two processes."""
    out = tmp_path_factory.mktemp("repro")
    with pytest.MonkeyPatch.context() as mp:
        mp.delenv(MGG_RUN, raising=False)
        results = reproduce_all(out, scale="tiny", workers=2)
    return out, {r.name: r.summary() for r in results}


@pytest.mark.parametrize("name", [n for n in REPROS if n != "mgg-fig11"])
def test_every_repro_at_a_tiny_scale(name, tiny):
    out, results = tiny
    r = results[name]
    assert r["rows"] and r["paper"] and r["netweave"] and r["cases"] == r["cases_run"] >= 1
    assert (out / f"{name}.png").read_bytes()[:4] == b"\x89PNG"
    text = (out / f"{name}.md").read_text()
    assert "| paper |" in text and "| netweave |" in text and (out / f"{name}.csv").read_text().count("\n") >= 2
    assert f"| {name} | {r['paper']} | {r['netweave']} |" in (out / "summary.md").read_text()


def test_rerun_resumes_from_the_recorded_cases(tiny, capsys):
    out, results = tiny
    jsonl = out / "pahina-fig9.jsonl"
    lines = jsonl.read_text().splitlines()
    jsonl.write_text("\n".join(lines[:-1]) + "\n")  # as if interrupted before the last case
    again = _cli(["repro", "pahina-fig9", "--scale", "tiny", "--out", str(out), "--workers", "1"], capsys)
    assert again["cases_run"] == 1 and again["rows"] == results["pahina-fig9"]["rows"]
    again = _cli(["repro", "aro-fig7", "--scale", "tiny", "--out", str(out)], capsys)
    assert again["cases_run"] == 0 and again["netweave"] == results["aro-fig7"]["netweave"]


def test_mgg_repro_needs_a_gpu_or_a_recorded_run(tiny):
    out, results = tiny
    try:
        import torch
        gpu = torch.cuda.is_available()
    except ImportError:
        gpu = False
    if gpu:
        assert results["mgg-fig11"]["rows"]
    else:
        assert "needs a GPU" in results["mgg-fig11"]["netweave"]  # listed with its reason, the others ran
        assert not (out / "mgg-fig11.jsonl").exists()
        with pytest.raises(NetweaveError, match=f"needs a GPU .*set {MGG_RUN}"):
            reproduce("mgg-fig11", out, scale="tiny")


def test_mgg_repro_replays_the_recorded_run_the_user_names(tmp_path, monkeypatch):
    """Issue 16: the recorded run came from benchmarks/results/ of the source checkout (absent from an
    installed package); now only from the file the user names in $NETWEAVE_MGG_RUN, read up front."""
    try:
        import torch
        gpu = torch.cuda.is_available()
    except ImportError:
        gpu = False
    if gpu:
        pytest.skip("with a GPU the case measures instead of replaying")
    run = tmp_path / "my-mgg.json"
    run.write_text(json.dumps({"device": "H100", "rows": [{"tuned": "Config(ps=8, dist=2, wpb=4)",
                                                          "tuner_path": [["Config(1)", 0.004], ["Config(8)", 0.001]]}]}))
    monkeypatch.setenv(MGG_RUN, str(run))
    r = reproduce("mgg-fig11", tmp_path / "out1", scale="tiny").summary()
    assert [row["latency_ms"] for row in r["rows"]] == [4.0, 1.0] and "Config(ps=8" in r["netweave"]
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv(MGG_RUN, "missing.json")
    with pytest.raises(NetweaveError, match=f"^{MGG_RUN}=missing.json: cannot read it .*bench_mgg.py"):
        reproduce("mgg-fig11", tmp_path / "out2", scale="tiny")
    run.write_text('{"rows": []}')
    monkeypatch.setenv(MGG_RUN, str(run))
    with pytest.raises(NetweaveError, match="is not a recorded MGG run"):
        reproduce("mgg-fig11", tmp_path / "out3", scale="tiny")


def test_unknown_names_and_scales_and_list(tmp_path, capsys):
    with pytest.raises(NetweaveError, match="--list"):
        reproduce("dgcl-table99", tmp_path)
    with pytest.raises(NetweaveError, match="unknown scale 'huge'"):
        reproduce("aro-fig7", tmp_path, scale="huge")
    with pytest.raises(NetweaveError, match="contradicts"):
        reproduce("aro-fig7", tmp_path, full=True, scale="tiny")
    assert len(_cli(["repro", "--list"], capsys)["repros"]) == 7


@pytest.mark.parametrize("name", ["switchgnn-fig17", "switchgnn-fig18"])
def test_switchgnn_figures_add_the_full_size_graph_with_destination_blocks(name, tmp_path, monkeypatch, capsys):
    """``--full`` runs Figures 17 and 18 twice: the paper's METIS blocking on a tenth of Reddit and,
    beside it, Reddit's own size with destination blocks. Both run here for real, at small sizes."""
    from netweave import repro

    monkeypatch.setitem(repro.SCALES, "tiny", {**repro.SCALES["tiny"], "ina_full": 0.01})
    r = reproduce(name, tmp_path, scale="tiny", workers=1)
    memories = repro.SCALES["tiny"]["memories"]
    assert r.cases == 2 * len(memories) and len(r.rows) == len(memories)
    for row, mb in zip(r.rows, memories):
        assert row["paper_memory_mb"] == mb and row["blocking"] == "paper" and row["reddit"] == 0.005
        assert row["switchgnn_gamr_blocks_reddit_size"] >= 1
    # the wiring: the first Reddit-size column is what `netweave ina` gives for that graph, memory and blocking
    mb = memories[0]
    one = _cli(["ina", "reddit-like:scale=0.01", "--workers", "8", "--switch-memory", str(int(mb * 1e6 * 0.01)),
                "--strategy", "switchgnn", "--blocking", "destination"], capsys)
    assert r.rows[0]["switchgnn_gamr_reduction_reddit_size"] == pytest.approx(one["traffic_reduction"])
    assert r.rows[0]["switchgnn_gamr_blocks_reddit_size"] == one["num_blocks"]
    assert "reddit-like at scale 0.01 (destination blocks, the paper's memories)" in r.netweave
    assert "_reddit_size" in (tmp_path / f"{name}.csv").read_text().splitlines()[0]


def test_full_scale_switchgnn_cases_run_in_one_process(tmp_path, monkeypatch):
    """At ``--full`` a Reddit-size case holds 11 GB: Figures 17-18 never run two at once, whatever --workers says."""
    from netweave import repro

    seen = {}

    def fake_run_cases(fn, args, cases, path, workers, ray, on_fresh, label):
        seen["workers"] = workers
        raise NetweaveError("stop here")

    monkeypatch.setattr(repro, "run_cases", fake_run_cases)
    for name, workers, want in [("switchgnn-fig17", None, 1), ("switchgnn-fig18", 4, 1), ("aro-fig7", 4, 4)]:
        with pytest.raises(NetweaveError, match="stop here"):
            reproduce(name, tmp_path / name, full=True, workers=workers)
        assert seen["workers"] == want
    with pytest.raises(NetweaveError, match="stop here"):
        reproduce("switchgnn-fig17", tmp_path / "reduced", workers=2)  # the reduced scale keeps the pool
    assert seen["workers"] == 2
