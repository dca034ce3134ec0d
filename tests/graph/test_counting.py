"""The counting sorts against numpy's own sorts and ``np.unique`` (the references they replace)."""

import numpy as np
import pytest

from netweave.graph.counting import compact_ids, counting_argsort, counting_lexsort, group_by, run_bounds, undirected_csr


@pytest.mark.parametrize("seed", range(5))
def test_counting_argsort_is_numpys_stable_argsort(seed):
    rng = np.random.default_rng(seed)
    keys = rng.integers(0, rng.integers(1, 300), 5000)
    assert np.array_equal(counting_argsort(keys), np.argsort(keys, kind="stable"))
    assert np.array_equal(counting_argsort(keys.astype(np.int32), 400), np.argsort(keys, kind="stable"))


@pytest.mark.parametrize("seed", range(5))
def test_counting_lexsort_is_numpys_lexsort(seed):
    rng = np.random.default_rng(seed)
    keys = tuple(rng.integers(0, rng.integers(1, 40), 3000) for _ in range(3))
    assert np.array_equal(counting_lexsort(keys), np.lexsort(keys))


def test_counting_sorts_refuse_keys_out_of_range():
    with pytest.raises(ValueError):
        counting_argsort(np.array([3, -1, 2]))
    with pytest.raises(ValueError):
        counting_argsort(np.array([3, 1, 2]), 3)
    assert counting_argsort(np.array([], dtype=np.int64)).size == 0


@pytest.mark.parametrize("seed", range(4))
def test_undirected_csr_is_the_unique_symmetric_keys(seed):
    rng = np.random.default_rng(seed)
    k = 200
    a, b = rng.integers(0, k, 4000), rng.integers(0, k, 4000)  # duplicates, both directions and self-loops
    indptr, cols = undirected_csr(a, b, k)
    keys = np.unique(np.concatenate([a * k + b, b * k + a]))
    keys = keys[keys // k != keys % k]
    assert np.array_equal(cols, keys % k)
    assert np.array_equal(np.diff(indptr), np.bincount(keys // k, minlength=k))


def test_compact_ids_is_unique_and_searchsorted():
    rng = np.random.default_rng(0)
    u, v = rng.integers(0, 1000, 300), rng.integers(0, 1000, 200)
    ids, place = compact_ids(1000, u, v)
    assert np.array_equal(ids, np.unique(np.concatenate([u, v])))
    assert np.array_equal(place[u], np.searchsorted(ids, u)) and np.array_equal(place[v], np.searchsorted(ids, v))
    assert (place[np.setdiff1d(np.arange(1000), ids)] == -1).all()


def test_group_by_is_a_mask_per_present_label():
    rng = np.random.default_rng(0)
    label = rng.integers(0, 30, 2000) * 2  # odd labels absent
    items = rng.permutation(2000)
    groups = group_by(label, items)
    assert len(groups) == np.unique(label).size
    for g, lab in zip(groups, np.unique(label)):
        assert np.array_equal(g, items[label == lab])
    assert all(np.array_equal(g, np.flatnonzero(label == lab)) for g, lab in zip(group_by(label), np.unique(label)))
    assert group_by(np.array([], dtype=np.int64)) == []


@pytest.mark.parametrize("seed", range(3))
def test_run_bounds_are_np_uniques_first_indices(seed):
    rng = np.random.default_rng(seed)
    a, b = np.sort(rng.integers(0, 30, 2000)), rng.integers(0, 3, 2000)
    order = np.lexsort((b, a))
    a, b = a[order], b[order]
    _, first = np.unique(np.stack([a, b], axis=1), axis=0, return_index=True)
    assert np.array_equal(run_bounds(a, b), np.append(np.sort(first), a.size))
    assert np.array_equal(run_bounds(a), np.append(np.unique(a, return_index=True)[1], a.size))
    assert np.array_equal(run_bounds(np.array([], dtype=np.int64)), [0])
