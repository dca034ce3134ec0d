import heapq
from dataclasses import replace

import numpy as np
import pytest

from netweave.graph import from_edges, load_dataset, rmat
from netweave.partition import metis_partition, random_partition
from netweave.plan.cost import DGCL_MODEL
from netweave.plan import p2p_plan, plan_cost, spst_plan, validate_plan, worker_links
from netweave.plan.spst import destinations
from netweave.topology import dgx1, load_topology_spec, topology_from_dict

from plan_fixtures import relation

FB = 512


def triangle(direct_gbps):
    nodes = [{"name": n, "kind": "gpu"} for n in "ABC"] + [{"name": "S", "kind": "switch"}]
    links = [{"a": "A", "b": "B", "gbps": 800}, {"a": "B", "b": "C", "gbps": 800},
             {"a": "A", "b": "S", "gbps": direct_gbps}, {"a": "S", "b": "C", "gbps": direct_gbps},
             {"a": "B", "b": "S", "gbps": direct_gbps}]
    return topology_from_dict({"nodes": nodes, "links": links})


def test_relays_through_fast_intermediate_when_direct_link_is_slow():
    g = from_edges([0], [2], 3)  # vertex 0 on A needed by C (and 2 on C needed by A)
    comm = relation(g, [0, 1, 2])
    links = worker_links(triangle(direct_gbps=8))
    plan = spst_plan(comm, links, FB, model=DGCL_MODEL)
    hops = {(int(s), int(a), int(b), int(v)) for s, a, b, v in zip(plan.hop_stage, plan.hop_src, plan.hop_dst, plan.hop_vertex)}
    assert (1, 0, 1, 0) in hops and (2, 1, 2, 0) in hops  # A -> B -> C
    fast = spst_plan(comm, worker_links(triangle(direct_gbps=8000)), FB, model=DGCL_MODEL)
    assert fast.num_hops == 2 and fast.num_stages == 1  # direct when it is faster


def test_fuses_multi_destination_vertices(fig6):
    # a on d1 needed by d3 and d4: send across the QPI once, then forward over NVLink d3-d4.
    g = from_edges([0, 0], [2, 3], 4)
    comm = relation(g, [0, 1, 2, 3])
    links = worker_links(fig6)
    plan = spst_plan(comm, links, FB, model=DGCL_MODEL)
    validate_plan(plan, comm, links)
    qpi = links.hop_names.index("CPU0->CPU1")
    cost = plan_cost(plan, links, DGCL_MODEL)
    assert cost.hop_bytes[:, qpi].sum() == 0  # NVLink all the way: d1-d2-d3-d4
    a = plan.hop_vertex == 0
    assert sorted(zip(plan.hop_stage[a].tolist(), plan.hop_src[a].tolist(), plan.hop_dst[a].tolist())) == \
        [(1, 0, 1), (2, 1, 2), (3, 2, 3)]
    p2p_cost = plan_cost(p2p_plan(comm, links, FB), links, DGCL_MODEL)
    assert cost.total_s < p2p_cost.total_s


@pytest.mark.parametrize("topo", ["dgx1", "pcie8", "star:n=8", "dgx1x2"])
@pytest.mark.parametrize("dataset", ["cora", "rmat:n=3000,m=30000,seed=1"])
def test_spst_never_costs_more_than_p2p(topo, dataset):
    g = load_dataset(dataset)
    links = worker_links(load_topology_spec(topo))
    comm = relation(g, metis_partition(g, links.num_workers).parts)
    spst = spst_plan(comm, links, FB, seed=3, model=DGCL_MODEL)
    validate_plan(spst, comm, links)
    assert plan_cost(spst, links, DGCL_MODEL).total_s <= plan_cost(p2p_plan(comm, links, FB), links, DGCL_MODEL).total_s * (1 + 1e-9)


def test_guard_returns_p2p_only_when_greedy_is_worse():
    g = load_dataset("cora")
    links = worker_links(load_topology_spec("star:n=8"))
    comm = relation(g, metis_partition(g, 8).parts)
    raw = spst_plan(comm, links, FB, seed=3, guard_p2p=False, model=DGCL_MODEL)
    guarded = spst_plan(comm, links, FB, seed=3, model=DGCL_MODEL)
    p2p = plan_cost(p2p_plan(comm, links, FB), links, DGCL_MODEL).total_s
    assert plan_cost(raw, links, DGCL_MODEL).total_s > p2p  # the paper's greedy is myopic on a star
    assert plan_cost(guarded, links, DGCL_MODEL).total_s == p2p and guarded.num_stages == 1
    dgx = worker_links(dgx1())
    comm8 = relation(g, metis_partition(g, 8).parts)
    assert np.array_equal(spst_plan(comm8, dgx, FB, model=DGCL_MODEL).hop_dst, spst_plan(comm8, dgx, FB, guard_p2p=False, model=DGCL_MODEL).hop_dst)


