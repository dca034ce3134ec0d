"""``reddit-like`` and ``products-like``: synthetic graphs with the published statistics.

Generator: a degree-corrected stochastic block model. Every vertex belongs to one of ``classes``
communities (its label) and gets a lognormal expected degree; an edge picks one endpoint with
probability proportional to expected degree, and the other proportional to expected degree inside
the first one's community with probability ``homophily`` (else anywhere). This reproduces the mean
degree, a heavy tail, and the label-correlated community structure that makes METIS partitions
and GNN accuracy meaningful. Edges inside and across communities are drawn as two exact pools, so the
edge homophily is ``homophily`` (0.75; Reddit's is ≈ 0.78) unless the communities are too small to
hold that many distinct edges (tiny scales), where the inside pool is capped at 30 % of its pairs. Features are class-conditioned Gaussians of the real width.

The sampling is fused (numba) but draws the same random numbers in the same order as whole-array
``AliasTable.sample`` calls and ``from_edges`` (the graph of a seed did not change with that): edges
are kept as sorted keys and the CSR is filled from them, so a Reddit-size graph peaks at ≈ 1.8 GB
(was 7 GB) and takes ≈ 15 s (was 33 s) on a 2-core VM.

=========== ========== ============ ======== ======= =========== ===================
preset      vertices   mean degree  features classes lognormal σ split (train/val)
=========== ========== ============ ======== ======= =========== ===================
reddit      232,965    ≈ 490        602      41      1.0         66% / 10%
products    2,449,029  ≈ 51         100      47      1.3         8% / 2%
=========== ========== ============ ======== ======= =========== ===================

The vertex count scales with ``scale``; the mean degree stays (capped at ``n/4``), so
``reddit-like:scale=0.25`` has ≈ 58k vertices and ≈ 14M edges. σ was chosen so the largest
expected degree is of the order of the real graph's maximum degree (Reddit ≈ 21.6k).
"""

from __future__ import annotations

from dataclasses import dataclass

import numba
import numpy as np

from ..errors import NetweaveError
from .alias import AliasTable
from .generators import check_generator_memory, graph_from_keys, merged_keys, node_data, unique_keys
from .graph import Graph


@dataclass(frozen=True)
class Preset:
    vertices: int
    mean_degree: float
    features: int
    classes: int
    sigma: float
    split: tuple[float, float]
    homophily: float = 0.75


PRESETS = {
    "reddit-like": Preset(232_965, 490.0, 602, 41, 1.0, (0.66, 0.10)),
    "products-like": Preset(2_449_029, 51.0, 100, 47, 1.3, (0.08, 0.02)),
}


def preset_graph(name: str, scale: float = 1.0, seed: int = 0, feat: int | None = None) -> Graph:
    """Generate preset ``name`` at ``scale`` (``feat=0`` skips the features to save memory)."""
    p = PRESETS[name]
    if not 0 < scale <= 4:
        raise NetweaveError(f"{name}: scale={scale} must be in (0, 4]")
    n = max(16, int(round(p.vertices * scale)))
    mean_degree = min(p.mean_degree, n / 4)
    m = int(round(n * mean_degree / 2))
    width = p.features if feat is None else feat
    check_generator_memory(f"{name}:scale={scale:g}" + (f",feat={width}" if feat is not None else ""), n, m, width,
                           fix="lower scale" + (" or pass feat=0" if width else ""),
                           per_vertex=64, per_edge=48)  # measured ~20 RSS (reddit-like:scale=1: 2 uniforms, 1 endpoint,
    # 1 key per draw); 48 leaves room for the merge's temporaries and the address space a limit counts
    rng = np.random.default_rng(seed)
    labels = rng.choice(p.classes, n, p=rng.dirichlet(np.full(p.classes, 4.0)))
    weight = rng.lognormal(0.0, p.sigma, n)
    weight = np.minimum(weight / weight.mean() * mean_degree, n / 4)
    # Alias tables: over all vertices, and per community over vertices sorted by community.
    anywhere = AliasTable(weight)
    order = np.argsort(labels, kind="stable")
    bounds = np.concatenate([[0], np.cumsum(np.bincount(labels, minlength=p.classes))])
    within = AliasTable(weight[order], bounds)

    # Exact edge counts for both pools (they are disjoint): homophily·m inside communities, capped
    # at 30 % of the pairs the communities can hold (tiny scales), the rest between communities.
    sizes = np.diff(bounds)
    m_in = int(min(p.homophily * m, 0.3 * (sizes * (sizes - 1) // 2).sum()))

    # Each draw is AliasTable.sample's arithmetic on the same random numbers (two uniform arrays per
    # endpoint, in the same order), fused into one pass that writes edge keys (the numba functions below).
    pos, acc = np.empty(0), np.empty(0)

    def uniforms(k):
        nonlocal pos, acc
        if pos.size != k:
            pos, acc = np.empty(k), np.empty(k)
        rng.random(out=pos)
        rng.random(out=acc)

    def first_endpoints(k):
        uniforms(k)
        u = np.empty(k, dtype=np.int64)
        _pick_anywhere(pos, acc, anywhere.prob, anywhere.alias, u)
        uniforms(k)
        return u

    def draw_inside(k):
        u = first_endpoints(k)
        return _keys_inside(u, pos, acc, labels, within.bounds, within.prob, within.alias, order, n)

    def draw_across(k):
        u = first_endpoints(k)
        return _keys_across(u, pos, acc, anywhere.prob, anywhere.alias, labels, n)

    keys_in = unique_keys(draw_inside, n, m_in, rng, name)
    keys = merged_keys(keys_in, unique_keys(draw_across, n, m - m_in, rng, name))
    del keys_in, pos, acc
    data = node_data(n, width, p.classes, rng, labels=labels, split=p.split)
    return graph_from_keys(keys, n, name=f"{name}-{scale:g}", **data)


@numba.njit(cache=True)
def _pick_anywhere(pos, acc, prob, alias, out):  # pragma: no cover - compiled
    """``AliasTable.sample(0, rng, size=k)`` over one segment ``[0, n)`` given its two uniforms."""
    span = prob.shape[0]
    for i in range(out.shape[0]):
        idx = np.int64(pos[i] * span)
        out[i] = idx if acc[i] < prob[idx] else alias[idx]


@numba.njit(cache=True)
def _keys_inside(u, pos, acc, labels, bounds, prob, alias, order, n):  # pragma: no cover - compiled
    """Second endpoints inside u's community (``order[within.sample(labels[u])]``), as edge keys
    ``min * n + max``; -1 for a self-loop (dropped after sorting, by ``unique_keys``)."""
    keys = np.empty(u.shape[0], np.int64)
    for i in range(u.shape[0]):
        seg = labels[u[i]]
        lo = bounds[seg]
        idx = lo + np.int64(pos[i] * (bounds[seg + 1] - lo))
        v = order[idx if acc[i] < prob[idx] else alias[idx]]
        keys[i] = min(u[i], v) * n + max(u[i], v) if v != u[i] else -1
    return keys


@numba.njit(cache=True)
def _keys_across(u, pos, acc, prob, alias, labels, n):  # pragma: no cover - compiled
    """Second endpoints anywhere, as edge keys ``min * n + max`` when in another community, else -1."""
    span = prob.shape[0]
    keys = np.empty(u.shape[0], np.int64)
    for i in range(u.shape[0]):
        idx = np.int64(pos[i] * span)
        v = idx if acc[i] < prob[idx] else alias[idx]
        keys[i] = min(u[i], v) * n + max(u[i], v) if labels[u[i]] != labels[v] else -1
    return keys
