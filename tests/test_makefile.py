"""The Makefile's two entry points (issue 16): ``make demo`` installs the ``demo`` extra (no triton,
no ray), ``make test`` the ``test`` extra, each behind its own stamp keyed on pyproject.toml, so
that neither install stands for the other (both from the lock: tests/test_lock.py). Checked with ``make -n`` in a copy (nothing installed)."""

import re
import shutil
import subprocess
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]


def _dry(tmp: Path, target: str) -> str:
    done = subprocess.run(["make", "-n", target], cwd=tmp, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    return done.stdout


@pytest.mark.skipif(shutil.which("make") is None, reason="make is not installed")
def test_demo_and_test_install_their_own_extras_behind_their_own_stamps(tmp_path):
    for name in ("Makefile", "pyproject.toml", "constraints.txt"):
        shutil.copy(REPO / name, tmp_path / name)
    demo = re.findall(r'"([^"]+)"', re.search(r"^demo = \[(.*)\]", (REPO / "pyproject.toml").read_text(), re.M)[1])
    assert {"torch==2.13.0", "torch_geometric>=2.5"} <= set(demo)
    assert not any(dep.startswith(("triton", "ray")) for dep in demo)
    assert "-e '.[demo]'" in _dry(tmp_path, "demo") and "-e '.[test]'" in _dry(tmp_path, "test")
    (tmp_path / ".venv").mkdir()
    stamps = [line.split("touch ")[-1] for t in ("demo", "test") for line in _dry(tmp_path, t).splitlines()
              if "touch " in line]
    assert len(stamps) == 2 and stamps[0] != stamps[1]
    (tmp_path / stamps[0]).touch()  # `make demo` has installed: `make test` still installs the test extra
    assert "pip install" not in _dry(tmp_path, "demo") and "-e '.[test]'" in _dry(tmp_path, "test")
    (tmp_path / stamps[1]).touch()
    assert "pip install" not in _dry(tmp_path, "demo") + _dry(tmp_path, "test")
    with (tmp_path / "pyproject.toml").open("a") as f:  # a changed pyproject.toml: both install again
        f.write("\n# changed\n")
    assert "-e '.[demo]'" in _dry(tmp_path, "demo") and "-e '.[test]'" in _dry(tmp_path, "test")
