"""A SwitchGNN exchange job on the testbed: what the launcher prepares and the processes load, and
the same training in one process as the reference every run is checked against.

* :func:`prepare_gnn_job` (in the launcher): load, normalise, METIS-partition, one
  :class:`~netweave.ina.plan.InaPlan` per layer (``switchgnn``, GAMR, ``forward=True``, sized to the
  layer's width in 8-byte aggregator lanes, double-buffered with ``overlap``), each worker's :class:`~netweave.runtime.ina_exchange.SumLayout` and its peer
  tables; written as ``.npz`` files that the processes load with ``allow_pickle=False``. With
  ``transform_first`` (the default) a layer's plan is sized to the width its exchange carries,
  ``h W`` where the layer narrows (:func:`~netweave.runtime.models.exchange_widths`). With
  ``column_slices`` k > 1 a layer whose plan is one block and whose width k divides is sent in
  k column slices (:mod:`.slices`, beyond the paper; the plan is sized at the whole width); with
  0 (the default) where :func:`~.completion.choose_slices` says the sums come down sooner.
* :func:`train_epochs`: full-graph GCN training (Adam, decay on the first layer) over any
  exchange, the trainer's step (:func:`netweave.runtime.trainer.forward_backward`) with the
  gradients and the loss summed by ``allreduce``.
* :func:`single_process`: the same model, data and seed on the whole graph in one process.
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass, field

import numpy as np

from ...errors import NetweaveError
from .fixed import AGGREGATOR_BYTES
from .tables import footprint
from .plans import plan_arrays, save_plans
from .completion import choose_slices
from .slices import check_slices
from .slices import column_slices as sliced


@dataclass
class GnnJob:
    """A prepared run: its files in ``directory`` and what the launcher reports about it."""

    directory: str
    workers: int
    dims: list[int]
    num_train: int
    transform_first: bool = True
    graph: object = None
    features: np.ndarray | None = None
    parts: np.ndarray | None = None
    planned: list[dict] = field(default_factory=list)
    plans: list = field(default_factory=list)  # the layers' InaPlans (the simulator's input: .predict)

    @property
    def widths(self) -> list[int]:
        """What each layer's exchange carries (:func:`~netweave.runtime.models.exchange_widths`)."""
        from ...runtime.models import exchange_widths

        return exchange_widths(self.dims, self.transform_first)


