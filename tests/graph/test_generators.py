import numpy as np
import pytest

from netweave.errors import NetweaveError
from netweave.graph import erdos_renyi, load_dataset, preset_graph, ring, rmat, star


def test_rmat_exact_edges_deterministic_and_skewed():
    a = rmat(4096, 40000, seed=3)
    b = rmat(4096, 40000, seed=3)
    c = rmat(4096, 40000, seed=4)
    assert a.num_nodes == 4096 and a.num_edges == 40000
    assert np.array_equal(a.indices, b.indices) and not np.array_equal(a.indices, c.indices)
    deg = a.degrees
    assert deg.max() > 10 * deg.mean()  # power-law-ish hubs, unlike ER


def test_rmat_non_power_of_two_and_features():
    g = rmat(1000, 5000, seed=0, feat=8, classes=3)
    assert g.indices.max() < 1000 and g.num_edges == 5000
    assert g.features.shape == (1000, 8) and g.features.dtype == np.float32
    assert set(np.unique(g.labels)) == {0, 1, 2} and (g.train_mask ^ g.val_mask ^ g.test_mask).all()


def test_er_star_ring():
    g = erdos_renyi(500, 3000, seed=1)
    assert g.num_edges == 3000 and g.degrees.max() < 40
    s = star(10)
    assert s.num_edges == 9 and s.degrees[0] == 9 and (s.degrees[1:] == 1).all()
    r = ring(7)
    assert r.num_edges == 7 and (r.degrees == 2).all()
    assert ring(2).num_edges == 1


@pytest.mark.parametrize("call, match", [
    (lambda: erdos_renyi(10, 100), "impossible"),
    (lambda: rmat(0, 0), "must be a positive number of vertices"),
    (lambda: ring(1), "at least 2"),
    (lambda: rmat(10, 5, a=0.9, b=0.1, c=0.1), "sum below 1"),
])
def test_generator_errors(call, match):
    with pytest.raises(NetweaveError, match=match):
        call()


def test_reddit_like_statistics():
    g = preset_graph("reddit-like", scale=0.02, seed=0, feat=16)
    assert g.num_nodes == round(232965 * 0.02)
    assert abs(g.degrees.mean() - 490) < 1
    assert g.num_classes == 41 and g.features.shape == (g.num_nodes, 16)
    assert g.degrees.max() > 2 * g.degrees.mean()  # heavy tail


def test_products_like_default_width():
    g = load_dataset("products-like:scale=0.01")
    assert g.feature_dim == 100 and g.num_classes == 47 and abs(g.degrees.mean() - 51) < 1
    assert abs(g.train_mask.mean() - 0.08) < 0.01
    # homophily: 75 % of edges join vertices of the same community (label)
    same = (g.labels[g.edge_sources()] == g.labels[g.indices]).mean()
    assert abs(same - 0.75) < 0.01


def test_generator_specs_and_parameter_errors():
    assert load_dataset("rmat:n=1e3,m=2000,seed=2").num_edges == 2000
    assert load_dataset("er:n=100,m=200").num_edges == 200
    with pytest.raises(NetweaveError, match="needs the parameter m"):
        load_dataset("rmat:n=100")
    with pytest.raises(NetweaveError, match="unknown parameter 'q'"):
        load_dataset("er:n=100,m=10,q=1")
    with pytest.raises(NetweaveError, match="not a valid int"):
        load_dataset("er:n=abc,m=10")
    with pytest.raises(NetweaveError, match="key=value"):
        load_dataset("er:n")


@pytest.mark.parametrize("spec, match", [
    ("rmat:n=-5", r"'rmat:n=-5': n=-5 must be a positive number of vertices"),
    ("er:n=0,m=1", "n=0 must be a positive number"),
    ("rmat:n=10,m=-1", "m=-1 must be non-negative"),
    ("rmat:n=10,m=5,feat=-2", "feat=-2 must be non-negative"),
    ("reddit-like:scale=0", "scale=0 must be positive"),
])
def test_wrong_values_are_named_before_missing_ones(spec, match):
    with pytest.raises(NetweaveError, match=match):
        load_dataset(spec)


@pytest.mark.parametrize("spec, match", [
    ("rmat:n=100000000000,m=10", r"rmat:n=100000000000,m=10: needs about 2,400.0 GB of memory but only 1.0 GB "
                                 r"is available; lower n or m, or run on a machine with more memory"),
    ("er:n=1000,m=1000,feat=200000000", "lower n, m or feat"),
    ("star:n=1e11", "star:n=100000000000: needs about"),
    ("ring:n=1e11", "lower n,"),
    ("reddit-like:scale=1", "reddit-like:scale=1: needs about .* lower scale or pass feat=0"),
    ("products-like:scale=4,feat=0", r"products-like:scale=4,feat=0: needs about .* lower scale, or run"),
])
def test_generators_refuse_what_cannot_fit_before_allocating(monkeypatch, spec, match):
    import netweave.graph.memory as memory
    monkeypatch.setattr(memory, "available_bytes", lambda: 10**9)
    with pytest.raises(NetweaveError, match=match) as err:
        load_dataset(spec)
    assert "\n" not in str(err.value)


def test_available_memory_is_plausible():
    from netweave.graph.memory import available_bytes
    assert 10**7 < available_bytes() < 2**62
