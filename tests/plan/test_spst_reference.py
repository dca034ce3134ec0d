"""The optimised SPST kernel against a plain re-implementation of DGCL's Algorithms 1-2.

The reference below is the planner as it was before the kernel was optimised (issue 20): link
costs recomputed from the hop loads on every relaxation, one Dijkstra that selects every node
(tree nodes included) by scanning, the hops sorted with ``np.lexsort``. The optimised planner must
produce the very same plan (same hops, same order, same dtypes) for every seed.
"""

import numpy as np
import pytest

from netweave.graph import load_dataset, rmat
from netweave.partition import metis_partition, random_partition
from netweave.plan.cost import DGCL_MODEL
from netweave.plan import p2p_plan, spst_plan, worker_links
from netweave.plan.plan import GraphCommPlan
from netweave.plan.spst import destinations
from netweave.topology import load_topology_spec

from plan_fixtures import fig6_topology, relation

FB = 512


def reference_destinations(comm):
    m = comm.num_parts
    pair = comm.send_pairs()
    order = np.lexsort((pair % m, comm.send_ids))
    ids, dest = comm.send_ids[order], (pair % m)[order]
    starts = np.flatnonzero(np.r_[True, ids[1:] != ids[:-1]]) if ids.size else np.zeros(0, np.int64)
    return ids[starts], np.append(starts, ids.size).astype(np.int64), dest.astype(np.int64)


def better(a1, a2, b1, b2, tol):
    if a1 < b1 - tol:
        return True
    if a1 > b1 + tol:
        return False
    return a2 < b2 - tol * 1e-3


def reference_spst(comm, links, fb, seed):
    """Algorithm 1 with on-demand Algorithm 2 costs, written plainly (the pre-optimisation kernel)."""
    m = comm.num_parts
    vertices, dest_ptr, dest = reference_destinations(comm)
    order = np.random.default_rng(seed).permutation(vertices.size)
    tol = 1e-6 * fb / links.hop_bw.max()
    fb = float(fb)
    max_stage = max(m - 1, 1)
    bw = links.hop_bw.tolist()
    hops_of = [links.link_hops[links.link_ptr[l]:links.link_ptr[l + 1]].tolist() for l in range(m * m)]
    exists = links.exists.tolist()
    load = [[0.0] * len(bw) for _ in range(max_stage + 1)]
    stage_time = [0.0] * (max_stage + 1)
    owner = comm.parts.tolist()
    inf = float("inf")

    def link_cost(l, k):
        new_time = 0.0
        for h in hops_of[l]:
            t = (load[k][h] + fb) / bw[h]
            if t > new_time:
                new_time = t
        return max(0.0, new_time - stage_time[k]), new_time

    out = []
    for idx in order.tolist():
        u = int(vertices[idx])
        s = owner[u]
        in_tree = [False] * m
        depth = [0] * m
        in_tree[s] = True
        is_dest = [False] * m
        for d in dest[dest_ptr[idx]:dest_ptr[idx + 1]].tolist():
            is_dest[d] = True
        remaining = int(dest_ptr[idx + 1] - dest_ptr[idx])
        while remaining:
            d1 = [0.0 if in_tree[v] else inf for v in range(m)]
            d2 = list(d1)
            dep = [depth[v] if in_tree[v] else -1 for v in range(m)]
            parent = [-1] * m
            done = [False] * m
            target = -1
            for _ in range(m):
                v = -1
                for w in range(m):
                    if not done[w] and d1[w] < inf and (v < 0 or better(d1[w], d2[w], d1[v], d2[v], tol)):
                        v = w
                if v < 0:
                    break
                done[v] = True
                if is_dest[v] and not in_tree[v]:
                    target = v
                    break
                k = dep[v] + 1
                if k > max_stage:
                    continue
                for w in range(m):
                    l = v * m + w
                    if done[w] or in_tree[w] or not exists[l]:
                        continue
                    c1, c2 = link_cost(l, k)
                    if better(d1[v] + c1, d2[v] + c2, d1[w], d2[w], tol):
                        d1[w], d2[w], dep[w], parent[w] = d1[v] + c1, d2[v] + c2, k, v
            assert target >= 0
            c = target
            while not in_tree[c]:
                p, k = parent[c], dep[c]
                for h in hops_of[p * m + c]:
                    load[k][h] += fb
                    stage_time[k] = max(stage_time[k], load[k][h] / bw[h])
                out.append((k, p, c, u))
                c = p
            c = target
            while not in_tree[c]:
                in_tree[c] = True
                depth[c] = dep[c]
                remaining -= is_dest[c]
                c = parent[c]
    st, src, dst, vert = (np.array(x, dtype=np.int64).reshape(-1) for x in zip(*out)) if out else [np.zeros(0, np.int64)] * 4
    return GraphCommPlan.from_hops(st, src, dst, vert, comm.parts, fb, links.workers, "spst")


def same_plan(a, b):
    for name in ("hop_stage", "hop_src", "hop_dst", "hop_vertex", "parts"):
        x, y = getattr(a, name), getattr(b, name)
        assert x.dtype == y.dtype, name
        np.testing.assert_array_equal(x, y, err_msg=name)
    assert (a.feature_bytes, a.workers, a.planner) == (b.feature_bytes, b.workers, b.planner)


@pytest.mark.parametrize("topo", ["dgx1", "dgx1x2", "pcie8", "star:n=8"])
@pytest.mark.parametrize("seed", [0, 5])
def test_spst_equals_plain_reference(topo, seed):
    g = rmat(500, 4000, seed=seed + 1)
    links = worker_links(load_topology_spec(topo))
    part = random_partition(g, links.num_workers, seed=seed) if seed else metis_partition(g, links.num_workers, seed=seed)
    comm = relation(g, part.parts)
    plan = spst_plan(comm, links, FB, seed=seed, guard_p2p=False, model=DGCL_MODEL)
    assert plan.num_hops > comm.send_ids.size * 0.5
    same_plan(plan, reference_spst(comm, links, FB, seed))


def test_spst_equals_reference_when_relaying(fig6):
    # Figure 6: slow QPI, so paths of several hops and several stages.
    g = load_dataset("cora")
    links = worker_links(fig6_topology())
    comm = relation(g, metis_partition(g, 4).parts)
    plan = spst_plan(comm, links, FB, seed=2, guard_p2p=False, model=DGCL_MODEL)
    assert plan.num_stages >= 3
    same_plan(plan, reference_spst(comm, links, FB, 2))


def test_destinations_and_direct_plan_equal_the_plain_versions():
    g = rmat(800, 6000, seed=3)
    links = worker_links(load_topology_spec("dgx1x2"))
    comm = relation(g, metis_partition(g, 16).parts)
    for got, want in zip(destinations(comm), reference_destinations(comm)):
        assert got.dtype == want.dtype
        np.testing.assert_array_equal(got, want)
    # The guard's P2P plan is p2p_plan's, labelled spst when it wins.
    from netweave.plan.spst import _direct_plan
    same_plan(_direct_plan(comm, links, FB), p2p_plan(comm, links, FB))
