"""Every BPF program of the testbed with the ``-D`` defines it is built with, in one table.

``tests/testbed/net/test_bpf.py`` loads each against the kernel's verifier, and
``scripts/offline_kit.py`` compiles each ahead for a machine without clang
(:func:`~.net.bpf.compile_program` takes an object from its cache without compiling). The
impairments' program (``net/bpf/impair.bpf.c``) is not here: its defines are the run's loss,
duplication and reordering rates, one object for each (:func:`~.net.impair.impair_object`).
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass


@dataclass(frozen=True)
class BpfProgram:
    """One program: ``label`` (for people), the ``module`` of :mod:`netweave.testbed` holding its
    source's path in ``attribute``, the ``function`` libbpf loads, its defines (a dict, or the name
    of the module's function that gives them) and its ``hook``: ``"tc"``, ``"xdp"`` (loaded through
    libbpf) or ``"ip"`` (attached by ``ip link set … xdp obj``)."""

    label: str
    module: str
    function: str
    defines: dict[str, int] | str | None = None
    hook: str = "xdp"
    attribute: str = "SOURCE"

    def _module(self):
        return importlib.import_module(f"netweave.testbed.{self.module}")

    @property
    def source(self) -> str:
        """Its path in the ``netweave.testbed`` package (``gnn/bpf/gnn_switch.bpf.c``)."""
        return getattr(self._module(), self.attribute)

    def define_values(self) -> dict[str, int] | None:
        """Its ``-D`` defines."""
        return getattr(self._module(), self.defines)() if isinstance(self.defines, str) else self.defines


PROGRAMS: tuple[BpfProgram, ...] = (
    BpfProgram("gnn switch, pinned", "gnn.kswitch", "gnn_switch", {"LOCKLESS": 1}, "tc"),
    BpfProgram("gnn switch, locks", "gnn.kswitch", "gnn_switch", {"LOCKLESS": 0}, "tc"),
    BpfProgram("ECN marking", "gnn.ecn", "ecn_mark", None, "tc"),
    BpfProgram("multicast forwarder", "net.multicast_tc", "mcast_fwd", None, "tc"),
    BpfProgram("INA aggregator", "agg.xdp", "ina_aggregate", "aggregator_defines"),
    BpfProgram("streaming aggregator", "agg.stream_xdp", "stream_aggregate"),
    BpfProgram("a host's pass program", "net.bpf", "pass", None, "ip", "PASS"),
)

GNN_KERNEL_PLANE = ("gnn switch, pinned", "gnn switch, locks", "ECN marking", "a host's pass program")
"""What ``netweave testbed gnn``'s kernel data plane may load: the switch (pinned or with locks),
its ECN marking and the hosts' pass program."""


def program(label: str) -> BpfProgram:
    """The program of :data:`PROGRAMS` named ``label``."""
    return next(p for p in PROGRAMS if p.label == label)