def test_spst_deterministic_for_seed_and_independent_of_feature_size():
    g = rmat(2000, 20000, seed=2)
    links = worker_links(dgx1())
    comm = relation(g, random_partition(g, 8, seed=0).parts)
    a, b = spst_plan(comm, links, FB, seed=5, model=DGCL_MODEL), spst_plan(comm, links, FB, seed=5, model=DGCL_MODEL)
    assert np.array_equal(a.hop_vertex, b.hop_vertex) and np.array_equal(a.hop_dst, b.hop_dst)
    c = spst_plan(comm, links, 4 * FB, seed=5, model=DGCL_MODEL)  # §5.1: the plan does not depend on the feature size
    assert np.array_equal(a.hop_dst, c.hop_dst) and np.array_equal(a.hop_stage, c.hop_stage)


# -- the direct per-vertex reference: Algorithms 1 and 2 written out literally -------------------
def reference_spst(comm, links, fb, seed):
    """Algorithm 1 with the full cost matrix of Algorithm 2 recomputed from costFunc each step."""
    m = links.num_workers
    stages = m - 1
    load = np.zeros((stages + 1, links.hop_bw.size))

    def cost_func(ld):  # t(S) = Σ_k max_h c_h^k / b_h
        return (ld / links.hop_bw).max(axis=1).sum()

    vertices, ptr, dest = destinations(comm)
    hops = []
    for idx in np.random.default_rng(seed).permutation(vertices.size):
        u, s = int(vertices[idx]), int(comm.parts[vertices[idx]])
        wanted = set(dest[ptr[idx]:ptr[idx + 1]].tolist())
        depth = {s: 0}
        for _ in range(len(wanted)):
            base = cost_func(load)
            C = np.zeros((stages + 1, m * m))
            R = np.zeros((stages + 1, m * m))  # resulting link time (the tie-breaker)
            for k in range(1, stages + 1):
                for l in np.flatnonzero(links.exists):
                    h = links.link_hops[links.link_ptr[l]:links.link_ptr[l + 1]]
                    trial = load.copy()
                    trial[k, h] += fb
                    C[k, l] = cost_func(trial) - base
                    R[k, l] = (trial[k, h] / links.hop_bw[h]).max()
            dist = {v: (0.0, 0.0) for v in depth}
            dep, parent, done = dict(depth), {}, set()
            heap = [(0.0, 0.0, v) for v in depth]
            heapq.heapify(heap)
            target = None
            while heap:
                d1, d2, v = heapq.heappop(heap)
                if v in done or (d1, d2) != dist[v]:
                    continue
                done.add(v)
                if v in wanted and v not in depth:
                    target = v
                    break
                k = dep[v] + 1
                if k > stages:
                    continue
                for w in range(m):
                    l = v * m + w
                    if w in done or w in depth or not links.exists[l]:
                        continue
                    cand = (d1 + C[k, l], d2 + R[k, l])
                    if w not in dist or cand < dist[w]:
                        dist[w], dep[w], parent[w] = cand, k, v
                        heapq.heappush(heap, (*cand, w))
            path = [target]
            while path[-1] not in depth:
                path.append(parent[path[-1]])
            for c, p in zip(path, path[1:]):
                k = dep[c]
                l = p * m + c
                load[k, links.link_hops[links.link_ptr[l]:links.link_ptr[l + 1]]] += fb
                hops.append((k, p, c, u))
            for c in path[:-1]:
                depth[c] = dep[c]
    return sorted(hops)


@pytest.mark.parametrize("seed", [0, 1, 2])
@pytest.mark.parametrize("topo", ["fig6", "dgx1"])
def test_numba_spst_equals_literal_algorithm(fig6, seed, topo):
    topology = fig6 if topo == "fig6" else dgx1()
    links = worker_links(topology)
    links = replace(links, hop_bw=2.0 ** np.round(np.log2(links.hop_bw / 1e9)))  # exact arithmetic
    g = rmat(120, 400, seed=seed)
    comm = relation(g, random_partition(g, links.num_workers, seed=seed).parts)
    plan = spst_plan(comm, links, 1, seed=seed, guard_p2p=False, model=DGCL_MODEL)
    fast = sorted(zip(plan.hop_stage.tolist(), plan.hop_src.tolist(), plan.hop_dst.tolist(), plan.hop_vertex.tolist()))
    assert fast == reference_spst(comm, links, 1.0, seed)
