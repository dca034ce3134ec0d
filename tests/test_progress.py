"""Observable runs (issue 33): off a terminal a command prints plain progress lines and a heartbeat
on stderr, ``--quiet`` silences them, stdout keeps only the result; netweave used as a library off a
terminal prints none; every ``--json`` object and case row records the run."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

# a command of about a second, with the heartbeat made to look every 10 ms and speak after 50 ms of silence
# (at its defaults, 0.5 s and 8 s, a run this short never meets it)
SCRIPT = ("import sys, netweave.progress as p; p.SILENCE_S = 0.05; p.POLL_S = 0.01; from netweave.cli import main; "
          "main(sys.argv[1:])")
COMMAND = ["ina", "reddit-like:scale=0.005", "--workers", "8", "--switch-memory", "100KB", "--json"]


def _run(*extra: str) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k != "NETWEAVE_NO_PROGRESS"}
    return subprocess.run([sys.executable, "-c", SCRIPT, *COMMAND, *extra], capture_output=True, text=True,
                          env=env, timeout=300)


def test_plain_lines_and_heartbeat_off_a_terminal():
    done = _run()
    assert done.returncode == 0, done.stderr
    lines = done.stderr.splitlines()
    assert lines and all(line.startswith("netweave: ") for line in lines), lines
    assert any("partitioning" in line for line in lines)
    assert any(line.startswith("netweave: still working on ina (") for line in lines), lines
    report = json.loads(done.stdout)  # stdout: the one object, untouched by progress
    assert report["run"]["command"] == "netweave " + " ".join(COMMAND)


def test_quiet_silences_progress_but_not_the_result():
    done = _run("--quiet")
    assert done.returncode == 0 and done.stderr == "" and json.loads(done.stdout)["traffic_bytes"] > 0


def test_a_library_call_off_a_terminal_prints_no_progress(capfd, monkeypatch):
    monkeypatch.delenv("NETWEAVE_NO_PROGRESS", raising=False)
    from netweave import progress
    from netweave.graph import load_dataset

    monkeypatch.setattr(progress, "_plain", False)
    monkeypatch.delenv(progress.PLAIN_ENV, raising=False)  # an in-process `netweave` call before this one sets it
    load_dataset("rmat:n=500,m=2000,seed=3")
    with progress.stage("a step"):
        pass
    assert capfd.readouterr().err == ""
    monkeypatch.setattr(progress, "_plain", True)  # what the command line turns on
    with progress.stage("a step"):
        pass
    assert capfd.readouterr().err == "netweave: a step …\n"


def test_run_metadata(tmp_path):
    from netweave.cases import run_cases
    from netweave.run_info import csv_columns, run_line, run_metadata

    run = run_metadata()
    assert set(run) >= {"netweave", "git_commit", "date_utc", "host", "python", "numpy", "numba", "highspy", "torch",
                        "command"}
    assert run["netweave"] in run_line(run) and run["host"] in run_line(run)
    assert csv_columns(run)["run_host"] == run["host"]
    rows = run_cases(_double, (), [{"x": 1}, {"x": 2}], tmp_path / "r.jsonl", workers=1)
    saved = [json.loads(line) for line in (tmp_path / "r.jsonl").read_text().splitlines()]
    assert [r["result"]["y"] for r in rows] == [2, 4]
    assert all(r["run"]["netweave"] == run["netweave"] and r["run"]["case_host"] for r in saved)


def _double(params: dict) -> dict:
    return {"y": 2 * params["x"]}


@pytest.mark.parametrize("argv", [["--version"], ["plan", "--version"]])
def test_version_is_one_line(argv, capsys):
    from netweave.cli import main

    with pytest.raises(SystemExit) as e:
        main(argv)
    out, err = capsys.readouterr()
    if argv == ["--version"]:
        assert (e.value.code or 0) == 0 and out.count("\n") == 1 and out.startswith("netweave ")
    else:  # --version belongs to the root: one usage line
        assert e.value.code == 2 and err.startswith("netweave: error: No such option: --version")
