"""Pack what a machine without package registries or clang needs to run the testbed from a checkout.

The testbed's benches belong on a machine with many cores (BENCHMARKS.md: a 2-core machine's
switch shares its CPUs with the eight workers), and such a machine is often one that reaches no
package index and has no clang: a lent server, a container image. This script, run on a machine
that has them (Debian's clang, libbpf and iproute2, as the Makefile installs), writes a folder
(``--out``, default ``.kit``) to copy beside the checkout there:

* ``cache/netweave/bpf/``: every BPF program of :data:`netweave.testbed.programs.PROGRAMS`,
  compiled from this checkout's sources (the names carry the sources' hashes, so a checkout that
  differs compiles again or says it needs clang: an object never stands for other source);
* ``lib/``: ``libbpf.so.1`` and the libraries it and the tools below load beyond the C library;
* ``bin/``: ``ip``, ``tc`` and ``bpftool``, programs (not wrapper scripts), used only where the
  machine has none: ``env.sh`` puts them last on ``PATH``;
* ``wheels/``: ``--wheels NAME …`` at the lock's versions (``constraints.txt``) for
  ``--python`` (the machine's Python, e.g. 3.12): what that machine's Python lacks;
* ``data/``: ``--data PATH …``, files of the real datasets (``$NETWEAVE_SHARED_DATA``, else
  ``../shared/data``) by their paths there (``gnn_benchmark_npz/amazon_cs.npz``);
* ``env.sh``: ``source .kit/env.sh`` there, from the checkout's root, unpacks the wheels into
  ``.kit/site`` (as ``pip --target`` would, without pip), puts on the loader's path only the
  libraries of ``lib/`` that machine lacks (its own programs keep its own), and sets
  ``PYTHONPATH`` (the checkout's ``src`` first), ``PATH``, ``XDG_CACHE_HOME`` (the objects'
  cache) and ``NETWEAVE_SHARED_DATA`` where the kit has data.

The kit is built beside ``--out`` and renamed into place whole, replacing an earlier kit there;
what fails on the way leaves nothing. Then, there, as root, from the checkout's root:
``source .kit/env.sh && python3 benchmarks/bench_testbed_gnn.py …``.

    python scripts/offline_kit.py --python 3.12 --wheels pymetis highspy --data gnn_benchmark_npz/amazon_cs.npz
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
SHARED = Path(os.environ.get("NETWEAVE_SHARED_DATA") or REPO.parent / "shared" / "data")
LOCK = REPO / "constraints.txt"
TOOLS = ("ip", "tc", "bpftool")
# the C library's own parts: every Linux has them, in the version its other programs need
SYSTEM = re.compile(r"^(libc|libm|libdl|libpthread|librt|libresolv|ld-linux[-\w]*)\.so")
PLATFORMS = ("manylinux_2_28_x86_64", "manylinux_2_27_x86_64", "manylinux_2_17_x86_64", "manylinux2014_x86_64",
             "manylinux1_x86_64")
ENV_SH = """\
# netweave's offline kit (scripts/offline_kit.py): source it from the checkout's root.
K="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
if [ ! -f "$PWD/src/netweave/__init__.py" ]; then
    echo "offline kit: error: source $K/env.sh from the root of a netweave checkout (here: $PWD)" >&2
    return 2
