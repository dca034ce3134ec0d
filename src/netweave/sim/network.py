"""``SimNetwork``: a star or a two-tier leaf-spine network as the simulator sees it.

Nodes are numbered hosts ``0..M-1`` (worker ranks), leaves ``M..M+L-1``, spines
``M+L..M+L+S-1``; a star is one leaf and no spine. Every direction of a link is a separate
output queue (full duplex). Link ``index``:

* ``h``: host ``h`` up to its leaf; ``M + h``: leaf down to host ``h``;
* ``2M + l*S + s``: leaf ``l`` up to spine ``s``; ``2M + L*S + s*L + l``: spine ``s`` down to leaf ``l``.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..errors import NetweaveError
from ..topology import Topology

DEFAULT_MEMORY = 100_000_000  # aggregator bytes of a switch whose topology gives none (switchgnn.txt §6)
FROM_TOPOLOGY = "topology"  # the switch memory option's default: every switch's own ``aggregator_memory``


@dataclass(frozen=True, eq=False)
class SimNetwork:
    """Attributes: ``leaf_of`` ``(M,)``; ``rate`` ``(links,)`` bytes per second; ``delay`` ``(links,)``
    seconds; ``names`` of the hosts in rank order; ``memory`` ``(L+S,)`` aggregator bytes per switch
    from the topology (0 = not given)."""

    num_hosts: int
    num_leaves: int
    num_spines: int
    leaf_of: np.ndarray
    rate: np.ndarray
    delay: np.ndarray
    names: tuple[str, ...]
    memory: np.ndarray

    @property
    def num_links(self) -> int:
        return 2 * self.num_hosts + 2 * self.num_leaves * self.num_spines

    def host_rate(self) -> float:
        """Slowest host line rate (bytes/s)."""
        return float(self.rate[: self.num_hosts].min())

    def switch_memory(self, override: int | str | None = FROM_TOPOLOGY) -> np.ndarray | None:
        """Aggregator bytes of every switch, ``(L+S,)`` (leaves, then spines).

        With ``override`` :data:`FROM_TOPOLOGY`, each switch's ``aggregator_memory`` from the
        topology, :data:`DEFAULT_MEMORY` where it gives none; an int gives every switch that
        memory; ``None`` is unlimited (returns ``None``).
        """
        if override is None:
            return None
        if isinstance(override, str):
            if override != FROM_TOPOLOGY:
                raise NetweaveError(f"switch memory {override!r}: give bytes, 'unlimited' or {FROM_TOPOLOGY!r}")
            return np.where(self.memory > 0, self.memory, DEFAULT_MEMORY).astype(np.int64)
        if override < 0:
            raise NetweaveError(f"switch memory {override} B must not be negative")
        return np.full(self.num_leaves + self.num_spines, int(override), dtype=np.int64)

    def edge_memory(self, memory: np.ndarray, worker_of_src: np.ndarray, worker_of_dst: np.ndarray,
                    dst: np.ndarray) -> np.ndarray:
        """``(C,)`` per cross edge ``src -> dst``, the smallest ``memory`` (per switch) among the
        switches that hold an aggregator for it: the sender's leaf (level 1) and, when the
        destination is under another leaf, the spine ``dst mod S`` that adds the leaves' partial
        sums (level 2), as :mod:`~netweave.sim.engine` routes them. A switch the edge's messages
        only pass through (the destination's leaf forwarding a sum) needs no aggregator."""
        src_leaf, dst_leaf = self.leaf_of[worker_of_src], self.leaf_of[worker_of_dst]
        need = memory[src_leaf]
        if self.num_spines:
            far = src_leaf != dst_leaf
            need = need.copy()
            need[far] = np.minimum(need[far], memory[self.num_leaves + dst[far] % self.num_spines])
        return need


def sim_network(topo: Topology) -> SimNetwork:
    """Read a star (hosts on one switch) or a leaf-spine (hosts on leaves, every leaf on every
    spine) from ``topo``; anything else is rejected with one line."""
    hosts = topo.workers
    if any(topo.node(h).kind != "host" for h in hosts):
        raise NetweaveError(f"topology {topo.name!r}: the switch simulator needs hosts on switches, not GPUs")
    switch_of, host_link = [], []
    for h in hosts:
        ups = [(nb, e) for nb, e in topo.adjacency[topo.index[h]]]
        if len(ups) != 1 or topo.nodes[ups[0][0]].kind != "switch":
            raise NetweaveError(f"topology {topo.name!r}: host {h} must hang off exactly one switch "
                                "(the simulator supports stars and leaf-spine networks)")
        switch_of.append(ups[0][0])
        host_link.append(ups[0][1])
    leaves = sorted(set(switch_of))
    spines = sorted({nb for l in leaves for nb, _ in topo.adjacency[l] if topo.nodes[nb].kind == "switch"})
    if set(spines) & set(leaves) or any(topo.nodes[nb].kind not in ("host", "switch")
                                        for s in leaves + spines for nb, _ in topo.adjacency[s]):
        raise NetweaveError(f"topology {topo.name!r} is neither a star nor a two-tier leaf-spine network")
    m, nl, ns = len(hosts), len(leaves), len(spines)
    if len(leaves) > 1 and not spines:
        raise NetweaveError(f"topology {topo.name!r}: leaves are not connected by spines")
    rate = np.zeros(2 * m + 2 * nl * ns)
    delay = np.zeros_like(rate)
    for h, e in enumerate(host_link):
        for i in (h, m + h):
            rate[i], delay[i] = topo.links[e].bytes_per_s, topo.links[e].latency_us * 1e-6
    for l, leaf in enumerate(leaves):
        for s, spine in enumerate(spines):
            e = next((e for nb, e in topo.adjacency[leaf] if nb == spine), None)
            if e is None:
                raise NetweaveError(f"topology {topo.name!r}: leaf {topo.nodes[leaf].name} has no link to "
                                    f"spine {topo.nodes[spine].name}; every leaf must reach every spine")
            for i in (2 * m + l * ns + s, 2 * m + nl * ns + s * nl + l):
                rate[i], delay[i] = topo.links[e].bytes_per_s, topo.links[e].latency_us * 1e-6
    if ns and any(topo.nodes[nb].kind == "host" for s in spines for nb, _ in topo.adjacency[s]):
        raise NetweaveError(f"topology {topo.name!r}: hosts on spines are not supported by the simulator")
    leaf_of = np.searchsorted(np.asarray(leaves), np.asarray(switch_of))
    memory = np.asarray([topo.nodes[s].aggregator_memory for s in leaves + spines], dtype=np.int64)
    return SimNetwork(m, nl, ns, leaf_of.astype(np.int64), rate, delay, tuple(hosts), memory)
