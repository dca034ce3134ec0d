"""DGCL's stage cost model (dgcl.txt §5.1).

For stage k and logical link L_i with physical hops L_ij:
``t_ij^k = c_ij^k / b_ij`` where ``c_ij^k`` is the data crossing hop ``L_ij`` in stage k from *all*
logical links sharing it (contention, e.g. on QPI); ``t_i^k = max_j t_ij^k``;
``t^k = max_i t_i^k``; ``t(S) = Σ_k t^k``. Latency is not modelled, as in the paper.
Since every loaded hop belongs to an active link, ``t^k`` equals the largest hop time of stage k.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp

from .links import WorkerLinks
from .plan import GraphCommPlan


@dataclass(frozen=True)
class PlanCost:
    """Predicted time of a plan and the loads behind it.

    Attributes:
        total_s: ``t(S)`` in seconds.
        stage_times_s: ``(K,)`` ``t^k`` for stages 1..K.
        link_bytes: ``(K, m*m)`` bytes on every logical link per stage.
        hop_bytes: ``(K, num_hops)`` bytes on every physical hop per stage (all links sharing it).
        link_times_s: ``(K, m*m)`` ``t_i^k``.
    """

    total_s: float
    stage_times_s: np.ndarray
    link_bytes: np.ndarray
    hop_bytes: np.ndarray
    link_times_s: np.ndarray


def incidence(links: WorkerLinks) -> sp.csr_array:
    """``(m*m, num_hops)`` 0/1 matrix: logical link l crosses hop h."""
    rows = links.hop_entry_links()
    return sp.csr_array((np.ones(rows.size), (rows, links.link_hops)),
                        shape=(links.link_ptr.size - 1, links.hop_bw.size))


def link_load(plan: GraphCommPlan, num_workers: int) -> np.ndarray:
    """``(K, m*m)`` number of vertices sent on each logical link in each stage."""
    m, k = num_workers, max(plan.num_stages, 1)
    key = (plan.hop_stage.astype(np.int64) - 1) * m * m + plan.hop_src.astype(np.int64) * m + plan.hop_dst
    return np.bincount(key, minlength=k * m * m).reshape(k, m * m).astype(np.float64)


def plan_cost(plan: GraphCommPlan, links: WorkerLinks) -> PlanCost:
    """Evaluate ``t(S)`` for ``plan`` on ``links`` (vectorised)."""
    inc = incidence(links)
    link_bytes = link_load(plan, links.num_workers) * plan.feature_bytes
    hop_bytes = np.asarray((inc.T @ link_bytes.T).T)
    hop_times = hop_bytes / links.hop_bw
    # t_i^k = max over the hops of link i (a dense (K, m*m, |path|) gather; paths are short).
    counts = np.diff(links.link_ptr)
    width = max(int(counts.max(initial=0)), 1)
    padded = np.full((counts.size, width), -1, dtype=np.int64)
    rows = links.hop_entry_links()
    padded[rows, np.arange(rows.size) - np.repeat(links.link_ptr[:-1], counts)] = links.link_hops
    gathered = np.where(padded >= 0, hop_times[:, np.maximum(padded, 0)], 0.0)
    link_times = gathered.max(axis=2) * (link_bytes > 0)
    stage_times = link_times.max(axis=1) if link_times.size else np.zeros(0)
    return PlanCost(float(stage_times.sum()), stage_times, link_bytes, hop_bytes, link_times)
