"""The lock file (issue 29: installs that do not drift). ``make demo``, ``make test`` and CI install
from ``constraints.txt``; it must satisfy pyproject.toml's ranges and pin netweave's whole
dependency closure, so that no release made after the lock can enter a fresh install. A highspy
release once did (a banner on stdout) while CI, on an older machine, stayed green."""

from __future__ import annotations

import importlib.metadata as md
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name
from packaging.version import Version

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "scripts"))
import lock  # noqa: E402  (scripts/lock.py, what `make lock` runs)

INSTALLED_EXTRAS = ("test", "demo")  # make test, make demo


def pins() -> dict[str, str]:
    out = {}
    for line in (REPO / "constraints.txt").read_text().splitlines():
        if line.strip() and not line.startswith("#"):
            name, sep, version = line.partition("==")
            assert sep and version and "+" not in version, f"not a pin: {line!r}"
            out[canonicalize_name(name)] = version
    return out


def closure(extras: tuple[str, ...]) -> set[str]:
    """Every distribution netweave needs with ``extras``, transitively, as installed here."""
    seen: set[str] = set()
    todo = [(req, extra) for req in md.requires("netweave") or [] for extra in ("", *extras)]
    while todo:
        text, extra = todo.pop()
        req = Requirement(text)
        if req.marker and not req.marker.evaluate({"extra": extra}):
            continue
        name = canonicalize_name(req.name)
        if name in seen:
            continue
        seen.add(name)
        try:
            deps = md.requires(req.name) or []
        except md.PackageNotFoundError:
            continue  # an optional platform dependency not installed here; checked by name below
        todo += [(dep, e) for dep in deps for e in ("", *req.extras)]
    return seen


def test_the_lock_satisfies_pyproject():
    locked = pins()
    for text in md.requires("netweave") or []:
        req = Requirement(text)
        extra = re.search(r'extra == "([^"]+)"', str(req.marker or ""))
        if extra and extra[1] not in INSTALLED_EXTRAS:
            continue  # ray[default] and the other extras are not what make installs
        name = canonicalize_name(req.name)
        assert name in locked, f"{req.name} ({text}) is not in constraints.txt: run `make lock`"
        assert req.specifier.contains(Version(locked[name]), prereleases=True), \
            f"constraints.txt pins {req.name}=={locked[name]}, outside pyproject's {req.specifier}: run `make lock`"


def test_the_lock_pins_the_whole_closure_and_this_install_follows_it():
    """Every distribution netweave[test] needs is pinned, and the one installed here (by `make
    test`, from the lock) has the pinned version."""
    locked = pins()
    for name in sorted(closure(INSTALLED_EXTRAS)):
        assert name in locked, f"{name} is needed by netweave[test] but not pinned: run `make lock`"
        installed = Version(md.version(name)).public
        assert installed == locked[name], f"{name} {installed} installed, {locked[name]} locked"
    assert {"pip", "setuptools"} <= set(locked)


def test_render_pins_sorted_without_local_labels():
    text = lock.render({"torch": "2.13.0+cpu", "Babel": "2.1", "attrs": "26.1.0"})
    body = [line for line in text.splitlines() if not line.startswith("#")]
    assert body == ["attrs==26.1.0", "Babel==2.1", "torch==2.13.0"]


def test_the_lock_is_what_lock_py_writes_for_this_install():
    """The committed file is the render of an install of it (no hand edits, nothing missing)."""
    here = {name: version for name, version in lock.frozen(sys.executable).items()
            if canonicalize_name(name) in pins()}
    assert lock.render(here) == (REPO / "constraints.txt").read_text()


@pytest.mark.skipif(shutil.which("make") is None, reason="make is not installed")
def test_make_installs_from_the_lock(tmp_path):
    for name in ("Makefile", "pyproject.toml", "constraints.txt"):
        shutil.copy(REPO / name, tmp_path / name)
    for target in ("demo", "test"):
        dry = subprocess.run(["make", "-n", target], cwd=tmp_path, capture_output=True, text=True, timeout=60).stdout
        installs = [line for line in dry.splitlines() if "pip install" in line]
        assert len(installs) == 2 and all("-c constraints.txt" in line for line in installs), dry
        assert "--upgrade" not in dry and "--no-build-isolation" in installs[1]  # setuptools from the lock too
    dry = subprocess.run(["make", "-n", "lock"], cwd=tmp_path, capture_output=True, text=True, timeout=60).stdout
    assert "scripts/lock.py" in dry
