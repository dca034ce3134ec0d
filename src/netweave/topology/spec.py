"""The ``--topology SPEC|FILE`` argument: a YAML file or a builder spec such as
``leafspine:leaves=24,spines=24,hosts=24,ina=0.2,pipelines=4,seed=1``.

A builder spec is sized before anything is built: one that would make more than :data:`MAX_LINKS`
links is refused with one line naming its size (a topology is Python objects, about 1 kB and 15 µs
per link to build and validate, so a million links already take about 1 GB and 15 s, and every
command over it far longer)."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from .._spec import parse_kv_spec, take
from ..errors import NetweaveError
from . import builders
from .topology import Topology
from .yaml_io import load_topology, parse_bytes


def size(raw: str) -> int:
    """A memory size such as ``100MB`` (bytes)."""
    try:
        return parse_bytes(raw, "size")
    except NetweaveError:
        raise ValueError(raw) from None


def gbps_range(raw: str) -> tuple[int, int]:
    """``5-20``: integer Gb/s bounds of switch-to-switch links (``LOW-HIGH``, 1 <= LOW <= HIGH)."""
    low, _, high = raw.partition("-")
    lo, hi = int(low), int(high)  # ValueError names the spec
    if not 1 <= lo <= hi:
        raise ValueError(raw)
    return lo, hi


_NET = {"gbps": (float, 100.0), "latency_us": (float, 1.0)}
_VARY = {"switch_gbps": (gbps_range, None)}  # PAHInA §VI-C: switch links drawn from LOW..HIGH Gb/s (seeded)
_INA = {"pipelines": (int, 1), "memory": (size, 0)}
BUILDERS = {
    "dgx1": ("dgx1[:gpus=2..8]  one DGX-1: 8 GPUs, NVLink hybrid cube-mesh (DGCL Table 1 speeds); gpus: a job on the first ones",
             builders.dgx1, {"gpus": (int, 8)}),
    "dgx1x2": ("dgx1x2  two DGX-1 over InfiniBand (16 GPUs)", builders.dgx1x2, {}),
    "pcie8": ("pcie8  8 GPUs on PCIe switches, two sockets joined by QPI", builders.pcie8, {}),
    "star": ("star:n=…[,gbps,ina=1,pipelines,memory]  n hosts on one (INA) switch", builders.star,
             {"n": (int, ...), "ina": (bool, True)} | _NET | _INA),
    "tree": ("tree:leaves=…,hosts=…[,gbps,host_gbps=LO-HI,ina=1,pipelines,memory,seed]  the PS H0 on a root switch over "
             "leaf switches of hosts (PAHInA §VI-B's bridge tree; host_gbps: host links drawn from LO..HI Gb/s)",
             builders.tree, {"leaves": (int, ...), "hosts": (int, ...), "ina": (bool, True), "seed": (int, 0),
                             "host_gbps": (gbps_range, None)} | _NET | _INA),
    "leafspine": ("leafspine:leaves=…,spines=…,hosts=…[,ina=0.2,pipelines=4,seed,gbps,memory,switch_gbps=LO-HI]  two-tier Clos",
                  builders.leaf_spine,
                  {"leaves": (int, ...), "spines": (int, ...), "hosts": (int, ...), "ina": (float, 0.0),
                   "seed": (int, 0)} | _NET | _INA | _VARY),
    "fattree": ("fattree:k=…[,ina,pipelines,seed,gbps,memory,switch_gbps=LO-HI]  k-ary fat-tree (switch_gbps: "
                "switch links drawn from LO..HI Gb/s with the seed, PAHInA §VI-C)", builders.fat_tree,
                {"k": (int, ...), "ina": (float, 0.0), "seed": (int, 0)} | _NET | _INA | _VARY),
    "random": ("random:switches=…,degree=…,hosts=…[,seed,gbps]  random regular switch graph", builders.random_regular,
               {"switches": (int, ...), "degree": (int, ...), "hosts": (int, ...), "seed": (int, 0)} | _NET),
}


MAX_LINKS = 1_000_000  # fattree:k=110 (998,250 links); the papers' largest settings have under 100,000


def _fat_tree_size(k: int) -> tuple[int, int]:
    h = k // 2  # nodes: cores, the pods' aggregation and edge switches, hosts; links: host-edge, edge-agg, agg-core
    return h * h + k * k + k * h * h, 3 * k * h * h


# (nodes, links) of a builder spec's topology from its counts, and which parameters to lower.
SIZES = {
    "star": (lambda p: (p["n"] + 1, p["n"]), "n"),
    "tree": (lambda p: (2 + p["leaves"] * (1 + p["hosts"]), 1 + p["leaves"] * (1 + p["hosts"])), "leaves or hosts"),
    "leafspine": (lambda p: (p["leaves"] * (1 + p["hosts"]) + p["spines"],
                             p["leaves"] * (p["hosts"] + p["spines"])), "leaves, spines or hosts"),
    "fattree": (lambda p: _fat_tree_size(p["k"]), "k"),
    "random": (lambda p: (p["switches"] + p["hosts"], p["hosts"] + p["switches"] * p["degree"] // 2),
               "switches, degree or hosts"),
}
_COUNTS = ("n", "leaves", "spines", "hosts", "k", "switches", "degree")


def check_size(name: str, spec: str, params: dict) -> None:
    """Refuse (one line) a builder spec whose topology would have more than :data:`MAX_LINKS` links.

    A negative count is taken as 0 here: the builder then refuses it with its own message."""
    if name not in SIZES:
        return  # fixed-size builders (dgx1, dgx1x2, pcie8)
    estimate, lower = SIZES[name]
    nodes, links = estimate({k: max(0, v) if k in _COUNTS else v for k, v in params.items()})
    if links > MAX_LINKS:
        raise NetweaveError(
            f"topology {spec!r} would have {links:,} links and {nodes:,} nodes, above the {MAX_LINKS:,} links "
            f"a builder may make; lower {lower}")


def load_topology_spec(spec: str) -> Topology:
    """A topology from a YAML path or a builder spec (see :data:`BUILDERS`)."""
    spec = spec.strip()
    path = Path(spec)
    if path.suffix.lower() in (".yaml", ".yml") or path.is_file():
        return load_topology(path)
    name, params = parse_kv_spec(spec)
    if name not in BUILDERS:
        raise NetweaveError(
            f"unknown topology {spec!r}: not a YAML file and not a builder ({', '.join(BUILDERS)}); "
            "run `netweave topology show --help` for the builder specs")
    _, build, allowed = BUILDERS[name]
    kwargs = take(params, spec, allowed)
    check_size(name, spec, kwargs)
    vary = kwargs.pop("switch_gbps", None)
    topo = build(**kwargs)
    if vary is not None:
        topo = builders.vary_switch_links(topo, *vary, np.random.default_rng(kwargs.get("seed", 0)))
    return topo
