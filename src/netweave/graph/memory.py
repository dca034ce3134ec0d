"""Memory this process may still use, and a one-line refusal for requests that cannot fit.

A generator asked for ``rmat:n=100000000000`` or an archive member that claims terabytes should
fail before it allocates, with the estimate and a way out, not end in a ``MemoryError`` traceback
(or in swap). The limit is the smallest of what the kernel reports as available
(``MemAvailable``), the cgroup's ``memory.max`` less its ``memory.current``, and the address-space
limit (``RLIMIT_AS``) less what this process has mapped already.
"""

from __future__ import annotations

import os
import resource
from pathlib import Path

from ..errors import NetweaveError

GB = 1e9


def _read_int(path: str) -> int | None:
    """An integer file such as ``memory.max`` (``None`` when absent or ``max``)."""
    try:
        text = Path(path).read_text().split()[0]
    except (OSError, IndexError):
        return None
    return int(text) if text.isdigit() else None


def _meminfo_kb(key: str, path: str = "/proc/meminfo") -> int | None:
    """One ``key:  N kB`` line of a ``/proc`` status file, in kB."""
    try:
        with open(path) as fh:
            for line in fh:
                if line.startswith(key + ":"):
                    return int(line.split()[1])
    except (OSError, ValueError, IndexError):
        pass
    return None


def available_bytes(this_process: bool = True) -> int:
    """Bytes this process can still allocate (a best estimate; never negative). With
    ``this_process=False``: what the machine (and its cgroup) can still give to new processes, each
    with an address space of its own, so this process's ``RLIMIT_AS`` does not apply."""
    limits = []
    avail_kb = _meminfo_kb("MemAvailable")
    if avail_kb is not None:
        limits.append(avail_kb * 1024)
    else:
        try:
            limits.append(os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE"))
        except (ValueError, OSError):
            pass
    cg_max, cg_now = _read_int("/sys/fs/cgroup/memory.max"), _read_int("/sys/fs/cgroup/memory.current")
    if cg_max is not None:
        limits.append(cg_max - (cg_now or 0))
    soft, _ = resource.getrlimit(resource.RLIMIT_AS)
    if this_process and soft != resource.RLIM_INFINITY:
        mapped_kb = _meminfo_kb("VmSize", "/proc/self/status") or 0
        limits.append(soft - mapped_kb * 1024)
    return max(0, min(limits)) if limits else 2**62


def check_memory(what: str, nbytes: float, fix: str, this_process: bool = True) -> None:
    """Raise a one-line :class:`NetweaveError` when ``nbytes`` exceeds :func:`available_bytes`.

    ``what`` names the request (``rmat:n=…,m=…``) and ``fix`` says how to make it smaller;
    ``this_process=False`` for memory that new processes will hold.
    """
    free = available_bytes() if this_process else available_bytes(this_process=False)
    if nbytes > free:
        raise NetweaveError(f"{what}: needs about {nbytes / GB:,.1f} GB of memory but only "
                            f"{free / GB:,.1f} GB is available; {fix}")
