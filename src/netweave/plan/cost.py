"""Stage cost models of a graph-allgather plan: DGCL's (dgcl.txt §5.1) and an α–β extension.

**DGCL §5.1** (``DGCL_MODEL``): for stage k and logical link L_i with physical hops L_ij,
``t_ij^k = c_ij^k / b_ij`` where ``c_ij^k`` is the data crossing hop ``L_ij`` in stage k from *all*
logical links sharing it (contention, e.g. on QPI); ``t_i^k = max_j t_ij^k``;
``t^k = max_i t_i^k``; ``t(S) = Σ_k t^k``. Latency is not modelled, as in the paper. Since every
loaded hop belongs to an active link, ``t^k`` equals the largest hop time of stage k.

**α–β** (the default of ``netweave plan``, ``train`` and ``compare``, and of :func:`plan_cost` and
:func:`~netweave.plan.spst_plan`, with the constants of the links' transport; beyond the paper;
pass ``model=DGCL_MODEL`` for the paper's): the §5.1 model predicts 0.78 µs
for an exchange over links of 1 µs latency, and measured exchanges over shaped links take
1.12 × its prediction + 5 ms (BENCHMARKS.md, DGCL Fig. 10; 2.17 × − 7 ms before the exchange
posted its receives first). The α–β model adds what a real transport pays per stage::

    t^k = α + o · n^k + max_i ( λ_i + ℓ + t_i^k / η )      (max over the links active in stage k)

with ``α`` a fixed cost per stage (the rendezvous of a synchronous stage, a kernel launch), ``o``
the cost of one message paid one after another (``n^k`` is the most messages one rank sends or
receives in stage k, one per active logical link at that rank), ``ℓ`` the latency of one message
paid on every link at once, ``λ_i`` the one-way latency of logical link i (the sum of its hops'
``latency_us``) and ``η`` the fraction of the nominal bandwidth the transport achieves. With
``α = o = ℓ = 0``, ``η = 1`` and no latency it is §5.1 exactly.

``α``, ``o``, ``ℓ`` and ``η`` belong to the transport (:mod:`.transport`): gloo over TCP (fitted
here to measured allgathers: α = 0.76 ms, o = 1.02 ms, ℓ = 0, η = 0.96; ``ALPHA_BETA`` is that
model), whose CPU threads serve the peers one after another, or NCCL on a GPU server (NCCL's own
latency constants: α = 8.4 µs, ℓ = 3.4 µs, o = 0, η = 1 on DGCL Table 1's measured link speeds),
whose channels serve the peers in parallel. :func:`cost_model` builds the α–β model of a transport.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp

from .links import WorkerLinks
from .plan import GraphCommPlan
from .transport import GLOO, Transport


@dataclass(frozen=True)
class CostModel:
    """Constants of the stage cost model (see the module docstring).

    Attributes:
        name: ``dgcl`` or ``alpha-beta`` (as on the command line).
        stage_overhead_s: ``α``, seconds per stage.
        message_overhead_s: ``o``, seconds per message of the busiest rank (paid in sequence).
        message_latency_s: ``ℓ``, seconds every message adds on its own link (paid in parallel).
        bandwidth_efficiency: ``η`` in (0, 1], achieved / nominal bandwidth.
        latency: add each logical link's one-way latency ``λ_i``.
        transport: the transport whose constants these are (None for §5.1).
    """

    name: str
    stage_overhead_s: float = 0.0
    message_overhead_s: float = 0.0
    message_latency_s: float = 0.0
    bandwidth_efficiency: float = 1.0
    latency: bool = False
    transport: str | None = None


DGCL_MODEL = CostModel("dgcl")


def alpha_beta(transport: Transport) -> CostModel:
    """The α–β model with ``transport``'s constants (α, o, ℓ, η) and link latency."""
    return CostModel("alpha-beta", stage_overhead_s=transport.stage_overhead_s,
                     message_overhead_s=transport.message_overhead_s, message_latency_s=transport.message_latency_s,
                     bandwidth_efficiency=transport.bandwidth_efficiency, latency=True, transport=transport.name)


ALPHA_BETA = alpha_beta(GLOO)  # gloo's: fitted by benchmarks/calibrate_cost.py (see .transport)
COST_MODELS = {m.name: m for m in (ALPHA_BETA, DGCL_MODEL)}
DEFAULT_COST_MODEL = ALPHA_BETA.name  # what the commands use unless --cost-model says otherwise


def default_cost_model(links: WorkerLinks) -> CostModel:
    """The commands' model (:data:`DEFAULT_COST_MODEL`) with the constants of ``links``' transport
    (:attr:`~netweave.plan.links.WorkerLinks.transport`: NCCL's on GPUs, gloo's on hosts)."""
    from .transport import transport

    return cost_model(DEFAULT_COST_MODEL, transport(links.transport))


def cost_model(name: str, transport: Transport | None = None) -> CostModel:
    """The model called ``name`` (``alpha-beta`` or ``dgcl``), or a one-line error; ``alpha-beta``
    takes ``transport``'s constants (gloo's when None), ``dgcl`` (§5.1) has none."""
    from ..errors import NetweaveError

    if name not in COST_MODELS:
        raise NetweaveError(f"unknown cost model {name!r}; choose one of {', '.join(COST_MODELS)}")
    if name == ALPHA_BETA.name and transport is not None:
        return alpha_beta(transport)
    return COST_MODELS[name]


@dataclass(frozen=True)
class PlanCost:
    """Predicted time of a plan and the loads behind it.

    Attributes:
        total_s: ``t(S)`` in seconds.
        stage_times_s: ``(K,)`` ``t^k`` for stages 1..K.
        link_bytes: ``(K, m*m)`` bytes on every logical link per stage.
        hop_bytes: ``(K, num_hops)`` bytes on every physical hop per stage (all links sharing it).
        link_times_s: ``(K, m*m)`` ``t_i^k`` (with the α–β model: ``λ_i + ℓ + t_i^k / η`` on active links).
        model: the cost model's name.
    """

    total_s: float
    stage_times_s: np.ndarray
    link_bytes: np.ndarray
    hop_bytes: np.ndarray
    link_times_s: np.ndarray
    model: str = "dgcl"


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


def plan_cost(plan: GraphCommPlan, links: WorkerLinks, model: CostModel | None = None) -> PlanCost:
    """Evaluate ``t(S)`` for ``plan`` on ``links`` under ``model`` (vectorised; default: the commands'
    α–β model with the links' transport, :func:`default_cost_model`; ``DGCL_MODEL`` is §5.1)."""
    if model is None:
        model = default_cost_model(links)
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
    active = link_bytes > 0
    link_times = gathered.max(axis=2) * active
    if model.latency or model.bandwidth_efficiency != 1.0 or model.message_latency_s:
        lam = (links.link_latency_s() if model.latency else 0.0) + model.message_latency_s
        link_times = np.where(active, lam + link_times / model.bandwidth_efficiency, 0.0)
    stage_times = link_times.max(axis=1) if link_times.size else np.zeros(0)
    if model.stage_overhead_s or model.message_overhead_s:
        m = links.num_workers
        per_rank = active.reshape(-1, m, m)
        messages = np.maximum(per_rank.sum(axis=2), per_rank.sum(axis=1)).max(axis=1, initial=0)
        stage_times = stage_times + (model.stage_overhead_s + model.message_overhead_s * messages) * active.any(axis=1)
    return PlanCost(float(stage_times.sum()), stage_times, link_bytes, hop_bytes, link_times, model.name)
