"""What one rank of a distributed run is handed: its part of the graph and the exchange (the
:class:`RankContext` of :func:`netweave.distributed.launch`).

A rank *owns* ``num_local`` vertices (a part of the partition) and computes on its local graph
``G_d`` (dgcl.txt §4.1): the edges into its own vertices, whose sources are own or *halo* vertices
(neighbours owned by other ranks). Rows are numbered locally:

* rows ``0 .. num_local-1``: the own vertices, ascending global id (``own_ids``);
* rows ``num_local .. num_local+num_halo-1``: the halo, grouped by owner rank, ascending within an
  owner — the order in which the graph allgather delivers them.

``global_ids[i]`` is the global id of local row ``i``. Every per-vertex tensor of the context
(features, labels, masks) has the ``num_local`` own rows. A layer turns own rows into own + halo
rows with :meth:`RankContext.exchange` (DGCL's ``graphAllgather``, §4.2), runs its graph operation
on ``G_d``, and keeps the first ``num_local`` rows (§6.3: "we remove the embeddings of the remote
vertices before ... the normal DNN operations").

Three rules make N ranks compute what one process computes on the whole graph:

1. normalise with the whole graph's degrees (``gcn_edge_weight`` / ``gcn_adj_t``, never PyG's
   ``gcn_norm`` on ``G_d``, which would count a halo vertex's degree inside ``G_d`` only);
2. sum each rank's loss over its own training vertices, divide by the *global* number of training
   vertices (``num_train``) and call :meth:`RankContext.sync_gradients` after ``backward()``: the
   summed gradients are then the single-process mean loss's gradient on every rank;
3. draw dropout from :meth:`RankContext.dropout`, keyed by global vertex id, not from torch's
   per-process generator.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import torch
import torch.distributed as dist

from ..errors import NetweaveError
from ..graph import Graph
from ..partition import Partition, comm_relation
from .dropout import dropout_key, vertex_dropout
from .exchange import Exchange, allreduce_gradients, timed_all_reduce
from .graph_allgather import CommCounter
from .local_edges import gcn_edges, local_edges
from .models import LocalTensors, local_tensors
from .rank_tables import rank_tables
from .recipe import feature_shift, normalize_rows


@dataclass(frozen=True)
class CommCounters:
    """What a rank sent and how long it spent communicating since the last reset.

    Attributes:
        exchange_bytes: bytes this rank sent in graph allgathers (forward and backward).
        exchange_s: seconds inside them (the embedding exchange, ``comm_s`` of ``netweave train``).
        sync_bytes: bytes this rank sent in gradient and other all-reduces (ring all-reduce volume).
        sync_s: seconds inside them.
    """

    exchange_bytes: int
    exchange_s: float
    sync_bytes: int
    sync_s: float


@dataclass(eq=False)
class RankContext:
    """One rank's share of a distributed run (see the module docstring for the row order).

    Attributes:
        rank, world: this process's rank and the number of ranks.
        device: where every tensor of the context lives.
        num_nodes: ``N``, vertices of the whole graph; num_classes: ``C`` (0 without labels).
        num_local: own vertices; num_halo: halo vertices; ``num_out = num_local + num_halo``.
        global_ids: ``(num_out,)`` int64 global id of every local row.
        edge_index: ``(2, E_d)`` int64, PyG's ``[source; target]``: one column per edge ``u → v`` of
            ``G_d``, ``source`` in ``[0, num_out)``, ``target`` in ``[0, num_local)``.
        gcn_edge_index: ``(2, E_d + num_local)`` the same edges plus a self loop per own vertex.
        gcn_edge_weight: ``(E_d + num_local,)`` float32 GCN weights over full-graph degrees ``d``:
            ``1 / sqrt((d_u + 1)(d_v + 1))``, self loops ``1 / (d_v + 1)``; use with
            ``GCNConv(..., normalize=False, add_self_loops=False)``.
        adj_t: ``(num_local, num_out)`` sparse CSR adjacency, PyG's transposed ``adj_t`` (row = target),
            ones; ``conv(h_all, ctx.adj_t)`` gives ``num_local`` rows directly.
        gcn_adj_t: ``(num_local, num_out)`` sparse CSR with ``gcn_edge_weight``'s values.
        x: ``(num_local, F)`` float32 features of the own vertices (row-normalised when the run
            asks for it, with the whole graph's shift), or None when the graph has none.
        y: ``(num_local,)`` int64 labels, or None.
        train_mask, val_mask, test_mask: ``(num_local,)`` bool (an absent mask selects no vertex).
        num_train: training vertices of the whole graph (the divisor of a mean loss).
        seed: the run's seed (the dropout key's).
        tensors: ``adj_t``, ``gcn_adj_t`` and the own ids as netweave's built-in models take them.
    """

    rank: int
    world: int
    device: torch.device
    num_nodes: int
    num_classes: int
    num_local: int
    num_halo: int
    global_ids: torch.Tensor
    edge_index: torch.Tensor
    gcn_edge_index: torch.Tensor
    gcn_edge_weight: torch.Tensor
    adj_t: torch.Tensor
    gcn_adj_t: torch.Tensor
    x: torch.Tensor | None
    y: torch.Tensor | None
    train_mask: torch.Tensor
    val_mask: torch.Tensor
    test_mask: torch.Tensor
    num_train: int
    seed: int
    tensors: LocalTensors
    exchanger: Exchange = field(repr=False)
    sync_counter: CommCounter = field(default_factory=CommCounter, repr=False)

    @property
    def num_out(self) -> int:
        """Own + halo rows: what :meth:`exchange` returns."""
        return self.num_local + self.num_halo

    @property
    def own_ids(self) -> torch.Tensor:
        """``(num_local,)`` global ids of the own vertices (ascending)."""
        return self.global_ids[: self.num_local]

    def exchange(self, h: torch.Tensor) -> torch.Tensor:
        """DGCL's graph allgather: ``(num_local, D)`` own rows → ``(num_out, D)`` own then halo rows,
        differentiable (the backward pass sends the halo rows' gradients back to their owners).

        Executes the run's plan (SPST or P2P stages), or the all-reduce baseline (``comm="allreduce"``),
        or nothing on one rank. Every rank must call it the same number of times, in the same order."""
        if h.dim() != 2 or h.shape[0] != self.num_local:
            raise NetweaveError(f"rank {self.rank}: exchange() takes the {self.num_local} own rows as a (num_local, D) "
                                f"tensor, got shape {tuple(h.shape)}; slice the layer's output with [:ctx.num_local]")
        return self.exchanger(h)

    def sync_gradients(self, params) -> None:
        """Sum the gradients of ``params`` (a module or an iterable of parameters) over the ranks, in
        place, with one flat all-reduce (DGCL §6.3 leaves this to data-parallel frameworks). Call it
        after ``backward()`` and before the optimiser's step; a no-op on one rank."""
        params = list(params.parameters()) if isinstance(params, torch.nn.Module) else list(params)
        if self.world > 1 and params:
            allreduce_gradients(params, self.sync_counter)

    def all_reduce(self, tensor: torch.Tensor) -> torch.Tensor:
        """Sum ``tensor`` over the ranks in place (e.g. correct predictions) and return it."""
        if self.world > 1:
            timed_all_reduce(tensor, self.sync_counter)
        return tensor

    def dropout(self, h: torch.Tensor, p: float, *, step: int, layer: int, training: bool = True) -> torch.Tensor:
        """Inverted dropout keyed by ``(seed, step, layer, global vertex id, column)``: every partition of
        the graph, and one process, drop the same entries (:mod:`netweave.runtime.dropout`).

        ``h`` holds own rows ``(num_local, D)`` or own + halo rows ``(num_out, D)``; ``step`` (e.g. the
        epoch) and ``layer`` pick a fresh mask; ``training=False`` returns ``h`` unchanged."""
        rows = h.shape[0]
        if rows not in (self.num_local, self.num_out):
            raise NetweaveError(f"rank {self.rank}: dropout() takes {self.num_local} own or {self.num_out} own + halo "
                                f"rows, got {rows}")
        ids = self.global_ids[:rows]
        return vertex_dropout(h, ids.cpu() if h.device.type == "cpu" else ids, p, dropout_key(self.seed, step, layer),
                              training)

    def gather(self, h: torch.Tensor) -> np.ndarray:
        """``(N, D)`` numpy array of every rank's own rows ``h`` (``(num_local, D)``), in global vertex
        order, on every rank (e.g. the final logits)."""
        if h.shape[0] != self.num_local:
            raise NetweaveError(f"rank {self.rank}: gather() takes the {self.num_local} own rows, got {h.shape[0]}")
        mine = (self.own_ids.cpu().numpy(), h.detach().cpu().numpy())
        parts = [mine]
        if self.world > 1:
            parts = [None] * self.world
            dist.all_gather_object(parts, mine)
        out = np.zeros((self.num_nodes,) + mine[1].shape[1:], dtype=mine[1].dtype)
        for ids, rows in parts:
            out[ids] = rows
        return out

    def counters(self) -> CommCounters:
        """Bytes and seconds since the last :meth:`reset_counters` (or the start)."""
        ex, sync = self.exchanger.counter, self.sync_counter
        return CommCounters(ex.bytes_sent, ex.seconds, sync.bytes_sent, sync.seconds)

    def reset_counters(self) -> None:
        self.exchanger.counter.reset()
        self.sync_counter.reset()


def rank_context(job, graph: Graph, rank: int, world: int, device="cpu") -> RankContext:
    """The context of ``rank`` for a prepared ``job`` (:class:`~.job.TrainJob`: its partition, its
    plan or None, and ``job.config``'s ``comm``, ``normalize_features`` and ``seed``)."""
    device = torch.device(device)
    partition = Partition(job.parts, world, "job")
    comm = comm_relation(graph, partition)
    local = comm.local_graph(graph, rank)
    own = local.global_ids[: local.num_local]

    def t(a, dtype=None):
        return torch.from_numpy(np.ascontiguousarray(a, dtype=dtype)).to(device)

    x = None
    if graph.features is not None and graph.feature_dim > 0:
        features = graph.features[own]
        if job.config.normalize_features:
            features = normalize_rows(features, feature_shift(graph.features))
        x = t(features.toarray() if hasattr(features, "toarray") else np.asarray(features), np.float32)
    y = None if graph.labels is None else t(graph.labels[own], np.int64)
    masks = [t(np.asarray(m[own], dtype=bool) if m is not None else np.zeros(own.size, bool))
             for m in (graph.train_mask, graph.val_mask, graph.test_mask)]  # an absent mask selects no vertex
    if world == 1:
        mode, tables = "none", None
    elif job.plan is None:
        mode, tables = "allreduce", None
    else:
        mode, tables = "plan", rank_tables(job.plan, comm, rank)
    source, target = local_edges(local)
    gcn_ptr, gcn_source, gcn_target, gcn_weight = gcn_edges(local, graph.degrees)
    tensors = local_tensors(local, graph.degrees, device)
    return RankContext(
        rank=rank, world=world, device=device, num_nodes=graph.num_nodes, num_classes=graph.num_classes,
        num_local=local.num_local, num_halo=local.num_halo, global_ids=t(local.global_ids, np.int64),
        edge_index=t(np.stack([source, target])), gcn_edge_index=t(np.stack([gcn_source, gcn_target])),
        gcn_edge_weight=t(gcn_weight), adj_t=tensors.adj, gcn_adj_t=tensors.gcn_adj, x=x, y=y,
        train_mask=masks[0], val_mask=masks[1], test_mask=masks[2],
        num_train=0 if graph.train_mask is None else int(graph.train_mask.sum()), seed=job.config.seed,
        tensors=tensors, exchanger=Exchange(mode, local.global_ids, local.num_local, graph.num_nodes, tables, device))