fi
# the wheels, unpacked as pip --target would (no pip needed there)
if [ -d "$K/wheels" ] && [ ! -e "$K/site/.unpacked" ]; then
    python3 -c 'import sys, zipfile; [zipfile.ZipFile(w).extractall(sys.argv[1]) for w in sys.argv[2:]]' \\
        "$K/site" "$K"/wheels/*.whl && touch "$K/site/.unpacked" || return 1
fi
# only the libraries this machine lacks go on the loader's path: its own stay its programs'
mkdir -p "$K/ldpath"
for f in "$K"/lib/*; do
    n="$(basename "$f")"
    if ! ldconfig -p 2>/dev/null | grep -q "^[[:space:]]*$n (libc6,x86-64)"; then ln -sf "$f" "$K/ldpath/$n"; fi
done
export PYTHONPATH="$PWD/src:$K/site${PYTHONPATH:+:$PYTHONPATH}"
export LD_LIBRARY_PATH="$K/ldpath${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
export PATH="$PATH:$K/bin"
export XDG_CACHE_HOME="$K/cache"
if [ -d "$K/data" ]; then export NETWEAVE_SHARED_DATA="$K/data"; fi
"""
ELF = b"\x7fELF"


class KitError(Exception):
    """What stops the kit, in one line."""


def canonical(name: str) -> str:
    """A distribution's name as the index compares them (PEP 503: ``Py_Yaml`` is ``py-yaml``)."""
    return re.sub(r"[-_.]+", "-", name).lower()


def lock_versions() -> dict[str, str]:
    """``{canonical name: version}`` from the lock."""
    pins = {}
    for line in LOCK.read_text().splitlines():
        name, sep, version = line.split("#")[0].strip().partition("==")
        if sep:
            pins[canonical(name)] = version
    return pins


def shared_libraries(path: Path) -> list[Path]:
    """The libraries ``path`` loads (``ldd``), less the C library's own."""
    done = subprocess.run(["ldd", str(path)], capture_output=True, text=True)
    found = []
    for line in done.stdout.splitlines():
        if "not found" in line:
            raise KitError(f"{path} needs {line.split()[0]}, which is not installed here")
        m = re.match(r"\s*(\S+) => (/\S+)", line)
        if m and not SYSTEM.match(m.group(1)):
            found.append(Path(m.group(2)))
    return found


def find_libbpf() -> Path:
    """Where `libbpf.so.1` is installed here (`ldconfig -p`)."""
    for line in subprocess.run(["ldconfig", "-p"], capture_output=True, text=True).stdout.splitlines():
        m = re.match(r"\s*libbpf\.so\.1 \(libc6,x86-64\).*=> (/\S+)", line)
        if m:
            return Path(m.group(1))
    raise KitError("libbpf.so.1 is not installed here; apt-get install libbpf-dev (or make system-packages)")


def compile_objects(cache: Path) -> list[Path]:
    """Every program of the testbed compiled into ``cache`` (``<kit>/cache/netweave/bpf``)."""
    from netweave.errors import NetweaveError
    from netweave.testbed.net.bpf import compile_program
    from netweave.testbed.programs import PROGRAMS

    out = []
    for p in PROGRAMS:
        try:
            out.append(compile_program(p.source, p.define_values(), cache))  # compiled afresh into the kit
        except NetweaveError as e:
            raise KitError(str(e)) from None
    return out


def find_tools(tools: bool) -> list[Path]:
    """``ip``, ``tc`` and ``bpftool`` as installed here (none without ``tools``)."""
    found = []
    for name in TOOLS if tools else ():
        path = shutil.which(name)
        if path is None:
            raise KitError(f"`{name}` is not installed here; apt-get install iproute2 bpftool (or --no-tools)")
        with open(path, "rb") as f:
            if f.read(4) != ELF:
                raise KitError(f"{path} is not a program (a wrapper script?); give one built for this kernel, "
                               "or --no-tools")
        found.append(Path(path))
    return found


def copy_binaries(kit: Path, libbpf: Path, tools: list[Path]) -> list[Path]:
    """``libbpf`` and the ``tools`` with the libraries they load, into ``lib/`` and ``bin/``."""
    (kit / "lib").mkdir(parents=True, exist_ok=True)
    libraries = [libbpf, *shared_libraries(libbpf)]
    if tools:
        (kit / "bin").mkdir()
    out = []
    for path in tools:
        out.append(Path(shutil.copy2(path, kit / "bin" / path.name)))
        libraries += shared_libraries(path)
    for lib in dict.fromkeys(libraries):  # each once, by the name programs ask for (libbpf.so.1)
        out.append(Path(shutil.copyfile(lib, kit / "lib" / lib.name)))
    return out


def wheel_specs(names: list[str]) -> list[str]:
    """``NAME==VERSION`` of each of ``names`` at the lock's version."""
    pins = lock_versions()
    specs = []
    for name in names:
        key = canonical(name)
        if key not in pins:
            raise KitError(f"--wheels {name}: not in the lock ({LOCK.name}); name a distribution netweave installs")
        specs.append(f"{name}=={pins[key]}")
    return specs


def download_wheels(kit: Path, specs: list[str], python: str) -> list[Path]:
    """``specs`` (:func:`wheel_specs`) as binary wheels for CPython ``python`` on x86-64 Linux."""
    if not specs:
        return []
    dest = kit / "wheels"
    dest.mkdir(parents=True, exist_ok=True)
    cmd = [sys.executable, "-m", "pip", "download", "-q", "--no-deps", "--only-binary=:all:", "--python-version",
           python, "--implementation", "cp", "-d", str(dest), *[a for p in PLATFORMS for a in ("--platform", p)], *specs]
    done = subprocess.run(cmd, capture_output=True, text=True)
    if done.returncode:
        last = (done.stderr.strip().splitlines() or ["pip failed"])[-1]
        raise KitError(f"pip could not download {' '.join(specs)} for Python {python}: {last}")
    return sorted(dest.glob("*.whl"))


def data_files(paths: list[str]) -> list[Path]:
    """``paths`` (relative to the real datasets' folder) checked: plain relative paths of files there."""
    files = []
    for rel in paths:
        path = SHARED / rel
        if Path(rel).is_absolute() or ".." in Path(rel).parts or not path.is_file():
            raise KitError(f"--data {rel}: not a file under {SHARED}; give a path relative to it "
                           "(set NETWEAVE_SHARED_DATA where the datasets live)")
        files.append(path)
    return files


def copy_data(kit: Path, files: list[Path]) -> list[Path]:
    out = []
    for path in files:
        target = kit / "data" / path.relative_to(SHARED)
        target.parent.mkdir(parents=True, exist_ok=True)
        out.append(Path(shutil.copyfile(path, target)))
    return out


def is_kit(folder: Path) -> bool:
    """Whether ``folder`` is a kit this script wrote (its ``env.sh`` begins with the kit's line):
    the only folder it replaces."""
    env = folder / "env.sh"
    return env.is_file() and env.read_text(errors="replace").startswith(ENV_SH.splitlines()[0])


def build_kit(kit: Path, python: str, wheels: list[str], tools: bool = True,
              data: list[str] = ()) -> dict[str, list[Path]]:
    """Write the kit into ``kit`` (replacing an earlier kit there); returns what it holds, by part.
    Checks the wheels' names, the data's paths, this machine's libbpf and tools before it writes
    anything, and builds beside ``kit``: a failure leaves no half kit."""
    specs, files = wheel_specs(wheels), data_files(list(data))
    libbpf, found = find_libbpf(), find_tools(tools)
    if kit.exists() and not is_kit(kit):
        raise KitError(f"--out {kit}: exists and is not a kit; name a new folder")
    new = kit.with_name(f".{kit.name}.new-{os.getpid()}")  # the whole kit, or nothing: renamed at the end
    try:
        parts = {"objects": compile_objects(new / "cache" / "netweave" / "bpf"),
                 "binaries": copy_binaries(new, libbpf, found),
                 "wheels": download_wheels(new, specs, python),
                 "data files": copy_data(new, files)}
        (new / "env.sh").write_text(ENV_SH)
        if kit.exists():
            shutil.rmtree(kit)  # an earlier kit (is_kit): its wheels and objects would mix with these
        new.rename(kit)
    finally:
        shutil.rmtree(new, ignore_errors=True)
    return {part: [kit / path.relative_to(new) for path in paths] for part, paths in parts.items()}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default=".kit", help="the kit's folder (default .kit, which git ignores); an earlier kit there is replaced")
    ap.add_argument("--python", default="3.12", help="the other machine's Python, MAJOR.MINOR (default 3.12)")
    ap.add_argument("--wheels", nargs="*", default=[], metavar="NAME",
                    help="distributions that machine's Python lacks (e.g. pymetis highspy), at the lock's versions")
    ap.add_argument("--data", nargs="*", default=[], metavar="PATH",
                    help=f"files of the real datasets to take, relative to {SHARED} ($NETWEAVE_SHARED_DATA)")
    ap.add_argument("--no-tools", action="store_true", help="leave out ip, tc and bpftool (that machine has them)")
    args = ap.parse_args(argv)
    if not re.fullmatch(r"3\.\d{1,2}", args.python):
        print(f"offline_kit: error: --python {args.python!r}: give MAJOR.MINOR, e.g. 3.12", file=sys.stderr)
        return 2
    kit = Path(args.out).resolve()
    try:
        parts = build_kit(kit, args.python, args.wheels, tools=not args.no_tools, data=args.data)
    except KitError as e:
        print(f"offline_kit: error: {e}", file=sys.stderr)
        return 2
    size = sum(f.stat().st_size for f in kit.rglob("*") if f.is_file())
    print(f"{kit}: {', '.join(f'{len(v)} {k}' for k, v in parts.items())}, {size / 2**20:.1f} MiB; "
          f"there: source {Path(args.out) / 'env.sh'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
