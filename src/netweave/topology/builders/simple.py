"""Single-switch stars and random (Jellyfish-style) switch networks."""

from __future__ import annotations

import numpy as np

from ...errors import NetweaveError
from ..topology import Topology
from .net import Net

MAX_TRIES = 200


def star(n: int = 4, gbps: float = 100.0, ina: bool = True, pipelines: int = 1, memory: int = 0,
         latency_us: float = 1.0) -> Topology:
    """``n`` hosts ``H0..H{n-1}`` on one switch ``S0`` (SwitchGNN's setting); the switch is
    INA-capable unless ``ina=0``."""
    if n < 1:
        raise NetweaveError(f"star n={n} needs at least one host")
    net = Net(f"star-{n}")
    extra = {"ina": True, "pipelines": pipelines, "aggregator_memory": memory} if ina else {}
    net.node("S0", "switch", tier=1, **extra)
    for i in range(n):
        net.link(net.node(f"H{i}", "host", tier=0), "S0", gbps, latency_us)
    return net.build()


def tree(leaves: int = 2, hosts: int = 4, gbps: float = 100.0, host_gbps: tuple[int, int] | None = None,
         ina: bool = True, pipelines: int = 1, memory: int = 0, seed: int = 0, latency_us: float = 1.0) -> Topology:
    """A two-level tree converging on a PS: host ``H0`` (the PS) on the root switch ``R0``, and
    ``leaves`` leaf switches ``L0..`` under it with ``hosts`` hosts each (``H{1 + l*hosts + i}``
    under leaf ``l``) — the Linux-bridge tree of PAHInA's testbed (§VI-B). Switch links run at
    ``gbps``; with ``host_gbps=(LO, HI)`` every host link's bandwidth is drawn uniformly from the
    integers ``LO..HI`` with ``seed`` (the paper draws 10–25 Gb/s per VM), else ``gbps``. Every
    switch is INA-capable unless ``ina=0``."""
    if leaves < 1 or hosts < 1:
        raise NetweaveError(f"tree needs at least one leaf and one host per leaf (got leaves={leaves}, hosts={hosts})")
    rng = np.random.default_rng(seed)
    net = Net(f"tree-{leaves}x{hosts}")
    extra = {"ina": True, "pipelines": pipelines, "aggregator_memory": memory} if ina else {}

    def access() -> float:
        return float(rng.integers(host_gbps[0], host_gbps[1] + 1)) if host_gbps else gbps

    net.node("R0", "switch", tier=2, **extra)
    net.link(net.node("H0", "host", tier=0), "R0", access(), latency_us)
    for l in range(leaves):
        net.link(net.node(f"L{l}", "switch", tier=1, **extra), "R0", gbps, latency_us)
        for i in range(hosts):
            net.link(net.node(f"H{1 + l * hosts + i}", "host", tier=0), f"L{l}", access(), latency_us)
    return net.build()


def random_regular(switches: int = 8, degree: int = 3, hosts: int = 8, gbps: float = 100.0,
                   seed: int = 0, latency_us: float = 1.0) -> Topology:
    """A connected random ``degree``-regular switch graph (Jellyfish, Singla et al. 2012) with
    ``hosts`` hosts spread round-robin over the switches ``R0..``.

    Uses the pairing model with restarts until the graph is simple and connected.
    """
    if switches < 2 or not 1 <= degree < switches or (switches * degree) % 2:
        raise NetweaveError(
            f"random: need 2 ≤ switches, 1 ≤ degree < switches and switches×degree even (got {switches}, {degree})")
    rng = np.random.default_rng(seed)
    for _ in range(MAX_TRIES):
        stubs = rng.permutation(np.repeat(np.arange(switches), degree)).reshape(-1, 2)
        lo, hi = stubs.min(1), stubs.max(1)
        if (lo == hi).any() or np.unique(lo * switches + hi).size != lo.size:
            continue
        if _connected(switches, lo, hi):
            break
    else:
        raise NetweaveError(f"random: no connected simple {degree}-regular graph on {switches} switches found; raise degree")
    net = Net(f"random-{switches}-{degree}")
    names = [net.node(f"R{s}", "switch", tier=1) for s in range(switches)]
    for h in range(hosts):
        net.link(net.node(f"H{h}", "host", tier=0), names[h % switches], gbps, latency_us)
    order = np.lexsort((hi, lo))
    for a, b in zip(lo[order], hi[order]):
        net.link(names[a], names[b], gbps, latency_us)
    return net.build()


def _connected(n: int, lo: np.ndarray, hi: np.ndarray) -> bool:
    from scipy.sparse import coo_array
    from scipy.sparse.csgraph import connected_components

    adj = coo_array((np.ones(lo.size), (lo, hi)), shape=(n, n))
    return connected_components(adj, directed=False)[0] == 1


def vary_switch_links(topo: Topology, low_gbps: int, high_gbps: int, rng: np.random.Generator) -> Topology:
    """``topo`` with every switch-to-switch link's bandwidth drawn uniformly from the integers
    ``low_gbps..high_gbps`` (links in listing order); host links keep theirs. PAHInA's §VI-C setting
    uses 10 Gb/s hosts and 5–20 Gb/s switch links."""
    import dataclasses

    hosts = {n.name for n in topo.nodes if n.is_worker}
    links = [l if l.a in hosts or l.b in hosts else dataclasses.replace(l, gbps=float(rng.integers(low_gbps, high_gbps + 1)))
             for l in topo.links]
    return Topology(topo.name, list(topo.nodes), links)
