"""MGG's heuristic cross-iteration tuner (mgg.txt §6): one measured configuration per iteration.

1. **ps.** Start at ``ps = dist = wpb = 1`` and raise ``ps`` (powers of two) while the latency drops.
2. **dist.** Then raise ``dist`` the same way.
3. **wpb.** Then raise ``wpb``. When a larger ``wpb`` would be slower, *retreat* ``ps`` to its next lower
   value and restart raising ``wpb``.
4. **Stop** when neither a larger ``wpb`` nor a smaller ``ps`` is better than the third-lowest latency
   seen so far.

Every measurement goes into a lookup table and is never repeated. The best configuration in the
table wins. Steps are powers of two, which the paper does not specify; this is what makes
"about 10 iterations" possible in a 32 × 16 × 16 space. Configurations whose shared memory does not
fit count as infinitely slow and are never launched.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field, replace

from .layout import Config
from .model import DIST_VALUES, PS_VALUES, WPB_VALUES, Hardware, feasible


@dataclass
class TuneResult:
    best: Config
    latency: float
    path: list[tuple[Config, float]] = field(default_factory=list)  # measurements, in order
    table: dict[Config, float] = field(default_factory=dict)


def _next(values, v, up=True):
    i = values.index(v) + (1 if up else -1)
    return values[i] if 0 <= i < len(values) else None


def tune(latency: Callable[[Config], float], dim: int, hw: Hardware = Hardware(), max_iterations: int = 64) -> TuneResult:
    """Search ``(ps, dist, wpb)`` with ``latency(config)`` (seconds, e.g. a measured kernel run)."""
    result = TuneResult(Config(), float("inf"))

    def measure(c: Config) -> float:
        if c not in result.table:
            if len(result.table) >= max_iterations:
                return float("inf")
            value = latency(c) if feasible(c, dim, hw) else float("inf")
            result.table[c] = value
            result.path.append((c, value))
        return result.table[c]

    cur = Config(1, 1, 1)
    measure(cur)
    for axis, values in (("ps", PS_VALUES), ("dist", DIST_VALUES)):
        while (v := _next(values, getattr(cur, axis))) is not None:
            cand = replace(cur, **{axis: v})
            if measure(cand) < result.table[cur]:
                cur = cand
            else:
                break
    while True:
        third = sorted(result.table.values())[min(2, len(result.table) - 1)]
        w = _next(WPB_VALUES, cur.wpb)
        if w is not None and measure(replace(cur, wpb=w)) < result.table[cur]:
            cur = replace(cur, wpb=w)
            continue
        p = _next(PS_VALUES, cur.ps, up=False)
        if p is None or measure(replace(cur, ps=p)) > third:
            break
        cur = replace(cur, ps=p)  # retreat ps, then raise wpb again
    result.best, result.latency = min(result.table.items(), key=lambda kv: kv[1])
    return result
