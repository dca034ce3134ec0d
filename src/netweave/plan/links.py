"""Worker-level (logical) links of DGCL and the physical hops each one crosses.

Workers are the topology's GPUs (or hosts) in rank order. Between every ordered pair ``(i, j)``
there is a logical link, mapped to one physical path: the direct connection when there is one,
else the widest of the fewest-hop paths that do not transit another worker (e.g. PCIe-QPI-PCIe on
a DGX-1). Relaying through other workers is left to the planner. A *hop* is one direction of a
full-duplex physical link: hop ``2e`` is link ``e`` from ``a`` to ``b``, hop ``2e+1`` from ``b`` to ``a``.

A logical link's *class* names the kinds of physical link it crosses, in path order, as DGCL names
them (dgcl.txt §3): ``NVLink`` (NV1 or NV2), ``PCIe``, ``PCIe-QPI-PCIe``, ``PCIe-IB-PCIe`` …, from the
links' ``label``; unlabelled links (a host network) count as ``network``.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..errors import NetweaveError
from ..topology import Topology
from ..topology.paths import widest_shortest_path
from .transport import transport_for


@dataclass(frozen=True, eq=False)
class WorkerLinks:
    """Logical links of a topology as flat arrays (numba-friendly).

    Attributes:
        workers: worker names in rank order (``m`` of them).
        exists: ``(m*m,)`` bool, logical link ``l = i*m + j`` exists (a path avoiding other workers).
        link_ptr: ``(m*m + 1,)`` offsets into ``link_hops``.
        link_hops: hop ids along each logical link, in path order.
        hop_bw: ``(2 * num_physical_links,)`` bandwidth of every hop in bytes per second.
        hop_names: ``"A->B"`` for every hop.
        hop_latency_s: ``(2 * num_physical_links,)`` one-way latency of every hop in seconds.
        hop_labels: the ``label`` of every hop's physical link (None where it has none).
        transport: the name of the transport the workers exchange over by default (``nccl`` for
            GPUs, ``gloo`` for hosts: :func:`~netweave.plan.transport.transport_for`); the default
            cost model of :func:`~netweave.plan.cost.plan_cost` and :func:`~netweave.plan.spst_plan`
            takes its constants.
    """

    workers: tuple[str, ...]
    exists: np.ndarray
    link_ptr: np.ndarray
    link_hops: np.ndarray
    hop_bw: np.ndarray
    hop_names: tuple[str, ...]
    hop_latency_s: np.ndarray | None = None
    hop_labels: tuple[str | None, ...] | None = None
    transport: str = "gloo"

    def link_latency_s(self) -> np.ndarray:
        """``(m*m,)`` one-way latency of every logical link: the sum over its hops (0 without hops)."""
        lat = np.zeros(self.hop_bw.size) if self.hop_latency_s is None else self.hop_latency_s
        return np.bincount(self.hop_entry_links(), weights=lat[self.link_hops], minlength=self.link_ptr.size - 1)

    @property
    def num_workers(self) -> int:
        return len(self.workers)

    @property
    def complete(self) -> bool:
        """Every ordered pair of distinct workers has a logical link (P2P is possible)."""
        m = self.num_workers
        return bool(self.exists[~np.eye(m, dtype=bool).ravel()].all())

    def hop_entry_links(self) -> np.ndarray:
        """``(len(link_hops),)`` the logical link of every entry of ``link_hops``."""
        return np.repeat(np.arange(self.link_ptr.size - 1), np.diff(self.link_ptr))

    def check_parts(self, num_parts: int) -> None:
        """One part per worker, or a clear error."""
        if num_parts != self.num_workers:
            raise NetweaveError(f"the partition has {num_parts} parts but the topology has {self.num_workers} workers")

    def hops(self, i: int, j: int) -> np.ndarray:
        l = i * self.num_workers + j
        return self.link_hops[self.link_ptr[l]:self.link_ptr[l + 1]]

    def link_name(self, l: int) -> str:
        m = self.num_workers
        return f"{self.workers[l // m]}->{self.workers[l % m]}"

    def link_class(self, l: int) -> str:
        """The class of logical link ``l``: its hops' link kinds in path order, repeats merged
        (``NVLink``, ``PCIe-QPI-PCIe``, ``network`` …; see the module docstring)."""
        labels = self.hop_labels or ()
        kinds: list[str] = []
        for h in self.link_hops[self.link_ptr[l]:self.link_ptr[l + 1]]:
            label = labels[h] if h < len(labels) else None
            kind = "NVLink" if label in ("NV1", "NV2") or (label or "").startswith("NVLink") else (label or "network")
            if not kinds or kinds[-1] != kind:
                kinds.append(kind)
        return "-".join(kinds) if kinds else "none"

    def bytes_by_class(self, link_bytes: np.ndarray) -> dict[str, int]:
        """Bytes per link class from ``(..., m*m)`` bytes per logical link (summed over leading
        axes, e.g. stages), classes in order of first appearance, empty classes left out."""
        per_link = np.asarray(link_bytes, dtype=np.float64).reshape(-1, self.link_ptr.size - 1).sum(axis=0)
        out: dict[str, int] = {}
        for l in np.flatnonzero(per_link):
            key = self.link_class(int(l))
            out[key] = out.get(key, 0) + int(per_link[l])
        return out


def worker_links(topo: Topology) -> WorkerLinks:
    """Map every ordered worker pair of ``topo`` onto its physical hops."""
    workers = topo.workers
    m = len(workers)
    if m < 1:
        raise NetweaveError(f"topology {topo.name!r} has no workers (gpu or host nodes)")
    exists = np.zeros(m * m, dtype=bool)
    ptr = np.zeros(m * m + 1, dtype=np.int64)
    hops: list[int] = []
    for i, a in enumerate(workers):
        for j, b in enumerate(workers):
            l = i * m + j
            if i != j:
                try:
                    path = widest_shortest_path(topo, a, b)
                except NetweaveError:
                    path = None
                if path is not None:
                    exists[l] = True
                    for x, y in zip(path, path[1:]):
                        e = topo.link_between(x, y)
                        hops.append(2 * e + (topo.links[e].a != x))
            ptr[l + 1] = len(hops)
    bw = np.repeat([l.bytes_per_s for l in topo.links], 2).astype(np.float64)
    names = tuple(n for l in topo.links for n in (f"{l.a}->{l.b}", f"{l.b}->{l.a}"))
    latency = np.repeat([l.latency_us * 1e-6 for l in topo.links], 2).astype(np.float64)
    labels = tuple(l.label for l in topo.links for _ in range(2))
    return WorkerLinks(tuple(workers), exists, ptr, np.asarray(hops, dtype=np.int64), bw, names, latency, labels,
                       transport_for(topo).name)
