"""Clos networks: two-tier leaf-spine and three-tier k-ary fat-tree (Al-Fares et al. 2008).

Nodes carry ``tier`` (0 host, 1 leaf/edge, 2 spine/aggregation, 3 core) and, in a fat-tree,
``pod``. Links are listed host links first, then upward switch links in switch order, so with the
default contiguous port → pipeline grouping a leaf's host ports fill its first pipelines and its
uplinks the last ones, as on a front panel. A fraction ``ina`` of all switches, chosen at random
with ``seed``, is INA-capable with ``pipelines`` ingress pipelines (ARO §IV: γ = 20 %, 4 pipelines).
"""

from __future__ import annotations

import numpy as np

from ...errors import NetweaveError
from ..topology import Topology
from .net import Net


def _ina_flags(num_switches: int, fraction: float, seed: int) -> np.ndarray:
    if not 0.0 <= fraction <= 1.0:
        raise NetweaveError(f"ina={fraction} must be a fraction of switches in [0, 1]")
    flags = np.zeros(num_switches, dtype=bool)
    chosen = np.random.default_rng(seed).permutation(num_switches)[: int(round(fraction * num_switches))]
    flags[chosen] = True
    return flags


def _switch(net: Net, name: str, ina: bool, pipelines: int, memory: int, **attrs) -> str:
    extra = {"ina": True, "pipelines": pipelines, "aggregator_memory": memory} if ina else {}
    return net.node(name, "switch", **extra, **attrs)


def leaf_spine(leaves: int = 4, spines: int = 2, hosts: int = 4, gbps: float = 100.0,
               ina: float = 0.0, pipelines: int = 1, memory: int = 0, seed: int = 0,
               latency_us: float = 1.0) -> Topology:
    """``leaves`` leaf switches each with ``hosts`` hosts, every leaf joined to every spine.

    Names: leaves ``L0..``, spines ``S0..``, hosts ``H0..`` (``H{l*hosts + i}`` under leaf ``l``).
    """
    if min(leaves, spines, hosts) < 1:
        raise NetweaveError("leafspine needs at least one leaf, one spine and one host per leaf")
    flags = _ina_flags(leaves + spines, ina, seed)
    net = Net(f"leafspine-{leaves}x{spines}x{hosts}")
    leaf = [_switch(net, f"L{l}", flags[l], pipelines, memory, tier=1) for l in range(leaves)]
    spine = [_switch(net, f"S{s}", flags[leaves + s], pipelines, memory, tier=2) for s in range(spines)]
    for l in range(leaves):
        for i in range(hosts):
            net.link(net.node(f"H{l * hosts + i}", "host", tier=0), leaf[l], gbps, latency_us)
    for l in range(leaves):
        for s in range(spines):
            net.link(leaf[l], spine[s], gbps, latency_us)
    return net.build()


def fat_tree(k: int = 4, gbps: float = 100.0, ina: float = 0.0, pipelines: int = 1,
             memory: int = 0, seed: int = 0, latency_us: float = 1.0) -> Topology:
    """k-ary fat-tree: ``(k/2)^2`` cores, ``k`` pods of ``k/2`` aggregation + ``k/2`` edge switches,
    ``k^3/4`` hosts (k = 8: 80 switches, 128 hosts).

    Names: cores ``C0..``, aggregation ``A{pod*k/2 + i}``, edge ``E{pod*k/2 + i}``, hosts ``H0..``.
    Aggregation switch ``i`` of every pod connects to cores ``i*k/2 .. i*k/2 + k/2 - 1``.
    """
    if k < 2 or k % 2:
        raise NetweaveError(f"fattree k={k} must be an even number ≥ 2")
    h = k // 2
    flags = _ina_flags(h * h + k * k, ina, seed)
    net = Net(f"fattree-{k}")
    core = [_switch(net, f"C{c}", flags[c], pipelines, memory, tier=3) for c in range(h * h)]
    agg = [_switch(net, f"A{p * h + i}", flags[h * h + p * h + i], pipelines, memory, tier=2, pod=p)
           for p in range(k) for i in range(h)]
    edge = [_switch(net, f"E{p * h + i}", flags[h * h + k * h + p * h + i], pipelines, memory, tier=1, pod=p)
            for p in range(k) for i in range(h)]
    for e, sw in enumerate(edge):
        for i in range(h):
            net.link(net.node(f"H{e * h + i}", "host", tier=0, pod=e // h), sw, gbps, latency_us)
    for p in range(k):
        for i in range(h):
            for j in range(h):
                net.link(edge[p * h + i], agg[p * h + j], gbps, latency_us)
    for p in range(k):
        for i in range(h):
            for j in range(h):
                net.link(agg[p * h + i], core[i * h + j], gbps, latency_us)
    return net.build()
