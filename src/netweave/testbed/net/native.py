"""Small native helpers built at first use and cached by the hash of what built them.

:func:`cached_build` is the cache itself (``$XDG_CACHE_HOME/netweave/<kind>``, else
``~/.cache/netweave/<kind>``): an artefact is named by its stem and the hash of its source and
flags, is built into a temporary file and renamed into place, so concurrent first uses never see
half a file. :func:`compile_shared` builds a C file of this package (``netweave/testbed``) into a
shared library with the system C compiler (``$CC``, else ``cc``, ``gcc``, ``clang``); without a
compiler it raises :class:`NoCompiler`, which callers turn into their slow path.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
from collections.abc import Callable, Sequence
from importlib import resources
from pathlib import Path

from ...errors import NetweaveError

COMPILERS = ("cc", "gcc", "clang")
SHARED_FLAGS = ("-O2", "-shared", "-fPIC", "-Wall")


class NoCompiler(NetweaveError):
    """No C compiler was found (``$CC``, ``cc``, ``gcc``, ``clang``)."""


def cache_root(kind: str) -> Path:
    """``$XDG_CACHE_HOME/netweave/<kind>`` (else ``~/.cache/netweave/<kind>``)."""
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "netweave" / kind


def package_source(name: str) -> Path:
    """A source file shipped in the ``netweave.testbed`` package (e.g. ``net/batchio.c``, ``agg/bpf/ina_agg.bpf.c``)."""
    return Path(str(resources.files("netweave.testbed").joinpath(*name.split("/"))))


def digest(*parts: bytes | str) -> str:
    h = hashlib.sha256()
    for part in parts:
        h.update(part.encode() if isinstance(part, str) else part)
        h.update(b"\0")
    return h.hexdigest()[:16]


def cached_path(kind: str, stem: str, key: str, suffix: str, cache: Path | None = None) -> Path:
    """Where :func:`cached_build` keeps the artefact ``<stem>-<key><suffix>`` (present or not)."""
    return (cache or cache_root(kind)) / f"{stem}-{key}{suffix}"


def cached_build(kind: str, stem: str, key: str, suffix: str, build: Callable[[Path], None],
                 cache: Path | None = None) -> Path:
    """The artefact ``<cache>/<stem>-<key><suffix>``; when absent, ``build(tmp)`` writes it to a
    temporary path that is then renamed into place (a failed build leaves nothing behind)."""
    out = cached_path(kind, stem, key, suffix, cache)
    if out.exists():
        return out
    cache = out.parent
    cache.mkdir(parents=True, exist_ok=True)
    tmp = cache / f".{stem}-{key}.{os.getpid()}{suffix}"
    try:
        build(tmp)
        tmp.replace(out)
    finally:
        tmp.unlink(missing_ok=True)
    return out


def c_compiler() -> str | None:
    """The C compiler to use: ``$CC`` (its first word), else the first of cc, gcc, clang found."""
    for name in ([os.environ["CC"].split()[0]] if os.environ.get("CC", "").strip() else []) + list(COMPILERS):
        path = shutil.which(name)
        if path:
            return path
    return None


def compile_shared(source_name: str, flags: Sequence[str] = (), cache: Path | None = None) -> Path:
    """``source_name`` (a C file of ``netweave.testbed``) compiled into a shared library
    (``-O2 -shared -fPIC`` + ``flags``) at first use, cached under ``cache_root("native")`` by the
    hash of the source, the flags and the compiler. Raises :class:`NoCompiler` without a C compiler
    and :class:`NetweaveError` with the compiler's first error line if it fails."""
    src = package_source(source_name)
    compiler = c_compiler()
    if compiler is None:
        raise NoCompiler(f"no C compiler ({', '.join(COMPILERS)}) to build {src.name}; install gcc")
    args = [*SHARED_FLAGS, *flags]
    key = digest(src.read_bytes(), " ".join(args), compiler)

    def build(tmp: Path) -> None:
        done = subprocess.run([compiler, *args, str(src), "-o", str(tmp)], capture_output=True, text=True)
        if done.returncode:
            first = next((line for line in done.stderr.splitlines() if "error" in line), done.stderr.strip()[:200])
            raise NetweaveError(f"{Path(compiler).name} could not compile {src.name}: {first}")

    return cached_build("native", src.name.split(".")[0], key, ".so", build, cache)
