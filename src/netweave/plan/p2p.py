"""The peer-to-peer baseline: every (u, d) transfer goes directly from u's owner to d in stage 1."""

from __future__ import annotations

import numpy as np

from ..errors import NetweaveError
from ..partition import CommRelation
from .links import WorkerLinks
from .plan import GraphCommPlan


def p2p_plan(comm: CommRelation, links: WorkerLinks, feature_bytes: int) -> GraphCommPlan:
    """All transfers in stage 1 on the logical link owner → destination."""
    links.check_parts(comm.num_parts)
    m = comm.num_parts
    pair = comm.send_pairs()
    src, dst = np.divmod(pair, m)
    missing = np.unique(pair[~links.exists[pair]])
    if missing.size:
        raise NetweaveError(f"p2p needs a direct logical link {links.link_name(int(missing[0]))}; use --planner spst to relay")
    return GraphCommPlan.from_hops(np.ones(pair.size), src, dst, comm.send_ids, comm.parts, feature_bytes,
                                   links.workers, "p2p")
