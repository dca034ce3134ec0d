import numpy as np
import pytest

from netweave.errors import NetweaveError
from netweave.graph import load_dataset, rmat
from netweave.partition import (Partition, hierarchical_partition, load_partition, metis_partition,
                                random_partition, range_partition, range_split_points)


@pytest.fixture(scope="module")
def cora():
    return load_dataset("cora")


def test_metis_balanced_deterministic_and_better_than_random(cora):
    a = metis_partition(cora, 8, seed=1)
    b = metis_partition(cora, 8, seed=1)
    assert np.array_equal(a.parts, b.parts)
    sizes = a.sizes()
    assert sizes.min() > 0 and sizes.max() <= 1.05 * cora.num_nodes / 8
    cut = lambda p: (p.parts[cora.edge_sources()] != p.parts[cora.indices]).sum() // 2  # noqa: E731
    assert cut(a) < 0.3 * cut(random_partition(cora, 8, seed=1))


def test_metis_one_part_and_too_many_parts(cora):
    assert (metis_partition(cora, 1).parts == 0).all()
    with pytest.raises(NetweaveError, match="exceeds the graph's 2708 vertices"):
        metis_partition(cora, 3000)
    with pytest.raises(NetweaveError, match="at least one part"):
        random_partition(cora, 0)


def test_random_is_exactly_balanced_and_seeded(cora):
    p = random_partition(cora, 7, seed=3)
    assert p.sizes().max() - p.sizes().min() <= 1
    assert np.array_equal(p.parts, random_partition(cora, 7, seed=3).parts)
    assert not np.array_equal(p.parts, random_partition(cora, 7, seed=4).parts)


def brute_force_range(indptr, k):
    """Algorithm 1 by its definition: walk rows until the part holds ePerGPU entries."""
    n = len(indptr) - 1
    per = (indptr[-1] + k - 1) // k
    bounds, last = [0], 0
    for s in range(k):
        target = min(indptr[last] + per, indptr[-1])
        nid = max(i for i in range(last, n + 1) if indptr[i] <= target)
        nid = min(max(nid, last + 1), n - (k - 1 - s))
        bounds.append(nid)
        last = nid
    bounds[-1] = n
    return bounds


@pytest.mark.parametrize("k", [1, 2, 3, 8, 16])
def test_range_split_matches_algorithm_1(k):
    g = rmat(500, 3000, seed=k)
    assert range_split_points(g.indptr, k).tolist() == brute_force_range(g.indptr.tolist(), k)
    p = range_partition(g, k)
    assert (np.diff(p.parts) >= 0).all() and (p.sizes() > 0).all()  # contiguous, non-empty
    load = np.bincount(p.parts, weights=g.degrees, minlength=k)
    assert load[:-1].max(initial=0) <= np.ceil(g.indptr[-1] / k) + g.degrees.max()


def test_range_balances_edges_not_vertices():
    g = load_dataset("star:n=100")  # vertex 0 holds half of all edge entries
    p = range_partition(g, 2)
    assert p.sizes().tolist() == [1, 99]


def test_hierarchical_cuts_fewer_edges_between_machines(cora):
    machines = [list(range(4)), list(range(4, 8))]
    h = hierarchical_partition(cora, machines, seed=0)
    flat = metis_partition(cora, 8, seed=0)
    machine = lambda p: p.parts // 4  # noqa: E731
    cross = lambda p: (machine(p)[cora.edge_sources()] != machine(p)[cora.indices]).sum()  # noqa: E731
    assert h.num_parts == 8 and (h.sizes() > 0).all()
    assert cross(h) <= cross(flat)
    assert np.array_equal(h.parts, hierarchical_partition(cora, machines, seed=0).parts)


def test_hierarchical_rejects_bad_machine_lists(cora):
    with pytest.raises(NetweaveError, match="exactly one"):
        hierarchical_partition(cora, [[0, 1], [1, 2]])
    with pytest.raises(NetweaveError, match="exactly one"):
        hierarchical_partition(cora, [[0], []])


def test_partition_save_load_and_validation(tmp_path, cora):
    p = metis_partition(cora, 4)
    p.save(tmp_path / "p.npz")
    q = load_partition(tmp_path / "p.npz")
    assert np.array_equal(p.parts, q.parts) and q.num_parts == 4 and q.method == "metis"
    np.savez(tmp_path / "bad.npz", foo=np.zeros(3))
    with pytest.raises(NetweaveError, match="no 'parts' array"):
        load_partition(tmp_path / "bad.npz")
    with pytest.raises(NetweaveError, match=r"must lie in \[0, 2\)"):
        Partition(np.array([0, 1, 2]), 2)
    with pytest.raises(NetweaveError, match="has 3 vertices but the graph has 2708"):
        Partition(np.array([0, 1, 1]), 2).check_matches(cora.num_nodes)
