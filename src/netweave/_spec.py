"""Parsing of ``name:key=value,key=value`` specs used for generators and topology builders."""

from __future__ import annotations

import math

from .errors import NetweaveError


def parse_kv_spec(spec: str) -> tuple[str, dict[str, str]]:
    """Split ``"rmat:n=1000,m=5000"`` into ``("rmat", {"n": "1000", "m": "5000"})``.

    Keys are lower-cased; values stay strings (use :func:`take` to convert and check them). A key
    given twice (``star:n=4,n=5``) is an error, not a silent "last one wins".
    """
    name, _, rest = spec.partition(":")
    params: dict[str, str] = {}
    for item in filter(None, (s.strip() for s in rest.split(","))):
        key, eq, value = item.partition("=")
        if not eq or not key.strip() or not value.strip():
            raise NetweaveError(
                f"bad parameter {item!r} in {spec!r}: write parameters as key=value separated by commas"
            )
        key = key.strip().lower()
        if key in params:
            raise NetweaveError(
                f"parameter {key!r} given twice in {spec!r} ({key}={params[key]} and {key}={value.strip()}); "
                "give it once")
        params[key] = value.strip()
    return name.strip().lower(), params


def take(params: dict[str, str], spec: str, allowed: dict[str, tuple[type, object]]) -> dict:
    """Convert ``params`` with ``allowed = {key: (type, default)}``; a default of ``...`` means required.

    Unknown keys, missing required keys and values of the wrong type raise :class:`NetweaveError`;
    so do non-finite numbers (``nan``, ``inf``), for ``int`` and ``float`` parameters alike.
    """
    unknown = sorted(set(params) - set(allowed))
    if unknown:
        raise NetweaveError(
            f"unknown parameter {unknown[0]!r} in {spec!r}; allowed: {', '.join(sorted(allowed))}"
        )
    out = {}
    for key, (typ, default) in allowed.items():
        if key not in params:
            if default is ...:
                raise NetweaveError(f"{spec!r} needs the parameter {key}=…")
            out[key] = default
            continue
        raw = params[key]
        try:
            if typ is bool:
                if raw.lower() not in ("0", "1", "true", "false", "yes", "no"):
                    raise ValueError
                out[key] = raw.lower() in ("1", "true", "yes")
            elif typ is int:
                value = float(raw)  # accept 1e6
                if not math.isfinite(value) or value != int(value):
                    raise ValueError
                out[key] = int(value)
            elif typ is float:
                value = float(raw)
                if not math.isfinite(value):
                    example = f", e.g. {key}={default:g}" if isinstance(default, (int, float)) else ""
                    raise NetweaveError(
                        f"parameter {key}={raw!r} in {spec!r} must be a finite number (not nan or inf){example}")
                out[key] = value
            else:
                out[key] = typ(raw)
        except (ValueError, OverflowError):
            raise NetweaveError(
                f"parameter {key}={raw!r} in {spec!r} is not a valid {typ.__name__}"
            ) from None
    return out
