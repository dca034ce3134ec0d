"""MGG on CPU: the layout against brute force, the reference aggregation against a sparse product,
the analytical model, and the tuner's search order and stopping rule on synthetic latencies."""

import numpy as np
import pytest
from scipy.sparse import csr_array

from netweave.errors import NetweaveError
from netweave.graph import load_dataset, rmat
from netweave.kernels import Config, Hardware, aggregate, feasible, launch, mgg_layout, shard_embeddings, smem, tune, wpw
from netweave.kernels.model import PS_VALUES


def graphs():
    yield "cora", load_dataset("cora")
    yield "rmat", rmat(600, 4000, seed=3)
    yield "isolated", rmat(50, 20, seed=1)  # many empty rows


@pytest.mark.parametrize("name,g", list(graphs()), ids=lambda v: v if isinstance(v, str) else "")
@pytest.mark.parametrize("gpus,config", [(1, Config(1, 1, 1)), (3, Config(4, 2, 2)), (4, Config(32, 16, 16)), (8, Config(3, 5, 7))])
def test_layout_is_the_brute_force_split(name, g, gpus, config):
    lay = mgg_layout(g.indptr, g.indices, gpus, config)
    owner_of_row = np.searchsorted(lay.bounds, np.arange(g.num_nodes), side="right") - 1
    seen = []
    for work in lay.gpus:
        lo, hi = work.rows
        for v in range(lo, hi):
            nbr = g.indices[g.indptr[v]:g.indptr[v + 1]]
            mine = nbr[nbr // lay.shard == work.gpu]
            others = nbr[nbr // lay.shard != work.gpu]
            r = v - lo
            assert np.array_equal(work.local_idx[work.local_ptr[r]:work.local_ptr[r + 1]] + work.gpu * lay.shard, mine)
            got = work.remote_owner[work.remote_ptr[r]:work.remote_ptr[r + 1]] * lay.shard + \
                work.remote_off[work.remote_ptr[r]:work.remote_ptr[r + 1]]
            assert np.array_equal(got, others)
        for parts, ptr in ((work.lnp, work.local_ptr), (work.rnp, work.remote_ptr)):
            assert ((parts[:, 2] - parts[:, 1] >= 1) & (parts[:, 2] - parts[:, 1] <= config.ps)).all()
            covered = np.concatenate([np.arange(s, e) for _, s, e in parts]) if len(parts) else np.zeros(0)
            assert np.array_equal(np.sort(covered), np.arange(ptr[-1]))  # every neighbour exactly once
        warps = work.warps(config.dist)
        assert sum(len(work.warp_partitions(w, config.dist)[0]) for w in range(warps)) == len(work.lnp)
        assert sum(len(work.warp_partitions(w, config.dist)[1]) for w in range(warps)) == len(work.rnp)
        seen.append(owner_of_row[lo:hi] == work.gpu)
    assert np.concatenate(seen).all() and lay.bounds[-1] == g.num_nodes
    owner, off = lay.translate(np.arange(g.num_nodes))
    assert np.array_equal(owner * lay.shard + off, np.arange(g.num_nodes))


@pytest.mark.parametrize("mode", ["sum", "mean", "gcn"])
def test_reference_aggregation_matches_the_sparse_product(mode):
    g = rmat(400, 3000, seed=5)
    x = np.random.default_rng(0).standard_normal((g.num_nodes, 7))
    lay = mgg_layout(g.indptr, g.indices, 4, Config(4, 2, 4))
    deg = np.diff(g.indptr)
    a = csr_array((np.ones(g.indices.size), g.indices, g.indptr), shape=(g.num_nodes, g.num_nodes))
    if mode == "gcn":
        inv = 1 / np.sqrt(np.maximum(deg, 1))
        want = inv[:, None] * (a @ (inv[:, None] * x))
    else:
        want = a @ x
        if mode == "mean":
            want = want / np.maximum(deg, 1)[:, None]
    got = aggregate(lay, shard_embeddings(x, lay), deg, mode)
    np.testing.assert_allclose(got, want, atol=1e-12)


def test_analytical_model_equations():
    c = Config(ps=8, dist=4, wpb=2)
    assert wpw(c, 64) == 2 * 8 * 64 * 4 and smem(c, 64) == 8 * 2 * 4 + 2 * 2 * 64 * 4
    assert launch(c, local=100, remote=37, hw=Hardware(num_sms=10)) == {"num_warps": 25, "num_blocks": 13,
                                                                        "blocks_per_sm": 1.3}
    assert not feasible(Config(32, 1, 16), 4096, Hardware(smem_per_block=48 * 1024))


def _bowl(best):
    log = {k: np.log2(v) for k, v in zip(("ps", "dist", "wpb"), best)}
    return lambda c: 1.0 + (np.log2(c.ps) - log["ps"]) ** 2 + (np.log2(c.dist) - log["dist"]) ** 2 + \
        0.5 * (np.log2(c.wpb) - log["wpb"]) ** 2


@pytest.mark.parametrize("best", [(8, 4, 4), (32, 1, 2), (1, 16, 16), (4, 2, 1)])
def test_tuner_finds_a_separable_optimum_in_about_ten_iterations(best):
    r = tune(_bowl(best), dim=16)
    assert (r.best.ps, r.best.dist, r.best.wpb) == best
    assert len(r.path) <= 14
    order = [c for c, _ in r.path]
    first_dist = next((i for i, c in enumerate(order) if c.dist > 1), len(order))
    first_wpb = next((i for i, c in enumerate(order) if c.wpb > 1), len(order))
    assert all(c.dist == 1 and c.wpb == 1 for c in order[:first_dist])  # ps first
    assert first_dist <= first_wpb  # then dist, then wpb
    assert len(set(order)) == len(order)  # the lookup table never measures twice


def test_tuner_retreats_ps_when_bigger_blocks_hurt():
    """Latency that grows with ps·wpb (too-heavy blocks): the tuner must lower ps to raise wpb."""
    def latency(c):
        return 10.0 / c.ps + 10.0 / c.wpb + (0.05 * c.ps * c.wpb) ** 2
    r = tune(latency, dim=16)
    retreats = [i for i in range(1, len(r.path)) if r.path[i][0].ps < r.path[i - 1][0].ps]
    assert retreats, "no retreat of ps"
    brute = min((latency(Config(p, 1, w)), p, w) for p in PS_VALUES for w in (1, 2, 4, 8, 16))
    assert r.latency <= brute[0] * 1.25


def test_bad_configs_are_one_line():
    g = rmat(30, 60, seed=0)
    with pytest.raises(NetweaveError, match="ps in 1..32"):
        mgg_layout(g.indptr, g.indices, 2, Config(64, 1, 1))
    with pytest.raises(NetweaveError, match="GPUs"):
        mgg_layout(g.indptr, g.indices, 0)
    with pytest.raises(NetweaveError, match="unknown aggregation"):
        lay = mgg_layout(g.indptr, g.indices, 2)
        aggregate(lay, shard_embeddings(np.zeros((30, 2)), lay), np.diff(g.indptr), "max")
