"""Fault injection for testing failure handling: ``NETWEAVE_INJECT_FAULT=MODE@RANK:EPOCH``.

``kill@1:3`` makes rank 1 kill itself (SIGKILL) at the start of epoch 3 (0-based); ``hang@2:0``
makes rank 2 stop answering (sleep) there. The launcher must then end the run with one clear
line in bounded time. Unset, this does nothing.
"""

from __future__ import annotations

import os
import signal
import time

from ..errors import NetweaveError

VARIABLE = "NETWEAVE_INJECT_FAULT"


def injected_fault(rank: int) -> tuple[str, int] | None:
    """``(mode, epoch)`` for this rank, or None."""
    spec = os.environ.get(VARIABLE)
    if not spec:
        return None
    try:
        mode, where = spec.split("@")
        at_rank, epoch = (int(v) for v in where.split(":"))
    except ValueError:
        raise NetweaveError(f"{VARIABLE}={spec!r} is not MODE@RANK:EPOCH (e.g. kill@1:3)") from None
    if mode not in ("kill", "hang"):
        raise NetweaveError(f"{VARIABLE}: mode {mode!r} is not kill or hang")
    return (mode, epoch) if at_rank == rank else None


def trigger(mode: str) -> None:
    """Die or stop answering, as the fault says."""
    if mode == "kill":
        os.kill(os.getpid(), signal.SIGKILL)
    time.sleep(10**6)
