"""Walking flows down an unfolded DAG to the PS (Algorithm 1's DFS, shared by ARO and the baselines).

Every worker's flow takes next hops chosen by ``next_hop`` until the PS; a flow that enters an
INP (an INA switch's ingress pipeline) which already has a path to the PS takes that path — merged
flows share the rest of the route (``R[u]`` in Algorithm 1).
"""

from __future__ import annotations

from collections.abc import Callable

from .unfold import Unfolded


def walk_routes(dag: Unfolded, next_hop: Callable[[str], str], merge: bool = True) -> dict[str, list[str]]:
    """worker -> node path to the PS; ``merge=False`` lets no switch aggregate (plain PS)."""
    known: dict[tuple[str, int], list[str]] = {}
    routes = {}
    for w in dag.task.workers:
        path, u, first = [w], w, []
        while u != dag.task.ps:
            v = next_hop(u)
            key = (v, dag.pipeline[(u, v)]) if merge and (u, v) in dag.pipeline else None
            if key is not None and key in known:
                path += known[key]
                break
            path.append(v)
            if key is not None:
                first.append((key, len(path) - 1))
            u = v
        for key, j in first:
            known[key] = path[j:]
        routes[w] = path
    return routes