def prepare_gnn_job(dataset: str, workers: int, memory_bytes: int, directory: str, *, hidden: int = 16, layers: int = 2,
                    seed: int = 0, blocking: str = "paper", overlap: bool = False,
                    transform_first: bool = True, column_slices: int = 0) -> GnnJob:
    """Everything the switch and the workers load (see the module docstring), in ``directory``."""
    import scipy.sparse as sp

    from ...graph import load_dataset
    from ...ina import boundary_relation
    from ...ina.plan import ina_plan
    from ...partition import Partition, metis_partition
    from ...runtime.ina_exchange import cross_adjacency, sum_layout
    from ...runtime.job import check_trainable, model_dims
    from ...runtime.models import exchange_widths
    from ...runtime.recipe import feature_shift, normalize_rows

    if workers < 2:
        raise NetweaveError(f"--workers {workers}: give at least 2 (one worker exchanges nothing)")
    if layers < 1 or hidden < 1:
        raise NetweaveError(f"--layers {layers} --hidden {hidden}: give positive numbers")
    check_slices(column_slices)
    graph = load_dataset(dataset)
    check_trainable(graph, dataset)
    if workers > graph.num_nodes:
        raise NetweaveError(f"--workers {workers}: {dataset} has only {graph.num_nodes} vertices")
    x = normalize_rows(graph.features, feature_shift(graph.features))
    parts = metis_partition(graph, workers, seed).parts.astype(np.int64)
    rel = boundary_relation(graph, Partition(parts, workers, "metis"))
    dims = model_dims(graph.feature_dim, hidden, layers, graph.num_classes)
    widths = exchange_widths(dims, transform_first)
    plans, planned, ina_plans = [], [], []
    for layer, width in enumerate(widths):
        # aggregators hold 8-byte fixed-point lanes (.fixed), placed as the kernel data plane does (.tables)
        plan = ina_plan(rel, "switchgnn", AGGREGATOR_BYTES * footprint(width), memory_bytes, "gamr", seed, blocking=blocking,
                        forward=True, overlap=overlap)
        if column_slices == 0:  # where the model says the sums come down sooner
            k = choose_slices(plan_arrays(plan, width), width)
        else:
            k = column_slices if plan.num_blocks == 1 and width % column_slices == 0 else 1
        plan = sliced(plan, k, graph.num_nodes)
        plans.append(plan_arrays(plan, width // k, k))
        ina_plans.append(plan)
        planned.append({"layer": layer, "dim": width, "blocks": plan.num_blocks, "units": plan.num_units,
                        "overlap": bool(plan.overlap), "slices": k,
                        "destinations": int(plan.dest_v.size), "cross_edges": int(plan.dst.size),
                        "forwarded_destinations": int(plan.forward.sum()) if plan.forward is not None else 0})
    save_plans(os.path.join(directory, "plans.npz"), plans)
    cross = cross_adjacency(graph.indptr, graph.indices, parts)
    u, w = rel.sender_worker_pairs()
    for rank in range(workers):
        lay = sum_layout(graph.indptr, graph.indices, parts, rank)
        tables = {}
        for peer in range(workers):
            if peer == rank:
                continue
            send = u[(w == peer) & (parts[u] == rank)]  # my boundary vertices with a neighbour on peer
            recv = u[(w == rank) & (parts[u] == peer)]  # peer's boundary vertices with a neighbour here
            s = sp.coo_matrix(cross[lay.boundary][:, recv])  # R (my boundary) += S @ rows from peer
            tables |= {f"send_{peer}": np.searchsorted(lay.boundary, send), f"recv_{peer}": recv,
                       f"srow_{peer}": s.row.astype(np.int64), f"scol_{peer}": s.col.astype(np.int64)}
        own = lay.own
        np.savez(os.path.join(directory, f"worker{rank}.npz"), **lay.arrays(), **tables, x=x[own],
                 y=graph.labels[own].astype(np.int64), train=np.asarray(graph.train_mask[own], bool))
    planned.append({"p2p_rows": int(u.size), "cross_edges": int(rel.num_cross_edges),
                    "boundary_vertices": int(rel.boundary().size)})
    return GnnJob(directory, workers, dims, int(graph.train_mask.sum()), transform_first, graph, x, parts, planned, ina_plans)


def train_epochs(model, x, g, exchange, *, y, train, num_train: int, epochs: int, lr: float, weight_decay: float,
                 allreduce=None, measure=None, on_epoch=None):
    """Full-graph training with Adam (GCN's recipe: decay on the first layer): per epoch forward,
    loss (sum over the own training vertices / all of them), backward, ``allreduce`` of the
    gradients and the loss (None: one process), step. Returns the final eval-mode logits."""
    import torch

    from ...runtime.recipe import param_groups
    from ...runtime.trainer import forward_backward

    params = list(model.parameters())
    opt = torch.optim.Adam(param_groups(model.convs, weight_decay, True), lr=lr)
    for epoch in range(epochs):
        before = measure() if measure else {}
        t0 = time.perf_counter()
        loss = forward_backward(model, opt, x, g, exchange, y, train, num_train)
        t1 = time.perf_counter()
        flat = torch.cat([p.grad.reshape(-1) for p in params] + [loss.detach().reshape(1)]).double()
        if allreduce is not None:
            flat = torch.from_numpy(allreduce(flat.numpy()))
        at = 0
        for p in params:
            p.grad.copy_(flat[at:at + p.numel()].view_as(p))
            at += p.numel()
        opt.step()
        t2 = time.perf_counter()
        record = {"epoch": epoch + 1, "epoch_s": t2 - t0, "sync_s": t2 - t1, "loss": float(flat[-1])}
        if measure:
            after = measure()
            record |= {k: after[k] - before[k] for k in after}
        if on_epoch:
            on_epoch(record)
    model.eval()
    with torch.no_grad():
        return model(x, g, exchange).numpy()


def single_process(job: GnnJob, epochs: int, lr: float = 0.01, weight_decay: float = 5e-4, dropout: float = 0.5,
                   seed: int = 0) -> tuple[np.ndarray, list[float]]:
    """The same model, data and seed in one process on the whole graph (no exchange): the final
    logits (global order) and the loss of every epoch."""
    import torch

    from ...partition import Partition, comm_relation
    from ...runtime.exchange import Exchange
    from ...runtime.models import DistGNN, local_tensors

    graph = job.graph
    whole = comm_relation(graph, Partition(np.zeros(graph.num_nodes, np.int32), 1, "one")).local_graph(graph, 0)
    ids = whole.global_ids[:whole.num_local]
    torch.manual_seed(seed)
    model = DistGNN("gcn", job.dims, dropout, seed, job.transform_first)
    losses = []
    logits = train_epochs(model, torch.from_numpy(np.ascontiguousarray(job.features[ids])),
                          local_tensors(whole, graph.degrees),
                          Exchange("none", whole.global_ids, whole.num_local, graph.num_nodes),
                          y=torch.from_numpy(graph.labels[ids].astype(np.int64)),
                          train=torch.from_numpy(np.asarray(graph.train_mask[ids], bool)), num_train=job.num_train,
                          epochs=epochs, lr=lr, weight_decay=weight_decay, on_epoch=lambda r: losses.append(r["loss"]))
    out = np.zeros_like(logits)
    out[ids] = logits
    return out, losses
