"""Checks that a plan is executable and complete (all vectorised over hops)."""

from __future__ import annotations

import numpy as np

from ..errors import NetweaveError
from ..partition import CommRelation
from .links import WorkerLinks
from .plan import GraphCommPlan


def plan_problems(plan: GraphCommPlan, comm: CommRelation | None = None,
                  links: WorkerLinks | None = None) -> list[str]:
    """Every rule the plan breaks, as one-line messages (empty when valid).

    Rules: stages start at 1; ranks are valid and a hop joins two different workers over an
    existing logical link; each vertex forms a tree rooted at its owner (no worker receives a
    vertex twice, the owner never receives it); a sender owns the vertex or received it in an
    earlier stage; and, given ``comm``, every worker receives every vertex it needs.
    """
    problems: list[str] = []
    m, n = plan.num_workers, plan.parts.shape[0]
    st, src, dst, u = (plan.hop_stage.astype(np.int64), plan.hop_src.astype(np.int64),
                       plan.hop_dst.astype(np.int64), plan.hop_vertex)

    def first(mask, text):
        if mask.any():
            i = int(np.flatnonzero(mask)[0])
            problems.append(f"{text} (hop {i}: stage {st[i]}, {src[i]}->{dst[i]}, vertex {u[i]}; "
                            f"{int(mask.sum())} such hops)")

    first(st < 1, "stages must start at 1")
    first((src < 0) | (src >= m) | (dst < 0) | (dst >= m), f"worker rank outside 0..{m - 1}")
    first((u < 0) | (u >= n), f"vertex id outside 0..{n - 1}")
    if problems:
        return problems
    first(src == dst, "a hop sends to its own sender")
    if links is not None:
        first(~links.exists[src * m + dst], "hop on a logical link that does not exist")
    owner = plan.parts[u].astype(np.int64)
    first(dst == owner, "a vertex is sent back to its owner (a cycle)")
    key = u * m + dst
    order = np.argsort(key, kind="stable")
    dup = np.zeros(key.size, dtype=bool)
    dup[order[1:]] = key[order[1:]] == key[order[:-1]]
    first(dup, "a worker receives the same vertex twice (not a tree)")
    # A sender must own the vertex or have received it in an earlier stage.
    sorted_keys = key[order]
    pos = np.searchsorted(sorted_keys, u * m + src)
    found = pos < sorted_keys.size
    found[found] = sorted_keys[pos[found]] == (u * m + src)[found]
    recv_stage = np.where(found, st[order[np.minimum(pos, key.size - 1)]], np.iinfo(np.int64).max)
    first((src != owner) & (recv_stage >= st), "a worker forwards a vertex before receiving it")
    if comm is not None:
        if comm.parts.shape[0] != n or not np.array_equal(comm.parts, plan.parts):
            problems.append("the plan's partition differs from the communication relation's")
            return problems
        pair = comm.send_pairs()
        need = comm.send_ids * m + pair % comm.num_parts
        got = np.isin(need, key)
        if not got.all():
            i = int(np.flatnonzero(~got)[0])
            problems.append(f"worker {pair[i] % m} never receives vertex {comm.send_ids[i]} it needs "
                            f"({int((~got).sum())} missing deliveries)")
    return problems


def validate_plan(plan: GraphCommPlan, comm: CommRelation | None = None, links: WorkerLinks | None = None) -> None:
    """Raise :class:`NetweaveError` with the first problem when the plan is invalid."""
    problems = plan_problems(plan, comm, links)
    if problems:
        more = f" (+{len(problems) - 1} more problems)" if len(problems) > 1 else ""
        raise NetweaveError(f"invalid plan: {problems[0]}{more}")
