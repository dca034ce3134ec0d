"""Shortest-path spanning trees (SPST): DGCL's communication planner (dgcl.txt §5.2, Algorithms 1–2).

Vertices are processed one by one in a seeded random order. For a vertex ``u`` with owner ``s_u``
and destination workers ``D_u``, the tree starts as ``N_src = {s_u}``; ``|D_u|`` times, a
multi-source Dijkstra from every tree node finds the cheapest path to a destination not yet in
the tree, and the path's workers and links join the tree and the plan ``S`` (Algorithm 1).

The edge weight of logical link ``e`` leaving a node at tree depth ``i`` is ``C(i+1, e)``, the
increase of ``t(S)`` when one more embedding crosses ``e`` in stage ``i+1`` (Algorithm 2). It is
computed on demand, as the paper's complexity remark suggests: only stage ``k`` changes, so
``C(k, e) = max(0, max_{h ∈ e} (c_h^k + B) / b_h − t^k)``. The inner max (the link's time with one
more embedding) is kept in a (stage × link) table that a hop's load update raises for every link
through that hop, so a relaxation is a table look-up, not a walk over the link's hops.

Deliberate details (the paper leaves them open):
* Ties: ``C`` is zero on every under-loaded link, so many paths tie. Ties go to the path whose
  links end up least busy (the sum over its links of the link time ``max_h (c_h^k + B)/b_h`` after
  adding the embedding), then to the lower worker rank. This prefers fast, idle, short routes.
* Paths never pass through a tree node (they would start there instead), so every vertex's
  hops form a tree. Dijkstra settles each worker once, with the depth of its best path.
* The per-vertex greedy is kept exactly (no batching of interchangeable vertices): in numba it
  plans reddit-like graphs on 16 workers in seconds, so no approximation is needed.
* Guard (a departure from the paper): the greedy is myopic and can end slightly above P2P where
  relaying only adds traffic (single-switch stars: +3 % on Cora over 8 hosts). P2P is itself a
  feasible SPST plan (every tree a star of stage-1 links), so ``spst_plan`` returns the P2P plan,
  labelled ``spst``, when it predicts a lower ``t(S)`` on the cost model in use (``model``: α–β with
  the links' transport by default, as the commands use, where each extra stage of SPST also costs a
  stage overhead; or §5.1);
  ``guard_p2p=False`` gives the raw greedy. The greedy's link weights ``C(k, e)`` stay §5.1's.
* Stage budget (a departure from the paper, for models that charge per stage): §5.1's weights see
  bandwidth only, so the greedy opens stages whose bytes cost less than the stage itself (Cora on a
  DGX-1: 5 stages, the last carrying 0.24 µs of data, each stage costing 12 µs under NCCL's
  constants). When ``model`` charges per stage or per message (α, o, ℓ or link latency), the greedy
  also runs with trees of depth at most ``K`` (stages ``1..K``) for every ``K`` below its own
  number of stages, and the plan ``model`` predicts fastest is kept (``K = 1`` is P2P's routing).
"""

from __future__ import annotations

from dataclasses import replace

import numba
import numpy as np

from ..errors import NetweaveError
from ..partition import CommRelation
from ..progress import stage
from .cost import CostModel, default_cost_model, plan_cost
from .links import WorkerLinks
from .plan import GraphCommPlan


