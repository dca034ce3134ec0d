"""``netweave repro``: every name at a tiny scale writes its CSV, plot and paper-vs-netweave table;
unknown names and a missing GPU are one line."""

import pytest

from netweave.errors import NetweaveError
from netweave.repro import REPROS, reproduce


@pytest.mark.parametrize("name", [n for n in REPROS if n != "mgg-fig11"])
def test_every_repro_at_a_tiny_scale(name, tmp_path):
    r = reproduce(name, tmp_path, scale="tiny")
    assert r["rows"] and r["paper"] and r["netweave"]
    assert (tmp_path / f"{name}.png").read_bytes()[:4] == b"\x89PNG"
    text = (tmp_path / f"{name}.md").read_text()
    assert "| paper |" in text and "| netweave |" in text and (tmp_path / f"{name}.csv").read_text().count("\n") >= 2


def test_mgg_repro_needs_a_gpu_or_a_recorded_run(tmp_path):
    torch = pytest.importorskip("torch")
    if torch.cuda.is_available():
        pytest.skip("a GPU is present")
    from pathlib import Path
    recorded = Path(__file__).resolve().parents[1] / "benchmarks" / "results" / "mgg.json"
    if recorded.exists():
        assert reproduce("mgg-fig11", tmp_path, scale="tiny")["rows"]
    else:
        with pytest.raises(NetweaveError, match="needs a GPU"):
            reproduce("mgg-fig11", tmp_path, scale="tiny")


def test_unknown_repro_and_list(capsys):
    with pytest.raises(NetweaveError, match="--list"):
        reproduce("dgcl-table99", ".")
    from netweave.cli import main
    with pytest.raises(SystemExit) as e:
        main(["repro", "--list", "--json"])
    import json
    assert (e.value.code or 0) == 0 and len(json.loads(capsys.readouterr().out)["repros"]) == 7
