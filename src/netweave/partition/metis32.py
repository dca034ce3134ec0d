"""METIS with 32-bit indices: the system's ``libmetis`` (Debian's ``libmetis5``, METIS 5.1) through ctypes.

The pymetis wheels build METIS with a 64-bit ``idx_t``. At Reddit's size (233 K vertices, 114 M
directed edges) that METIS needs about 6.4 GB above its input: every coarsened graph keeps its
``xadj``, ``adjncy`` and edge weights in 8-byte integers. A METIS built with 32-bit ``idx_t`` reads
our int32 ``indices`` as they are and keeps its coarsened graphs in half the bytes (2.5 GB above
the input there). Its random stream is drawn at ``idx_t``'s width, so for the same seed its
partitions differ from pymetis's: this is the ``metis32`` partition method, never a silent
substitute for ``metis``.

Recursive bisection up to 8 parts and k-way above, as pymetis does, with METIS's default options
and ``seed``; vertex weights and target part weights as in :func:`~netweave.partition.metis.metis_labels`.
"""

from __future__ import annotations

import ctypes
import ctypes.util
from collections.abc import Sequence
from functools import cache

import numpy as np

from ..errors import NetweaveError
from ..graph.validate import check_csr_bounds

NOPTIONS = 40  # METIS_NOPTIONS
OPTION_SEED = 8  # METIS_OPTION_SEED in metis.h's moptions_et
OK = 1  # METIS_OK; METIS_ERROR_INPUT -2, METIS_ERROR_MEMORY -3, METIS_ERROR -4
ERRORS = {-2: "an input error", -3: "running out of memory", -4: "an error"}
LIBRARIES = ("libmetis.so.5", "libmetis.so")
INSTALL = "install the system METIS (Debian/Ubuntu: apt-get install libmetis5; `make` does so as root) or use --method metis"


@cache
def metis32_library() -> ctypes.CDLL:
    """The system's METIS, checked to have a 32-bit ``idx_t`` (:class:`NetweaveError` if none is usable)."""
    names = [n for n in (ctypes.util.find_library("metis"), *LIBRARIES) if n]
    for name in names:
        try:
            lib = ctypes.CDLL(name)
        except OSError:
            continue
        if _index_bits(lib) == 32:
            return lib
        raise NetweaveError(f"the system METIS ({name}) has 64-bit indices; --method metis32 needs one built "
                            "with IDXTYPEWIDTH 32 (Debian's libmetis5 is); use --method metis")
    raise NetweaveError(f"--method metis32 needs the system METIS library (tried {', '.join(names)}); {INSTALL}")


def _index_bits(lib: ctypes.CDLL) -> int:
    """``idx_t``'s width: ``METIS_SetDefaultOptions`` writes ``NOPTIONS`` of them into a buffer
    twice that size in int32s; a 64-bit METIS overwrites the second half too."""
    probe = np.full(2 * NOPTIONS, 7, dtype=np.int32)
    lib.METIS_SetDefaultOptions(probe.ctypes.data_as(ctypes.c_void_p))
    return 32 if (probe[NOPTIONS:] == 7).all() else 64


def metis32_labels(indptr: np.ndarray, indices: np.ndarray, num_parts: int, seed: int = 0,
                   target_weights: Sequence[float] | None = None,
                   vertex_weights: np.ndarray | None = None) -> np.ndarray:
    """``(n,)`` int32 part of every vertex of a symmetric CSR graph (``indptr`` ``(n + 1,)``,
    ``indices`` ``(nnz,)``), like :func:`~netweave.partition.metis.metis_labels` but with 32-bit METIS."""
    check_csr_bounds(indptr, indices, "32-bit METIS's input", vertex_weights, target_weights, num_parts)
    n = indptr.shape[0] - 1
    if num_parts == 1 or n == 0:
        return np.zeros(n, dtype=np.int32)
    if indices.shape[0] >= 2**31 or num_parts >= 2**31:
        raise NetweaveError(f"{indices.shape[0]:,} adjacency entries exceed 32-bit METIS's indices; use --method metis")
    lib = metis32_library()
    idx = ctypes.c_int32

    def ptr(a: np.ndarray | None):
        return None if a is None else a.ctypes.data_as(ctypes.c_void_p)

    xadj = np.ascontiguousarray(indptr, dtype=np.int32)
    adjncy = np.ascontiguousarray(indices, dtype=np.int32)  # no copy when already int32
    vwgt = None if vertex_weights is None else np.ascontiguousarray(vertex_weights, dtype=np.int32)
    tpwgts = None if target_weights is None else np.ascontiguousarray(target_weights, dtype=np.float32)  # real_t
    options = np.empty(NOPTIONS, dtype=np.int32)
    lib.METIS_SetDefaultOptions(ptr(options))
    options[OPTION_SEED] = seed
    part = np.zeros(n, dtype=np.int32)
    nvtxs, ncon, nparts, objval = idx(n), idx(1), idx(num_parts), idx(0)
    call = lib.METIS_PartGraphRecursive if num_parts <= 8 else lib.METIS_PartGraphKway
    rc = call(ctypes.byref(nvtxs), ctypes.byref(ncon), ptr(xadj), ptr(adjncy), ptr(vwgt), None, None,
              ctypes.byref(nparts), ptr(tpwgts), None, ptr(options), ctypes.byref(objval), ptr(part))
    if rc != OK:
        raise NetweaveError(f"32-bit METIS stopped with {ERRORS.get(rc, f'code {rc}')} partitioning {n:,} vertices "
                            f"into {num_parts} parts; use --method metis")
    return part
