"""Refresh ``constraints.txt``, the lock file every install of netweave's own commands uses.

``make demo``, ``make test`` and CI install with ``pip install -c constraints.txt``, so the two
README commands give the same working set next month as today: a library's new release cannot
change what they install (one did: highspy 1.16 began printing a banner on stdout). People who
install netweave as a library get ``pyproject.toml``'s open ranges instead.

``make lock`` (this script) resolves ``.[test]`` — the largest set: it holds ``demo``, ``train``,
``kernels`` and ``testbed`` — in a fresh virtual environment with today's releases, and writes every
installed distribution, pip and setuptools included, pinned with ``==``. Review the diff, run
``make test`` on it, commit it. ``tests/test_lock.py`` checks that the lock satisfies pyproject.toml
and pins the whole dependency closure.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
LOCK = REPO / "constraints.txt"
EXTRAS = "test"
HEADER = """\
# netweave's lock: every distribution `make demo`, `make test` and CI install, pinned.
# Made by `make lock` (scripts/lock.py) from pyproject.toml's `{extras}` extra; do not edit by hand.
# Local version labels (torch's +cpu) are dropped: `==2.13.0` matches the CPU and the CUDA builds.
"""


def frozen(python: str) -> dict[str, str]:
    """``{name: version}`` of every distribution installed for ``python`` except netweave itself."""
    out = subprocess.run([python, "-m", "pip", "freeze", "--all", "--exclude-editable"], capture_output=True,
                         text=True, check=True).stdout
    pins = {}
    for line in out.splitlines():
        name, sep, version = line.strip().partition("==")
        if sep and name.lower() != "netweave":
            pins[name] = version
    return pins


def render(pins: dict[str, str], extras: str = EXTRAS) -> str:
    """The lock file's text: the header, then ``name==version`` sorted by name, without local labels."""
    lines = [f"{name}=={version.split('+')[0]}" for name, version in sorted(pins.items(), key=lambda kv: kv[0].lower())]
    return HEADER.format(extras=extras) + "\n".join(lines) + "\n"


def resolve(python: str = sys.executable) -> dict[str, str]:
    """Install ``.[EXTRAS]`` with today's releases in a fresh venv (made with ``python``); its pins."""
    with tempfile.TemporaryDirectory(prefix="netweave-lock-") as tmp:
        venv = Path(tmp, "venv")
        subprocess.run([python, "-m", "venv", str(venv)], check=True)
        pip = [str(venv / "bin" / "python"), "-m", "pip", "install", "-q"]
        subprocess.run([*pip, "--upgrade", "pip", "setuptools"], check=True)
        subprocess.run([*pip, "-e", f"{REPO}[{EXTRAS}]"], check=True)
        return frozen(str(venv / "bin" / "python"))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--python", default=sys.executable, help="the interpreter the venv is made with")
    parser.add_argument("--out", type=Path, default=LOCK)
    args = parser.parse_args()
    text = render(resolve(args.python))
    old = args.out.read_text() if args.out.exists() else ""
    args.out.write_text(text)
    changed = sorted(set(text.splitlines()) ^ set(old.splitlines()))
    print(f"wrote {args.out}: {len(text.splitlines()) - 3} pins, {len(changed)} lines changed", file=sys.stderr)


if __name__ == "__main__":
    main()
