"""``netweave.cases``: cases in-process, in a pool and on a local Ray cluster give the same rows;
finished cases are never redone; errors (a failing case, a bad or unreachable Ray address) are one line."""

import json

import pytest

from netweave.cases import case_id, check_ray_address, run_cases
from netweave.errors import NetweaveError


def square(offset: int, params: dict) -> dict:
    if params["x"] < 0:
        raise NetweaveError(f"x must be >= 0, got {params['x']}")
    return {"y": params["x"] ** 2 + offset}


CASES = [{"x": x} for x in range(6)]


@pytest.mark.parametrize("workers", [1, 2])
def test_rows_in_case_order_and_resume_without_redoing(tmp_path, workers):
    def results(rows):
        return [(r["params"], r["result"]) for r in rows]

    path = tmp_path / "r.jsonl"
    rows = run_cases(square, (1,), CASES, path, workers)
    assert [r["result"]["y"] for r in rows] == [x * x + 1 for x in range(6)] and all(r["seconds"] >= 0 for r in rows)
    lines = path.read_text().splitlines()
    path.write_text("\n".join(lines[:4]) + "\n" + lines[4][:9])  # interrupted mid-line
    ran = []
    again = run_cases(square, (1,), CASES, path, workers, on_result=ran.append)
    assert results(again) == results(rows) and sorted(r["id"] for r in ran) == sorted(json.loads(line)["id"] for line in lines[4:])
    assert results(run_cases(square, (1,), CASES, path, workers, on_result=ran.append)) == results(rows) and len(ran) == 2


def test_duplicate_cases_run_once_and_ids_are_canonical(tmp_path):
    ran = []
    rows = run_cases(square, (0,), [{"x": 2}, {"x": 2}], tmp_path / "d.jsonl", 1, on_result=ran.append)
    assert len(ran) == 1 and len(rows) == 2 and case_id({"a": 1, "b": 2}) == case_id({"b": 2, "a": 1})


@pytest.mark.parametrize("workers", [1, 2])
def test_a_failing_case_is_its_own_error_and_keeps_the_others(tmp_path, workers):
    path = tmp_path / "f.jsonl"
    with pytest.raises(NetweaveError, match="x must be >= 0, got -1"):
        run_cases(square, (0,), [{"x": 1}, {"x": -1}], path, workers)
    if workers == 1:  # in order: the case before the failing one is kept
        assert [json.loads(line)["params"] for line in path.read_text().splitlines()] == [{"x": 1}]
    with pytest.raises(NetweaveError, match="got -3"):
        run_cases(square, (0,), [{"x": -3}], tmp_path / "none.jsonl", workers)
    assert not (tmp_path / "none.jsonl").exists()  # no empty results file left behind


def test_bad_and_unreachable_ray_addresses_are_one_line(tmp_path, closed_port):
    for bad in ("nowhere", "host:port", "http://h:1", ":6379"):
        with pytest.raises(NetweaveError, match="bad Ray address"):
            check_ray_address(bad)
    with pytest.raises(NetweaveError, match=rf"cannot reach a Ray cluster at '127.0.0.1:{closed_port}' \(connection refused\)"):
        run_cases(square, (0,), CASES, tmp_path / "u.jsonl", ray=f"127.0.0.1:{closed_port}")
    with pytest.raises(NetweaveError, match="cannot reach a Ray cluster at 'ray://127.0.0.1"):
        run_cases(square, (0,), CASES, tmp_path / "u.jsonl", ray=f"ray://127.0.0.1:{closed_port}")
    assert not (tmp_path / "u.jsonl").exists()  # nothing ran, nothing written


# -- the pool after a solver, and its workers' lifetime (issue 29) ---------------------------------

def test_a_pool_after_an_in_process_solve_finishes(tmp_path):
    """The README's Python block: an LP/MILP solved in this process, then a sweep in a pool. The
    solver's thread pool once made every forked worker spin forever (and outlive its parent)."""
    import subprocess
    import sys

    code = f"""
from netweave.scenarios import RouteScenario
from netweave.sweep import sweep
RouteScenario(topology="leafspine:leaves=4,spines=4,hosts=4,ina=0.5,pipelines=2,seed=1", workers=8).run()
rows = sweep({{"kind": "route", "grid": {{"algorithm": ["ecmp", "aro"], "seed": [0, 1]}},
              "fixed": {{"topology": "leafspine:leaves=4,spines=4,hosts=4,ina=0.5", "workers": 8}}}},
             {str(tmp_path / 'out')!r}, workers=2)
print(len(rows))
"""
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0 and done.stdout == "4\n", done.stderr[-2000:]


def test_pool_workers_end_with_their_parent(tmp_path):
    """SIGKILL the process that runs a pool: its workers, busy in long cases, end too."""
    import os
    import signal
    import subprocess
    import sys
    import time
    from pathlib import Path

    (tmp_path / "slow.py").write_text("import time\ndef nap(params):\n    time.sleep(params['s'])\n    return {}\n")
    code = ("import sys; sys.path.insert(0, %r)\nimport slow\nfrom netweave.cases import run_cases\n"
            "run_cases(slow.nap, (), [{'s': 300}, {'s': 301}], %r, workers=2)\n") % (str(tmp_path), str(tmp_path / "r.jsonl"))
    parent = subprocess.Popen([sys.executable, "-c", code])
    children = Path(f"/proc/{parent.pid}/task/{parent.pid}/children")
    deadline = time.monotonic() + 60
    while len(children.read_text().split()) < 2 and time.monotonic() < deadline:
        time.sleep(0.1)
    workers = [int(p) for p in children.read_text().split()]
    assert len(workers) >= 2
    time.sleep(0.5)  # the workers have run their initializer
    parent.send_signal(signal.SIGKILL)
    parent.wait()
    deadline = time.monotonic() + 10
    alive = workers
    while alive and time.monotonic() < deadline:
        time.sleep(0.1)
        alive = [p for p in workers if Path(f"/proc/{p}").exists() and "Z" not in Path(f"/proc/{p}/stat").read_text().split()[2]]
    for p in alive:  # a failing test leaves nothing either
        os.kill(p, signal.SIGKILL)
    assert not alive
