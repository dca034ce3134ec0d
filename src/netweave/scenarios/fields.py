"""Scenarios from plain mappings: how a sweep's YAML (``grid`` and ``fixed``) becomes a scenario.

A case's keys are the scenario's field names (see each scenario's docstring); values arrive as
YAML gives them, so sizes, precision mixes and heuristics may be strings as on the command line
(``switch_memory: 2MB``, ``buffer_bytes: 1MB``, ``precisions: fp8:5,fp16:5``, ``accelerations: app,sro``). An ``ina``
case may also name the simulator's options (:class:`~netweave.sim.SimConfig` fields such as
``loss`` or ``buffer_bytes``); they go into its ``sim``.

Every value is checked against its field's annotation before the scenario is built, and nothing
else is converted: an ``int`` field takes an integer (``true`` is not one), a ``float`` field an
integer or a finite number, a ``str`` field a string, ``None`` only where the field allows it, and
the elements of mappings and lists likewise. A wrong type is one line naming the kind, the field,
what it expects and what it got, as is anything the scenario's ``check()`` then refuses.
"""

from __future__ import annotations

import dataclasses
import math
import types
import typing

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
        sim = _sim_params(p)
        for k in sim:
            del p[k]
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
    if kind == "ina":
        from ..sim import SimConfig

        _check_types(kind, SimConfig, _sim_params(params))
    converted = _convert(kind, params)
    _check_types(kind, cls, converted)
    try:
        scenario = cls(**converted)
        if hasattr(scenario, "check"):
            scenario.check()
    except (TypeError, ValueError) as exc:  # a check that met a value it did not foresee
        shown = ", ".join(f"{k}={v!r}" for k, v in sorted(params.items()))
        raise NetweaveError(f"bad {kind} parameter in the case {shown}: {exc}") from None
    return scenario


def _check_types(kind: str, cls, params: dict) -> None:
    """Each of ``params`` fits the annotation of ``cls``'s field of that name (see the module docstring)."""
    hints = typing.get_type_hints(cls)
    for name, value in params.items():
        hint = hints.get(name)
        if hint is not None and not _fits(value, hint):
            raise NetweaveError(f"bad {kind} parameter {name!r}: expected {_describe(hint)}, got {value!r}")


def _fits(value, hint) -> bool:
    origin, args = typing.get_origin(hint), typing.get_args(hint)
    if origin in (typing.Union, types.UnionType):
        return any(_fits(value, a) for a in args)
    if hint is type(None):
        return value is None
    if hint is typing.Any:
        return True
    if hint is bool:
        return isinstance(value, bool)
    if hint is int:
        return isinstance(value, int) and not isinstance(value, bool)
    if hint is float:
        return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)
    if origin is dict:
        return isinstance(value, dict) and all(_fits(k, args[0]) and _fits(v, args[1]) for k, v in value.items())
    if origin in (tuple, list):
        if not isinstance(value, origin):
            return False
        if origin is tuple and not (len(args) == 2 and args[1] is Ellipsis):
            return len(value) == len(args) and all(_fits(v, a) for v, a in zip(value, args))
        return all(_fits(v, args[0]) for v in value) if args else True
    if isinstance(hint, type):
        return isinstance(value, hint)
    return True  # an annotation this module does not know: the scenario's check() decides


_NAMES = {type(None): ("null", "nulls"), bool: ("true or false", "true/false values"), int: ("an integer", "integers"),
          float: ("a finite number", "finite numbers"), str: ("a string", "strings")}


def _describe(hint, plural: bool = False) -> str:
    """``int | None`` → "an integer or null"; ``dict[str, float]`` → "a mapping of strings to finite numbers"."""
    origin, args = typing.get_origin(hint), typing.get_args(hint)
    if origin in (typing.Union, types.UnionType):
        parts = [_describe(a, plural) for a in args]
        comma = "," if any(" of " in p for p in parts) else ""
        return ", ".join(parts[:-1]) + f"{comma} or " + parts[-1]
    if origin is dict:
        return f"{'mappings' if plural else 'a mapping'} of {_describe(args[0], True)} to {_describe(args[1], True)}"
    if origin in (tuple, list):
        return f"{'lists' if plural else 'a list'}" + (f" of {_describe(args[0], True)}" if args else "")
    if hint in _NAMES:
        return _NAMES[hint][plural]
    return getattr(hint, "__name__", str(hint))


def _sim_params(params: dict) -> dict:
    """The simulator's options among ``params``, sizes (``buffer_bytes: 1MB``) as bytes."""
    from ..topology.yaml_io import parse_bytes

    return {k: parse_bytes(v, k) if k.endswith("_bytes") and isinstance(v, str) else v
            for k, v in params.items() if k in _sim_fields()}


def _sim_fields() -> set[str]:
    from ..sim import SimConfig

    return {f.name for f in dataclasses.fields(SimConfig)}
