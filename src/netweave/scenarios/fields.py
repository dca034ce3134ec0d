"""Scenarios from plain mappings: how a sweep's YAML (``grid`` and ``fixed``) becomes a scenario.

A case's keys are the scenario's field names (see each scenario's docstring); values arrive as
YAML gives them, so sizes, precision mixes and heuristics may be strings as on the command line
(``switch_memory: 2MB``, ``precisions: fp8:5,fp16:5``, ``accelerations: app,sro``). An ``ina``
case may also name the simulator's options (:class:`~netweave.sim.SimConfig` fields such as
``loss`` or ``buffer_bytes``); they go into its ``sim``.
"""

from __future__ import annotations

import dataclasses

from ..errors import NetweaveError

KINDS = ("exchange", "partition", "ina", "route", "precision")


def _classes():
    from .exchange import ExchangeScenario
    from .ina import InaScenario
    from .partition import PartitionScenario
    from .route import RouteScenario

    return {"exchange": ExchangeScenario, "partition": PartitionScenario, "ina": InaScenario,
            "route": RouteScenario, "precision": RouteScenario}


def _convert(kind: str, params: dict) -> dict:
    """Command-line strings to the fields' types; the ``precision`` kind's defaults."""
    from ..route.jobs import parse_precision_mix
    from ..sim import SimConfig
    from ..sim.layer import parse_switch_memory
    from .defaults import PRECISION_MIX

    p = dict(params)
    if kind == "ina":
        sim = {k: p.pop(k) for k in list(p) if k in _sim_fields()}
        if isinstance(p.get("switch_memory"), str):
            p["switch_memory"] = parse_switch_memory(p["switch_memory"], "switch_memory")
        if sim:
            p["sim"] = SimConfig(**sim)
    if kind == "precision":
        p.setdefault("algorithm", "pahina")
        p["precisions"] = (parse_precision_mix(p["precisions"], "precisions") if isinstance(p.get("precisions"), str)
                           else p.get("precisions") or PRECISION_MIX)
    if isinstance(p.get("accelerations"), str):
        p["accelerations"] = tuple(a.strip() for a in p["accelerations"].split(",") if a.strip())
    elif isinstance(p.get("accelerations"), list):
        p["accelerations"] = tuple(p["accelerations"])
    return p


def scenario_from(kind: str, params: dict):
    """The scenario of sweep kind ``kind`` (:data:`KINDS`) with ``params`` as its fields, checked.

    Unknown or missing fields, values of the wrong type and values its ``check()`` refuses raise
    one :class:`NetweaveError` line that names the kind and the field."""
    if kind not in KINDS:
        raise NetweaveError(f"unknown kind {kind!r}; use one of {', '.join(KINDS)}")
    cls = _classes()[kind]
    names = [f.name for f in dataclasses.fields(cls)]
    unknown = sorted(set(params) - set(names) - (_sim_fields() if kind == "ina" else set()))
    if unknown:
        raise NetweaveError(f"bad {kind} parameter {unknown[0]!r}: not a field of {cls.__name__} "
                            f"({', '.join(names)})")
    required = [f.name for f in dataclasses.fields(cls)
                if f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING]
    if kind in ("route", "precision"):
        required.append("workers" if "jobs_file" not in params else "jobs_file")
    missing = [k for k in required if k not in params]
    if missing:
        raise NetweaveError(f"a case of kind {kind} needs {' and '.join(missing)} (in grid or fixed)")
    try:
        scenario = cls(**_convert(kind, params))
    except TypeError as exc:
        raise NetweaveError(f"bad {kind} parameter: {exc}") from None
    if hasattr(scenario, "check"):
        scenario.check()
    return scenario


def _sim_fields() -> set[str]:
    from ..sim import SimConfig

    return {f.name for f in dataclasses.fields(SimConfig)}
