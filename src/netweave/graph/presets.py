"""``reddit-like`` and ``products-like``: synthetic graphs with the published statistics.

Generator: a degree-corrected stochastic block model. Every vertex belongs to one of ``classes``
communities (its label) and gets a lognormal expected degree; an edge picks one endpoint with
probability proportional to expected degree, and the other proportional to expected degree inside
the first one's community with probability ``homophily`` (else anywhere). This reproduces the mean
degree, a heavy tail, and the label-correlated community structure that makes METIS partitions
and GNN accuracy meaningful. Edges inside and across communities are drawn as two exact pools, so the
edge homophily is ``homophily`` (0.75; Reddit's is ≈ 0.78) unless the communities are too small to
hold that many distinct edges (tiny scales), where the inside pool is capped at 30 % of its pairs. Features are class-conditioned Gaussians of the real width.

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

import numpy as np

from ..errors import NetweaveError
from .alias import AliasTable
from .generators import check_generator_memory, node_data, unique_edges
from .graph import Graph, from_edges


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
                           per_vertex=64, per_edge=120)  # measured: alias tables per vertex, two edge pools
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

    def draw_inside(k):
        u = anywhere.sample(0, rng, size=k)
        return u, order[within.sample(labels[u], rng)]

    def draw_across(k):
        u, v = anywhere.sample(0, rng, size=k), anywhere.sample(0, rng, size=k)
        keep = labels[u] != labels[v]
        return u[keep], v[keep]

    src_in, dst_in = unique_edges(draw_inside, n, m_in, rng, name)
    src_out, dst_out = unique_edges(draw_across, n, m - m_in, rng, name)
    src, dst = np.concatenate([src_in, src_out]), np.concatenate([dst_in, dst_out])
    data = node_data(n, width, p.classes, rng, labels=labels, split=p.split)
    return from_edges(src, dst, n, name=f"{name}-{scale:g}", **data)
