"""Typed configurations for the testbed's process roles, across the process boundary.

Every role (a switch agent, the PS, a worker, a multicast router …) is one ``python -m MODULE
CONFIG`` process in a namespace, and ``CONFIG`` is one JSON argument. Each role's configuration is
a frozen dataclass deriving from :class:`RoleConfig`, defined next to the role: the launcher builds
it, :meth:`RoleConfig.to_json` writes it, the role reads it back with :meth:`RoleConfig.from_json`
and gets the same value — field names, types and all — so a reader and a type checker can follow
the data from one side to the other.

JSON has no tuples and only string keys; :func:`revive` undoes that from the field's annotation:
``tuple[...]`` from lists, ``dict[int, ...]`` keys from strings, nested configurations from their
mappings, ``X | None`` as either.
"""

from __future__ import annotations

import dataclasses
import json
import types
import typing
from typing import Any, TypeVar

C = TypeVar("C", bound="RoleConfig")


@dataclasses.dataclass(frozen=True)
class RoleConfig:
    """Base of every role's configuration (frozen, keyword-only in its subclasses)."""

    def to_json(self) -> str:
        """The configuration as one JSON text (the role's command-line argument)."""
        return json.dumps(dataclasses.asdict(self))

    @classmethod
    def from_json(cls: type[C], text: str) -> C:
        """The configuration :meth:`to_json` wrote (unknown or missing fields are a ``TypeError``)."""
        return revive(cls, json.loads(text))


def revive(annotation: Any, value: Any) -> Any:
    """``value`` (parsed JSON) as the type ``annotation`` says: see the module docstring."""
    if value is None:
        return None
    if dataclasses.is_dataclass(annotation):
        hints = typing.get_type_hints(annotation)
        names = {f.name for f in dataclasses.fields(annotation)}
        unknown = set(value) - names
        if unknown:
            raise TypeError(f"{annotation.__name__}: unknown fields {sorted(unknown)}")
        return annotation(**{k: revive(hints[k], v) for k, v in value.items()})
    origin, args = typing.get_origin(annotation), typing.get_args(annotation)
    if origin in (typing.Union, types.UnionType):
        inner = [a for a in args if a is not type(None)]
        return revive(inner[0], value) if len(inner) == 1 else value
    if origin is tuple:
        if len(args) == 2 and args[1] is Ellipsis:
            return tuple(revive(args[0], v) for v in value)
        return tuple(revive(a, v) for a, v in zip(args, value)) if args else tuple(value)
    if origin is list:
        return [revive(args[0], v) for v in value] if args else list(value)
    if origin is dict:
        key, item = args if args else (Any, Any)
        return {revive(key, k) if key is not str else k: revive(item, v) for k, v in value.items()}
    if annotation is int and isinstance(value, str):
        return int(value)
    if annotation is float and isinstance(value, int) and not isinstance(value, bool):
        return float(value)
    return value
