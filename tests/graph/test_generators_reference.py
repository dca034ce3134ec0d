"""The fused generators against the plain numpy pipeline they replaced (issue 20): same seed, same
graph, bit for bit (the random numbers are drawn in the same order), and the preset statistics."""

import numpy as np
import pytest

from netweave.graph import erdos_renyi, from_edges, preset_graph, rmat
from netweave.graph.alias import AliasTable
from netweave.graph.generators import graph_from_keys, node_data
from netweave.graph.graph import sorted_unique
from netweave.graph.presets import PRESETS
from netweave.graph.splits import random_split


def reference_unique_edges(draw, n, m, rng):
    keys = np.empty(0, dtype=np.int64)
    yield_rate = 1.0
    while m - keys.size > 0:
        batch = min(int((m - keys.size) * 1.1 / max(yield_rate, 0.02)) + 1024, 4 * m + 1024)
        src, dst = draw(batch)
        keep = src != dst
        lo, hi = np.minimum(src[keep], dst[keep]), np.maximum(src[keep], dst[keep])
        before = keys.size
        keys = sorted_unique(np.concatenate([keys, lo * n + hi]))
        yield_rate = (keys.size - before) / batch
    if keys.size > m:
        keys = keys[rng.permutation(keys.size)[:m]]
    return keys // n, keys % n


def reference_node_data(n, feat, classes, rng, labels, split):
    data = {"labels": labels.astype(np.int64)}
    data["train_mask"], data["val_mask"], data["test_mask"] = random_split(n, *split, seed=int(rng.integers(2**31)))
    if feat > 0:
        x = rng.standard_normal((n, feat), dtype=np.float32)
        data["features"] = x + rng.standard_normal((classes, feat), dtype=np.float32)[data["labels"]]
    return data


def reference_preset(name, scale, seed, feat):
    """preset_graph as it was: AliasTable.sample on whole arrays, then from_edges."""
    p = PRESETS[name]
    n = max(16, int(round(p.vertices * scale)))
    mean_degree = min(p.mean_degree, n / 4)
    m = int(round(n * mean_degree / 2))
    rng = np.random.default_rng(seed)
    labels = rng.choice(p.classes, n, p=rng.dirichlet(np.full(p.classes, 4.0)))
    weight = rng.lognormal(0.0, p.sigma, n)
    weight = np.minimum(weight / weight.mean() * mean_degree, n / 4)
    anywhere = AliasTable(weight)
    order = np.argsort(labels, kind="stable")
    bounds = np.concatenate([[0], np.cumsum(np.bincount(labels, minlength=p.classes))])
    within = AliasTable(weight[order], bounds)
    sizes = np.diff(bounds)
    m_in = int(min(p.homophily * m, 0.3 * (sizes * (sizes - 1) // 2).sum()))

    def draw_inside(k):
        u = anywhere.sample(0, rng, size=k)
        return u, order[within.sample(labels[u], rng)]

    def draw_across(k):
        u, v = anywhere.sample(0, rng, size=k), anywhere.sample(0, rng, size=k)
        keep = labels[u] != labels[v]
        return u[keep], v[keep]

    src_in, dst_in = reference_unique_edges(draw_inside, n, m_in, rng)
    src_out, dst_out = reference_unique_edges(draw_across, n, m - m_in, rng)
    data = reference_node_data(n, feat, p.classes, rng, labels, p.split)
    return from_edges(np.concatenate([src_in, src_out]), np.concatenate([dst_in, dst_out]), n, **data)


def same_graph(a, b):
    for name in ("indptr", "indices", "labels", "train_mask", "val_mask", "test_mask", "features"):
        x, y = getattr(a, name), getattr(b, name)
        if x is None or y is None:
            assert x is None and y is None, name
            continue
        assert x.dtype == y.dtype, name
        np.testing.assert_array_equal(x, y, err_msg=name)


@pytest.mark.parametrize("name, scale, seed, feat", [("reddit-like", 0.01, 0, 8), ("reddit-like", 0.004, 3, 0),
                                                      ("products-like", 0.002, 1, 4)])
def test_preset_equals_plain_pipeline(name, scale, seed, feat):
    same_graph(preset_graph(name, scale=scale, seed=seed, feat=feat), reference_preset(name, scale, seed, feat))


def test_rmat_and_er_equal_plain_pipeline():
    n, m = 3000, 20000
    rng = np.random.default_rng(4)
    levels = int(np.ceil(np.log2(n)))
    perm = rng.permutation(n)

    def draw(k):
        src = np.zeros(k, dtype=np.int64)
        dst = np.zeros(k, dtype=np.int64)
        for _ in range(levels):
            r = rng.random(k, dtype=np.float32)
            src = 2 * src + (r >= 0.76)
            dst = 2 * dst + (((r >= 0.57) & (r < 0.76)) | (r >= 0.95))
        ok = (src < n) & (dst < n)
        return perm[src[ok]], perm[dst[ok]]

    lo, hi = reference_unique_edges(draw, n, m, rng)
    want = from_edges(lo, hi, n, **node_data(n, 3, 2, rng))
    same_graph(rmat(n, m, seed=4, feat=3, classes=2), want)
    rng = np.random.default_rng(7)
    lo, hi = reference_unique_edges(lambda k: (rng.integers(0, n, k), rng.integers(0, n, k)), n, m, rng)
    same_graph(erdos_renyi(n, m, seed=7), from_edges(lo, hi, n))


def test_graph_from_keys_equals_from_edges():
    rng = np.random.default_rng(0)
    n = 700
    src, dst = rng.integers(0, n, 5000), rng.integers(0, n, 5000)
    keep = src != dst
    keys = sorted_unique(np.minimum(src, dst)[keep] * n + np.maximum(src, dst)[keep])
    same_graph(graph_from_keys(keys, n), from_edges(src, dst, n))
    assert graph_from_keys(keys[:0], 5).num_edges == 0


def test_reddit_like_statistics_hold():
    g = preset_graph("reddit-like", scale=0.05, seed=1, feat=4)
    n = round(232965 * 0.05)
    assert g.num_nodes == n and g.num_edges == round(n * 490 / 2)
    assert abs(g.degrees.mean() - 490) < 1 and g.degrees.max() > 3 * g.degrees.mean()
    # the inside pool is exactly homophily * m, capped at 30 % of the pairs inside communities
    sizes = np.bincount(g.labels)
    m_in = int(min(0.75 * g.num_edges, 0.3 * (sizes * (sizes - 1) // 2).sum()))
    same = (g.labels[g.edge_sources()] == g.labels[g.indices]).sum() // 2
    assert same == m_in and m_in < 0.75 * g.num_edges  # this scale is capped
    big = preset_graph("products-like", scale=0.01, seed=2, feat=0)
    assert abs((big.labels[big.edge_sources()] == big.labels[big.indices]).mean() - 0.75) < 1e-3
    # symmetric, sorted rows, no self-loops, no duplicates
    rows = g.edge_sources()
    assert (rows != g.indices).all()
    assert (np.diff(rows.astype(np.int64) * n + g.indices) > 0).all()
    t = sorted_unique(np.minimum(rows, g.indices).astype(np.int64) * n + np.maximum(rows, g.indices))
    assert t.size == g.num_edges
    # features: class-conditioned (class means differ by about one unit)
    means = np.stack([g.features[g.labels == c].mean(0) for c in range(3)])
    assert np.abs(means[0] - means[1]).mean() > 0.3
