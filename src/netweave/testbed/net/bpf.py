"""BPF programs of the testbed: compiled with clang at first use, loaded through libbpf.

* :func:`compile_program` builds a program shipped in this package (``net/bpf/impair.bpf.c``,
  ``agg/bpf/ina_agg.bpf.c``) with ``-D`` defines into an object, cached by the hash of the source
  and the defines (:func:`~.native.cached_build`);
* :func:`libbpf` is ``libbpf.so.1`` through ctypes, with the signatures the loaders use.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import os
import shutil
import subprocess
from pathlib import Path

from ...errors import NetweaveError
from .native import cached_build, digest, package_source


def compile_program(source: str, defines: dict[str, int] | None = None, cache: Path | None = None) -> Path:
    """The BPF object of ``source`` (a path in the ``netweave.testbed`` package, e.g.
    ``agg/bpf/ina_agg.bpf.c``) with ``-D`` ``defines``, compiled with clang at first use."""
    src = package_source(source)
    flags = [f"-D{k}={int(v)}" for k, v in sorted((defines or {}).items())]
    clang = shutil.which("clang")
    if clang is None:
        raise NetweaveError("the testbed's BPF programs need clang; install it with apt-get install clang llvm "
                            "libbpf-dev (or use --dataplane user)")

    def build(tmp: Path) -> None:
        arch = os.uname().machine
        done = subprocess.run([clang, "-O2", "-g", "-target", "bpf", f"-I/usr/include/{arch}-linux-gnu", *flags, "-c",
                               str(src), "-o", str(tmp)], capture_output=True, text=True)
        if done.returncode:
            first = next((l for l in done.stderr.splitlines() if "error" in l), done.stderr.strip()[:200])
            raise NetweaveError(f"clang could not compile {src.name}: {first}; install libbpf-dev (bpf_helpers.h)")

    return cached_build("bpf", src.name.split(".")[0], digest(src.read_bytes(), " ".join(flags)), ".o", build, cache)


RING_CALLBACK = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_size_t)


def libbpf() -> ctypes.CDLL:
    """``libbpf.so.1`` with the argument and result types of the functions the loaders call."""
    name = ctypes.util.find_library("bpf") or "libbpf.so.1"
    try:
        lib = ctypes.CDLL(name, use_errno=True)
    except OSError:
        raise NetweaveError("the XDP data plane needs libbpf (libbpf.so.1); install it with apt-get install "
                            "libbpf-dev") from None
    vp, i, u32 = ctypes.c_void_p, ctypes.c_int, ctypes.c_uint32
    for fn, res, args in (("bpf_object__open_file", vp, [ctypes.c_char_p, vp]), ("bpf_object__load", i, [vp]),
                          ("bpf_object__close", None, [vp]), ("bpf_object__find_map_by_name", vp, [vp, ctypes.c_char_p]),
                          ("bpf_object__find_program_by_name", vp, [vp, ctypes.c_char_p]),
                          ("bpf_map__set_max_entries", i, [vp, u32]), ("bpf_map__fd", i, [vp]),
                          ("bpf_program__attach_xdp", vp, [vp, i]), ("bpf_link__destroy", i, [vp]),
                          ("bpf_map_update_elem", i, [i, vp, vp, ctypes.c_uint64]),
                          ("bpf_map_lookup_elem", i, [i, vp, vp]), ("bpf_map_delete_elem", i, [i, vp]),
                          ("libbpf_num_possible_cpus", i, []),
                          ("ring_buffer__new", vp, [i, vp, vp, vp]), ("ring_buffer__poll", i, [vp, i]),
                          ("ring_buffer__free", None, [vp])):
        f = getattr(lib, fn)
        f.restype, f.argtypes = res, args
    return lib
