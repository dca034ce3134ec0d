"""Distributed full-graph training of any PyG model with DGCL's graph allgather (needs the train extra).

Write one function that trains on a :class:`RankContext` and :func:`launch` it on N ranks::

    import netweave.distributed as nwd

    def train(ctx: nwd.RankContext):
        h = ctx.exchange(ctx.x)                       # (num_local, F) own rows -> (num_out, F) own + halo
        h = conv(h, ctx.edge_index)[: ctx.num_local]  # any PyG layer on the local graph G_d
        ...
        loss.backward(); ctx.sync_gradients(model); optimiser.step()
        return ctx.gather(logits)                     # (N, C) in global vertex order

    logits = nwd.launch(train, dataset="cora", workers=4, comm="spst")

:func:`launch` partitions the graph (METIS by default) and plans the exchange (DGCL's SPST,
dgcl.txt §5) once, in this process; then it starts ``workers`` local processes that meet over
loopback only, each with a heartbeat, so that a rank that dies, raises or stops answering ends the
run within ``timeout_s`` with one line (a :class:`~netweave.errors.NetweaveError`) and no process
or temporary file is left behind; or, under ``torchrun``, it runs on the ranks torchrun started.
``docs/distributed.md`` has the rules that make N ranks compute what one process computes, and a
complete example (a GAT) that a test checks against single-process PyG training.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

try:
    import torch  # noqa: F401
    import torch_geometric  # noqa: F401
except ImportError as exc:  # one clear line instead of a traceback from deep inside the runtime
    raise ImportError(f"netweave.distributed needs the train extra ({exc.name} is missing): "
                      "pip install 'netweave[train]'") from None

from .plan.cost import DEFAULT_COST_MODEL  # noqa: E402
from .runtime.context import CommCounters, RankContext  # noqa: E402
from .scenarios.distributed import DistributedScenario  # noqa: E402

__all__ = ["launch", "RankContext", "CommCounters", "DistributedScenario"]


def launch(fn: Callable[[RankContext], Any], *, dataset: str = "cora", workers: int = 1, comm: str = "spst",
           topology: str | None = None, method: str = "metis", seed: int = 0, parts_file: str | None = None,
           plan_file: str | None = None, cost_model: str = DEFAULT_COST_MODEL, widths: tuple[int, ...] | None = None,
           normalize_features: bool = False, timeout_s: float = 120.0, device: str = "cpu") -> Any:
    """Run ``fn(ctx)`` on ``workers`` ranks, each with its :class:`RankContext`; return what rank 0's
    ``fn`` returned (under ``torchrun``: what this rank's returned).

    Args:
        fn: a function defined with ``def`` at the top level of a module or script (spawned ranks
            import it); its return value must be picklable.
        dataset: dataset spec (``cora``, ``npz:FILE``, ``planetoid:DIR:NAME``, ``rmat:n=…,m=…,feat=…``);
            every rank loads it.
        workers: ranks (1: ``fn`` runs in this process, ``ctx.exchange`` returns its input).
        comm: ``spst`` (DGCL's plan), ``p2p`` (direct, one stage) or ``allreduce`` (the PyG-SPMD
            baseline: each exchange all-reduces an ``(N, D)`` matrix).
        topology: what the plan is made for (``star:n=WORKERS`` by default; ``dgx1`` for 8 GPUs …).
        method, seed: partitioner and its seed (also SPST's and the dropout key's).
        parts_file, plan_file: a saved partition / plan (``netweave partition --out``, ``plan --out``).
        cost_model: ``alpha-beta`` or ``dgcl``, for SPST's P2P guard and the predicted time.
        widths: float32 widths one step exchanges, for that guard (default: the features' width).
        normalize_features: row-normalise ``ctx.x`` as PyG's ``NormalizeFeatures``.
        timeout_s: seconds to wait for the rendezvous and any peer before the run ends with an error.
        device: ``cpu`` (gloo) or ``cuda`` (NCCL, one GPU per rank).

    Raises:
        NetweaveError: bad settings (before anything starts), or a rank that failed, in one line.
    """
    return DistributedScenario(dataset=dataset, workers=workers, comm=comm, topology=topology, method=method,
                               seed=seed, parts_file=parts_file, plan_file=plan_file, cost_model=cost_model,
                               widths=None if widths is None else tuple(widths),
                               normalize_features=normalize_features, timeout_s=timeout_s, device=device).run(fn)
