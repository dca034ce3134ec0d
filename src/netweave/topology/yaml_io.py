"""Topology YAML (the schema of docs/formats.md) to and from :class:`Topology`.

```yaml
name: small-leaf-spine
nodes:
  - {name: L0, kind: switch, ina: true, pipelines: 4, aggregator_memory: 100MB,
     ina_capacity_gbps: {fp8: 6, fp16: 24}}
  - {name: W0, kind: host}
links:
  - {a: W0, b: L0, gbps: 100, latency_us: 1, b_pipeline: 0}
```
Memory sizes accept ``B, KB, MB, GB`` (powers of 1000) and ``KiB, MiB, GiB`` (powers of 1024).
Unknown keys are rejected so that typos do not pass silently.
"""

from __future__ import annotations

import math
import re
from dataclasses import fields
from pathlib import Path

import yaml

from .._files import load_yaml
from ..errors import NetweaveError
from .topology import Link, Node, Topology

_UNITS = {"": 1, "b": 1, "kb": 10**3, "mb": 10**6, "gb": 10**9, "tb": 10**12,
          "kib": 2**10, "mib": 2**20, "gib": 2**30, "tib": 2**40}
NODE_KEYS = {f.name for f in fields(Node)}
LINK_KEYS = {f.name for f in fields(Link)}


def parse_bytes(value, where: str) -> int:
    """``100MB`` → 100_000_000; plain numbers are bytes."""
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        if not math.isfinite(value):
            raise NetweaveError(f"{where}: {value!r} is not a size; write e.g. 100MB, 4MiB or 1048576")
        return int(value)
    m = re.fullmatch(r"\s*([0-9]*\.?[0-9]+)\s*([A-Za-z]*)\s*", str(value))
    if not m or m.group(2).lower() not in _UNITS:
        raise NetweaveError(f"{where}: {value!r} is not a size; write e.g. 100MB, 4MiB or 1048576")
    return int(float(m.group(1)) * _UNITS[m.group(2).lower()])


def format_bytes(n: int) -> str | int:
    """The shortest exact spelling of ``n`` bytes (``100MB``, ``4MiB``) or the plain integer."""
    for unit in ("TB", "GB", "MB", "KB", "TiB", "GiB", "MiB", "KiB"):
        size = _UNITS[unit.lower()]
        if n >= size and n % size == 0:
            return f"{n // size}{unit}"
    return n


def _check_keys(entry, allowed: set[str], where: str) -> dict:
    if not isinstance(entry, dict):
        raise NetweaveError(f"{where}: expected a mapping like {{name: …, kind: …}}, got {entry!r}")
    unknown = sorted(set(entry) - allowed)
    if unknown:
        raise NetweaveError(f"{where}: unknown key {unknown[0]!r}; allowed keys: {', '.join(sorted(allowed))}")
    return entry


def _number(value, where: str, key: str, cast=float):
    if value is None:
        return None
    try:
        if isinstance(value, bool):
            raise ValueError
        if cast is int and isinstance(value, float) and not value.is_integer():
            raise ValueError  # 2.5 pipelines (or nan, inf) is not a count
        return cast(value)
    except (TypeError, ValueError, OverflowError):
        raise NetweaveError(f"{where}: {key} must be a number, got {value!r}") from None