def destinations(comm: CommRelation) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Boundary vertices with their destination workers.

    Returns ``(vertices, dest_ptr, dest)``: vertex ``vertices[i]`` must reach workers
    ``dest[dest_ptr[i]:dest_ptr[i+1]]`` (ascending).
    """
    return _destinations(comm.send_ptr.astype(np.int64), comm.send_ids.astype(np.int64, copy=False),
                         comm.num_parts, comm.parts.shape[0])


@numba.njit(cache=True)
def _destinations(send_ptr, send_ids, m, n):  # pragma: no cover - compiled
    # A stable counting sort of the send entries by vertex: they are sorted by pair (i*m + j) and,
    # a vertex having one owner i, that leaves each vertex's destinations j ascending.
    count = np.zeros(n + 1, np.int64)
    for p in range(send_ids.shape[0]):
        count[send_ids[p] + 1] += 1
    nv = 0
    for u in range(n):
        if count[u + 1] > 0:
            nv += 1
        count[u + 1] += count[u]
    vertices = np.empty(nv, np.int64)
    dest_ptr = np.empty(nv + 1, np.int64)
    dest_ptr[0] = 0
    i = 0
    for u in range(n):
        if count[u + 1] > count[u]:
            vertices[i] = u
            dest_ptr[i + 1] = count[u + 1]
            i += 1
    dest = np.empty(send_ids.shape[0], np.int64)
    for pair in range(m * m):
        for p in range(send_ptr[pair], send_ptr[pair + 1]):
            u = send_ids[p]
            dest[count[u]] = pair % m
            count[u] += 1
    return vertices, dest_ptr, dest


@numba.njit(cache=True)
def _better(a1, a2, b1, b2, tol):  # pragma: no cover - compiled
    """Lexicographic ``(a1, a2) < (b1, b2)`` with tolerance ``tol`` on the primary cost."""
    if a1 < b1 - tol:
        return True
    if a1 > b1 + tol:
        return False
    return a2 < b2 - tol * 1e-3


@numba.njit(cache=True)
def _relax(v, k, b1, b2, m, done, exists, link_time, stage_time, d1, d2, dep, parent, tol):  # pragma: no cover - compiled
    """Dijkstra's relaxation from worker ``v`` at label ``(b1, b2)`` over its stage-``k`` links to every
    worker not yet settled: the edge weight is ``C(k, e) = max(0, t_e - t^k)`` (Algorithm 2), ties by
    the link time itself."""
    st = stage_time[k]
    for w in range(m):
        l = v * m + w
        if done[w] or not exists[l]:
            continue
        c2 = link_time[k, l]
        c1 = max(0.0, c2 - st)
        if _better(b1 + c1, b2 + c2, d1[w], d2[w], tol):
            d1[w] = b1 + c1
            d2[w] = b2 + c2
            dep[w] = k
            parent[w] = v


@numba.njit(cache=True)
def _spst_kernel(order, vertices, owner, dest_ptr, dest, m, exists, link_ptr, link_hops, hop_bw,
                 hop_link_ptr, hop_links, fb, tol, max_stage):  # pragma: no cover - compiled
    # max_stage: the deepest tree allowed (m - 1: none deeper exists, Algorithm 1)
    # link_time[k, l]: the time of logical link l in stage k with one more embedding on it,
    # max over its hops h of (load[k, h] + fb) / b_h. Loads only grow, so adding fb to hop h
    # raises the entry of every link through h to at least (load[k, h] + fb) / b_h (exact: a max).
    load = np.zeros((max_stage + 1, hop_bw.shape[0]))
    stage_time = np.zeros(max_stage + 1)
    link_time = np.zeros((max_stage + 1, m * m))
    for l in range(m * m):
        t0 = 0.0
        for p in range(link_ptr[l], link_ptr[l + 1]):
            t = (0.0 + fb) / hop_bw[link_hops[p]]
            if t > t0:
                t0 = t
        for k in range(max_stage + 1):
            link_time[k, l] = t0
    cap = 0
    for i in range(vertices.shape[0]):
        cap += min(m - 1, (dest_ptr[i + 1] - dest_ptr[i]) * (m - 1))
    out_stage = np.empty(cap, np.int64)
    out_src = np.empty(cap, np.int64)
    out_dst = np.empty(cap, np.int64)
    out_vertex = np.empty(cap, np.int64)
    n_out = 0
    in_tree = np.zeros(m, np.bool_)
    is_dest = np.zeros(m, np.bool_)
    depth = np.zeros(m, np.int64)
    d1 = np.empty(m)
    d2 = np.empty(m)
    dep = np.empty(m, np.int64)
    parent = np.empty(m, np.int64)
    done = np.empty(m, np.bool_)
    tree = np.empty(m, np.int64)
    start = np.empty(vertices.shape[0], np.int64)
    for idx in order:
        u = vertices[idx]
        start[idx] = n_out
        s = owner[u]
        in_tree[:] = False
        is_dest[:] = False
        in_tree[s] = True
        depth[s] = 0
        remaining = 0
        for p in range(dest_ptr[idx], dest_ptr[idx + 1]):
            is_dest[dest[p]] = True
            remaining += 1
        while remaining > 0:
            # Multi-source Dijkstra from the tree (Algorithm 1, lines 6-8). Tree nodes start at
            # (0, 0), which beats every other label (a logical link has at least one hop, so its
            # time is at least fb / max b_h, far above the tie tolerance), so they are settled
            # first, in rank order: that phase needs no selection.
            nt = 0
            for v in range(m):
                parent[v] = -1
                if in_tree[v]:
                    done[v] = True
                    tree[nt] = v
                    nt += 1
                else:
                    done[v] = False
                    d1[v] = np.inf
                    d2[v] = np.inf
                    dep[v] = -1
            for i in range(nt):  # done is in_tree here
                v = tree[i]
                if depth[v] + 1 <= max_stage:
                    _relax(v, depth[v] + 1, 0.0, 0.0, m, done, exists, link_time, stage_time, d1, d2, dep, parent, tol)
            target = -1
            for _ in range(m - nt):
                v = -1
                for w in range(m):
                    if not done[w] and d1[w] < np.inf and (v < 0 or _better(d1[w], d2[w], d1[v], d2[v], tol)):
                        v = w
                if v < 0:
                    break
                done[v] = True
                if is_dest[v]:
                    target = v
                    break
                if dep[v] + 1 <= max_stage:
                    _relax(v, dep[v] + 1, d1[v], d2[v], m, done, exists, link_time, stage_time, d1, d2, dep, parent, tol)
            if target < 0:
                return out_stage[:0], out_src[:0], out_dst[:0], out_vertex[:0], start[:0], start[:0], u
            # Add the path to the tree and to S (lines 9-10), updating loads, stage times and
            # the link times of every link through a loaded hop.
            c = target
            while not in_tree[c]:
                p = parent[c]
                k = dep[c]
                l = p * m + c
                for q in range(link_ptr[l], link_ptr[l + 1]):
                    h = link_hops[q]
                    load[k, h] += fb
                    t = load[k, h] / hop_bw[h]
                    if t > stage_time[k]:
                        stage_time[k] = t
                    t1 = (load[k, h] + fb) / hop_bw[h]
                    for r in range(hop_link_ptr[h], hop_link_ptr[h + 1]):
                        if t1 > link_time[k, hop_links[r]]:
                            link_time[k, hop_links[r]] = t1
                out_stage[n_out] = k
                out_src[n_out] = p
                out_dst[n_out] = c
                out_vertex[n_out] = u
                n_out += 1
                c = p
            c = target
            while not in_tree[c]:
                in_tree[c] = True
                depth[c] = dep[c]
                if is_dest[c]:
                    remaining -= 1
                c = parent[c]
    # Each vertex's hops are one block: boundary vertex idx's from start[idx], size[idx] long.
    size = np.empty(vertices.shape[0], np.int64)
    for j in range(order.shape[0]):
        size[order[j]] = (start[order[j + 1]] if j + 1 < order.shape[0] else n_out) - start[order[j]]
    return out_stage[:n_out], out_src[:n_out], out_dst[:n_out], out_vertex[:n_out], start, size, -1


@numba.njit(cache=True)
def _sort_hops(stage, src, dst, vertex, start, size, m):  # pragma: no cover - compiled
    """The hops in :meth:`GraphCommPlan.from_hops` order, (stage, src, dst, vertex), with its
    dtypes, without a lexsort: the kernel wrote each vertex's hops as one block (boundary vertex
    ``i``'s: ``size[i]`` from ``start[i]``), so walking the blocks in vertex order and counting-sorting them
    stably by (stage, src, dst) gives that order (one vertex never has two hops of one key)."""
    h = stage.shape[0]
    kmax = 0
    for i in range(h):
        kmax = max(kmax, stage[i])
    keys = (kmax + 1) * m * m
    kcount = np.zeros(keys + 1, np.int64)
    for i in range(h):
        kcount[(stage[i] * m + src[i]) * m + dst[i] + 1] += 1
    for key in range(keys):
        kcount[key + 1] += kcount[key]
    out_stage = np.empty(h, np.int16)
    out_src = np.empty(h, np.int32)
    out_dst = np.empty(h, np.int32)
    out_vertex = np.empty(h, np.int64)
    for b in range(start.shape[0]):
        for i in range(start[b], start[b] + size[b]):
            key = (stage[i] * m + src[i]) * m + dst[i]
            o = kcount[key]
            kcount[key] += 1
            out_stage[o] = stage[i]
            out_src[o] = src[i]
            out_dst[o] = dst[i]
            out_vertex[o] = vertex[i]
    return out_stage, out_src, out_dst, out_vertex


def _hop_links(links: WorkerLinks) -> tuple[np.ndarray, np.ndarray]:
    """``(hop_link_ptr, hop_links)``: the logical links through every hop (CSR by hop)."""
    entry_link = links.hop_entry_links()
    by_hop = np.argsort(links.link_hops, kind="stable")
    ptr = np.zeros(links.hop_bw.size + 1, np.int64)
    np.cumsum(np.bincount(links.link_hops, minlength=links.hop_bw.size), out=ptr[1:])
    return ptr, entry_link[by_hop].astype(np.int64)


def _direct_plan(comm: CommRelation, links: WorkerLinks, feature_bytes: int) -> GraphCommPlan:
    """:func:`p2p_plan` on a complete topology, without its sort: the send entries are already
    in (stage 1, src, dst, vertex) order."""
    src, dst = np.divmod(comm.send_pairs(), comm.num_parts)
    return GraphCommPlan(np.ones(src.size, np.int16), src.astype(np.int32), dst.astype(np.int32),
                         comm.send_ids.astype(np.int64), np.asarray(comm.parts, np.int32), int(feature_bytes),
                         tuple(links.workers), "p2p")


def _charges_per_stage(model: CostModel) -> bool:
    """Whether ``model`` prices a stage beyond its bytes (then the stage budget is searched)."""
    return bool(model.stage_overhead_s or model.message_overhead_s or model.message_latency_s or model.latency)


def spst_plan(comm: CommRelation, links: WorkerLinks, feature_bytes: int, seed: int = 0,
              guard_p2p: bool = True, model: CostModel | None = None) -> GraphCommPlan:
    """Plan the graph allgather of ``comm`` on ``links`` with SPST (Algorithm 1).

    Args:
        comm: the communication relation of a partition (one part per worker, in rank order).
        links: the topology's logical links.
        feature_bytes: bytes of one embedding (the plan does not depend on it, §5.1, but ties do
            not either: it only scales the costs).
        seed: seed of the random vertex order.
        guard_p2p: return the P2P plan instead when it predicts less time (see module notes).
        model: the cost model of that comparison and of the stage budget (module notes); the
            default is the commands' (``netweave plan``): α–β with the links' transport
            (:func:`~netweave.plan.cost.default_cost_model`); ``DGCL_MODEL`` (§5.1) runs the
            paper's greedy once.
    """
    if model is None:
        model = default_cost_model(links)
    links.check_parts(comm.num_parts)
    m = comm.num_parts
    vertices, dest_ptr, dest = destinations(comm)
    order = np.random.default_rng(seed).permutation(vertices.size)
    tol = 1e-6 * feature_bytes / links.hop_bw.max()
    hop_link_ptr, hop_links = _hop_links(links)

    def greedy(max_stage: int) -> GraphCommPlan | int:
        """Algorithm 1 with trees of depth ≤ ``max_stage``, or the first vertex it cannot route."""
        st, src, dst, vert, start, size, stuck = _spst_kernel(
            order, vertices, comm.parts.astype(np.int64), dest_ptr, dest, m, links.exists,
            links.link_ptr, links.link_hops, links.hop_bw, hop_link_ptr, hop_links, float(feature_bytes), tol,
            max_stage)
        if stuck >= 0:
            return stuck
        st, src, dst, vert = _sort_hops(st, src, dst, vert, start, size, m)
        return GraphCommPlan(st, src, dst, vert, np.asarray(comm.parts, np.int32), int(feature_bytes),
                             tuple(links.workers), "spst")

    with stage(f"SPST planning of {vertices.size:,} boundary vertices on {m} workers"):
        plan = greedy(max(m - 1, 1))
        if not isinstance(plan, GraphCommPlan):
            raise NetweaveError(f"vertex {plan}: some destination worker is unreachable through the logical links")
        if _charges_per_stage(model):
            best = plan_cost(plan, links, model).total_s
            for depth in range(1, plan.num_stages):
                shallow = greedy(depth)
                if isinstance(shallow, GraphCommPlan) and (cost := plan_cost(shallow, links, model).total_s) < best:
                    plan, best = shallow, cost
    if guard_p2p and links.complete:
        return p2p_guard(plan, _direct_plan(comm, links, feature_bytes), lambda p: plan_cost(p, links, model).total_s)
    return plan


def p2p_guard(plan: GraphCommPlan, direct: GraphCommPlan, cost) -> GraphCommPlan:
    """The guard of :func:`spst_plan`: ``direct`` (P2P, labelled ``spst``) when ``cost`` (plan → seconds)
    predicts it faster than the greedy's ``plan``, else ``plan``."""
    return replace(direct, planner="spst") if cost(direct) < cost(plan) else plan
