"""Loss, duplication and reordering on the emulated links: netem's job, where there is no netem.

The kernels this runs on (Firecracker's among them) often lack ``sch_netem``; an
:class:`Impairment` is instead a tc-BPF program (``net/bpf/impair.bpf.c``) at every interface's tc
egress, with the probabilities compiled in as parts per million. Reordered packets take a slow HTB
lane (see :meth:`~.cluster.ClusterPlan.tc_batch`), so later ones overtake them.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from ...errors import NetweaveError

SOURCE = "net/bpf/impair.bpf.c"


@dataclass(frozen=True)
class Impairment:
    """Probabilities that a packet leaving an interface is lost, duplicated or reordered
    (``net/bpf/impair.bpf.c`` at the interface's tc egress: netem's job, where there is no netem)."""

    loss: float = 0.0
    duplicate: float = 0.0
    reorder: float = 0.0

    def __post_init__(self):
        for name in ("loss", "duplicate", "reorder"):
            if not 0 <= getattr(self, name) < 1:
                raise NetweaveError(f"--{name} {getattr(self, name):g} must be a probability in [0, 1)")

    def __bool__(self) -> bool:
        return bool(self.loss or self.duplicate or self.reorder)

    def defines(self) -> dict[str, int]:
        """The program's compile-time parts per million."""
        return {"LOSS_PPM": round(self.loss * 1e6), "DUPLICATE_PPM": round(self.duplicate * 1e6),
                "REORDER_PPM": round(self.reorder * 1e6)}



def impair_object(impairment: Impairment) -> Path:
    """The compiled program of ``impairment`` (with its probabilities as ``-D`` defines); its path
    goes into ``tc -batch`` lines, so it must be plain (:func:`~.bpf.plain_object`)."""
    from .bpf import plain_object

    return plain_object(SOURCE, impairment.defines())