def topology_from_dict(data: dict, default_name: str = "topology") -> Topology:
    """Build a validated :class:`Topology` from the parsed YAML mapping."""
    if not isinstance(data, dict) or "nodes" not in data or "links" not in data:
        raise NetweaveError("a topology file needs top-level 'nodes:' and 'links:' lists")
    _check_keys(data, {"name", "nodes", "links"}, "topology")
    if not isinstance(data["nodes"], list) or not isinstance(data["links"], list):
        raise NetweaveError("topology: 'nodes' and 'links' must be lists")
    nodes = []
    for i, raw in enumerate(data["nodes"]):
        where = f"node {i}"
        entry = dict(_check_keys(raw, NODE_KEYS, where))
        if "name" not in entry or "kind" not in entry:
            raise NetweaveError(f"{where}: needs 'name' and 'kind'")
        entry["name"] = str(entry["name"])
        if "server" in entry:
            entry["server"] = str(entry["server"])
        if "aggregator_memory" in entry:
            entry["aggregator_memory"] = parse_bytes(entry["aggregator_memory"], f"{where} aggregator_memory")
        if "pipelines" in entry:
            entry["pipelines"] = _number(entry["pipelines"], where, "pipelines", int)
        caps = entry.get("ina_capacity_gbps", {})
        if not isinstance(caps, dict):
            raise NetweaveError(f"{where}: ina_capacity_gbps must map precisions to Gb/s, e.g. {{fp16: 24}}")
        entry["ina_capacity_gbps"] = {str(k): _number(v, where, f"ina_capacity_gbps.{k}") for k, v in caps.items()}
        nodes.append(Node(**entry))
    links = []
    for e, raw in enumerate(data["links"]):
        where = f"link {e}"
        entry = dict(_check_keys(raw, LINK_KEYS, where))
        if not {"a", "b", "gbps"} <= set(entry):
            raise NetweaveError(f"{where}: needs 'a', 'b' and 'gbps'")
        entry["a"], entry["b"] = str(entry["a"]), str(entry["b"])
        entry["gbps"] = _number(entry["gbps"], where, "gbps")
        entry["latency_us"] = _number(entry.get("latency_us", 0.0), where, "latency_us")
        for key in ("a_pipeline", "b_pipeline"):
            entry[key] = _number(entry.get(key), where, key, int)
        links.append(Link(**entry))
    return Topology(str(data.get("name", default_name)), nodes, links)


def topology_to_dict(topo: Topology) -> dict:
    """The YAML mapping of ``topo`` (defaults omitted, so files stay short)."""
    defaults = Node("", "")
    nodes = []
    for n in topo.nodes:
        entry: dict = {"name": n.name, "kind": n.kind}
        for key in ("server", "ina", "pipelines", "aggregator_memory", "ina_capacity_gbps", "tier", "pod"):
            value = getattr(n, key)
            if value != getattr(defaults, key):
                entry[key] = format_bytes(value) if key == "aggregator_memory" else value
        nodes.append(entry)
    links = []
    for l in topo.links:
        entry = {"a": l.a, "b": l.b, "gbps": l.gbps}
        for key in ("latency_us", "a_pipeline", "b_pipeline", "label"):
            value = getattr(l, key)
            if value not in (None, 0.0):
                entry[key] = value
        links.append(entry)
    return {"name": topo.name, "nodes": nodes, "links": links}


class _FlowDumper(yaml.SafeDumper):
    """One line per node and link: lists of mappings in block style, mappings in flow style."""

    def represent_mapping(self, tag, mapping, flow_style=None):
        top = set(mapping) >= {"nodes", "links"} if isinstance(mapping, dict) else False
        return super().represent_mapping(tag, mapping, flow_style=False if top else True)


def save_topology(topo: Topology, path: str | Path) -> None:
    """Write ``topo`` as YAML."""
    text = yaml.dump(topology_to_dict(topo), Dumper=_FlowDumper, sort_keys=False, width=200)
    Path(path).write_text(text)


def load_topology(path: str | Path) -> Topology:
    """Read and validate a topology YAML file (size, nesting and aliases bounded: see :mod:`netweave._files`)."""
    path = Path(path)
    data = load_yaml(path, "topology", "describe a large network with a builder spec such as "
                     "leafspine:leaves=…,spines=…,hosts=… or fattree:k=…")
    try:
        return topology_from_dict(data, default_name=path.stem)
    except NetweaveError as exc:
        raise NetweaveError(f"{path}: {exc}") from None
