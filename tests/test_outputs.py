"""Output paths are checked before any work; a failed run leaves nothing behind (issue 17)."""

import os

import pytest

from netweave.cli import main
from netweave.errors import NetweaveError
from netweave.outputs import check_output_dir, check_output_file, output_dir


def test_file_checks_name_the_option_and_the_problem(tmp_path):
    check_output_file(tmp_path / "ok.npz", "--out")
    check_output_file(None, "--out")
    for path, message in ((tmp_path / "no" / "x.npz", "does not exist"), (tmp_path, "is a folder"),
                          ("", "an empty path")):
        with pytest.raises(NetweaveError, match=message):
            check_output_file(path, "--out")
    (tmp_path / "f").write_text("x")
    with pytest.raises(NetweaveError, match="is not a folder"):
        check_output_file(tmp_path / "f" / "x.png", "--plot")
    with pytest.raises(NetweaveError, match="is a file, not a folder"):
        check_output_dir(tmp_path / "f", "--report")
    assert sorted(os.listdir(tmp_path)) == ["f"]  # nothing created


@pytest.mark.skipif(os.geteuid() == 0, reason="root may write anywhere")
def test_a_read_only_folder_is_refused(tmp_path):
    tmp_path.chmod(0o500)
    try:
        with pytest.raises(NetweaveError, match="permission denied"):
            check_output_file(tmp_path / "x.npz", "--out")
    finally:
        tmp_path.chmod(0o700)


def test_output_dir_removes_what_a_failing_run_created_and_left_empty(tmp_path):
    with pytest.raises(RuntimeError):
        with output_dir(tmp_path / "new"):
            raise RuntimeError("the first case failed")
    assert not (tmp_path / "new").exists()
    (tmp_path / "old").mkdir()
    with pytest.raises(RuntimeError):
        with output_dir(tmp_path / "old"):
            raise RuntimeError
    assert (tmp_path / "old").is_dir()  # it existed before: kept
    with output_dir(tmp_path / "kept") as d:
        (d / "results.jsonl").write_text("{}\n")
    assert (tmp_path / "kept" / "results.jsonl").exists()


@pytest.mark.parametrize("argv, option", [
    (["ina", "cora", "--workers", "4", "--timeline", "tl.csv", "--plot", "{missing}/x.png"], "--plot"),
    (["train", "cora", "--epochs", "1", "--dump-logits", "{missing}/l.npy"], "--dump-logits"),
    (["plan", "cora", "--topology", "dgx1", "--out", "{missing}/p.npz"], "--out"),
    (["partition", "cora", "--parts", "2", "--out", "{missing}/p.npz"], "--out"),
    (["route", "--topology", "fattree:k=4", "--workers", "2", "--out", "{missing}/r.json"], "--out"),
    (["topology", "export", "dgx1", "--out", "{missing}/t.yaml"], "--out"),
    (["compare", "--sections", "routing", "--report", "{missing}/r"], "--report"),
    (["repro", "aro-fig7", "--scale", "tiny", "--out", "{missing}/r"], "--out"),
])
def test_a_bad_output_path_fails_first_and_writes_nothing(tmp_path, monkeypatch, capsys, argv, option):
    monkeypatch.chdir(tmp_path)
    with pytest.raises(SystemExit) as e:
        main([a.format(missing=tmp_path / "missing") for a in argv])
    err = capsys.readouterr().err.strip().splitlines()
    assert e.value.code == 2 and len(err) == 1 and err[0].startswith(f"netweave: error: {option} ")
    assert "does not exist" in err[0] and os.listdir(tmp_path) == []  # not even tl.csv


def test_a_sweep_whose_first_case_fails_leaves_no_folder(tmp_path, capsys):
    (tmp_path / "s.yaml").write_text("kind: ina\ngrid: {seed: [0]}\nfixed: {dataset: nosuch.txt, workers: 2}\n")
    with pytest.raises(SystemExit) as e:
        main(["sweep", str(tmp_path / "s.yaml"), "--out", str(tmp_path / "out"), "--workers", "1"])
    assert e.value.code == 2 and "unknown dataset 'nosuch.txt'" in capsys.readouterr().err
    assert sorted(os.listdir(tmp_path)) == ["s.yaml"]
