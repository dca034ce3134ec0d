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
