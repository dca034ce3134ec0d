"""Walker's alias method: O(1) sampling from discrete distributions, vectorised over samples.

Tables are built per *segment* of a weight array, so one table serves "pick a vertex of community
c proportionally to its weight" for every community at once.
"""

from __future__ import annotations

import numba
import numpy as np


@numba.njit(cache=True)
def _build(weight, bounds, prob, alias):  # pragma: no cover - compiled
    for s in range(bounds.shape[0] - 1):
        lo, hi = bounds[s], bounds[s + 1]
        size = hi - lo
        if size == 0:
            continue
        total = 0.0
        for i in range(lo, hi):
            total += weight[i]
        small = np.empty(size, np.int64)
        large = np.empty(size, np.int64)
        ns = nl = 0
        for i in range(lo, hi):
            prob[i] = weight[i] * size / total if total > 0 else 1.0
            alias[i] = i
            if prob[i] < 1.0:
                small[ns] = i
                ns += 1
            else:
                large[nl] = i
                nl += 1
        while ns > 0 and nl > 0:
            ns -= 1
            nl -= 1
            s_i, l_i = small[ns], large[nl]
            alias[s_i] = l_i
            prob[l_i] -= 1.0 - prob[s_i]
            if prob[l_i] < 1.0:
                small[ns] = l_i
                ns += 1
            else:
                nl += 1
        for k in range(ns):
            prob[small[k]] = 1.0
        for k in range(nl):
            prob[large[k]] = 1.0


class AliasTable:
    """Sampler for weights split into segments ``[bounds[s], bounds[s+1])``.

    ``sample(segment, rng)`` returns, for each entry of ``segment``, an index inside that segment
    drawn with probability proportional to ``weight``.
    """

    def __init__(self, weight: np.ndarray, bounds: np.ndarray | None = None):
        weight = np.asarray(weight, dtype=np.float64)
        self.bounds = np.asarray([0, weight.size] if bounds is None else bounds, dtype=np.int64)
        self.prob = np.empty(weight.size)
        self.alias = np.empty(weight.size, dtype=np.int64)
        _build(weight, self.bounds, self.prob, self.alias)

    def sample(self, segment: np.ndarray | int, rng: np.random.Generator, size: int | None = None) -> np.ndarray:
        lo = self.bounds[segment] if size is None else np.full(size, self.bounds[segment])
        span = self.bounds[np.asarray(segment) + 1] - self.bounds[segment]
        idx = lo + (rng.random(lo.shape) * span).astype(np.int64)
        return np.where(rng.random(lo.shape) < self.prob[idx], idx, self.alias[idx])
