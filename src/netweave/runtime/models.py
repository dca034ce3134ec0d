"""GCN, GraphSAGE and GIN from PyG layers, run on one worker's local graph ``G_d``.

Each layer follows DGCL's Listing 1: dropout on the rank's own rows, ``graph_allgather`` to get
own + halo rows, the PyG graph layer on ``G_d``, then only the own rows go on (dgcl.txt §6:
"we remove the embeddings of the remote vertices before ... the normal DNN operations").

* GCN (Kipf & Welling): ``h_v' = W^T Σ_{u ∈ N(v) ∪ {v}} h_u / sqrt((d_u + 1)(d_v + 1)) + b`` with the
  degrees ``d`` of the *full* graph, so the distributed layer equals the single-process one.
  With ``transform_first`` a layer that narrows (``d_out < d_in``) exchanges ``h W`` instead of
  ``h`` — the same sum, ``Σ c_u (h_u W) = (Σ c_u h_u) W``, in PyG ``GCNConv``'s own order (its
  ``lin``, then ``propagate``) and DGL ``GraphConv``'s rule: ``d_out`` values a row on the wire
  instead of ``d_in``, and a backward exchange of ``d_out``-wide gradients (``W`` needs them)
  where the first layer had none.
* GraphSAGE (mean): ``h_v' = W_1 h_v + W_2 · mean_{u ∈ N(v)} h_u``.
* GIN: ``h_v' = MLP((1 + ε) h_v + Σ_{u ∈ N(v)} h_u)`` with a two-layer MLP and ε = 0.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass

import numpy as np
import torch
import torch.nn.functional as F

from ..errors import NetweaveError
from ..partition import LocalGraph
from .dropout import dropout_key, vertex_dropout
from .local_edges import gcn_edges, local_edges

MODELS = ("gcn", "sage", "gin")


@dataclass(frozen=True, eq=False)
class LocalTensors:
    """``G_d`` as torch sparse operators (PyG's transposed ``adj_t``: rows are targets).

    Attributes:
        adj: ``(num_local, num_out)`` CSR, one unit entry per edge: row ``v`` (an own vertex)
            holds its neighbours, own or halo, in local numbering and in the global CSR order.
        gcn_adj: the same rows with GCN weights ``1 / sqrt((d_u + 1)(d_v + 1))`` and, last in each
            row, the self loop ``1 / (d_v + 1)``, over full-graph degrees ``d``.
        own_ids: ``(num_local,)`` global ids of the own rows (the dropout keys).

    The layers run one sparse-dense product per layer on these, instead of gathering every source
    row per edge: the same sums, several times faster and without an ``(E, D)`` intermediate.
    """

    adj: torch.Tensor
    gcn_adj: torch.Tensor
    own_ids: torch.Tensor
    num_local: int
    num_out: int


def local_tensors(local: LocalGraph, degrees: np.ndarray, device="cpu") -> LocalTensors:
    """The sparse operators of ``G_d`` (see :class:`LocalTensors`) over full-graph ``degrees``."""
    n_own, n_out = local.num_local, int(local.global_ids.size)
    source, _ = local_edges(local)
    gcn_ptr, gcn_cols, _, gcn_vals = gcn_edges(local, degrees)

    def t(a):
        return torch.from_numpy(np.ascontiguousarray(a)).to(device)

    adj = _csr(t(local.indptr.astype(np.int64)), t(source), t(np.ones(source.size, np.float32)), (n_own, n_out))
    gcn_adj = _csr(t(gcn_ptr), t(gcn_cols), t(gcn_vals), (n_own, n_out))
    return LocalTensors(adj, gcn_adj, t(local.global_ids[:n_own].astype(np.int64)), n_own, n_out)


def _csr(indptr: torch.Tensor, indices: torch.Tensor, values: torch.Tensor, shape: tuple[int, int]) -> torch.Tensor:
    with warnings.catch_warnings():  # "sparse CSR support is in beta": the product and its backward are all we use
        warnings.simplefilter("ignore", UserWarning)
        return torch.sparse_csr_tensor(indptr, indices, values, size=shape)


def exchange_widths(dims: list[int], transform_first: bool) -> list[int]:
    """The row width each layer's exchange carries: ``dims[i]`` (the layer's input), or with
    ``transform_first`` ``min(dims[i], dims[i + 1])`` (a narrowing layer sends ``h W``)."""
    return [min(d, e) if transform_first else d for d, e in zip(dims[:-1], dims[1:])]


class DistGNN(torch.nn.Module):
    """An ``L``-layer GNN whose layers see own + halo rows through an exchange.

    Args:
        model: ``gcn``, ``sage`` or ``gin``.
        dims: ``[in, hidden, ..., classes]``, ``L + 1`` widths.
        dropout: probability for the input of every layer (keyed by vertex, see :mod:`.dropout`).
        seed: dropout seed.
        transform_first: GCN only: a layer that narrows exchanges ``h W`` (see the module);
            :func:`exchange_widths` gives the widths on the wire.
    """

    def __init__(self, model: str, dims: list[int], dropout: float, seed: int, transform_first: bool = False):
        super().__init__()
        from torch_geometric.nn import GCNConv, GINConv, SAGEConv

        if model not in MODELS:
            raise NetweaveError(f"unknown model {model!r}; choose one of {', '.join(MODELS)}")
        if transform_first and model != "gcn":
            raise NetweaveError(f"transform_first is GCN's (its sum commutes with W); {model} exchanges its layer inputs")
        self.model, self.p, self.seed, self.step = model, dropout, seed, 0
        convs = []
        for d_in, d_out in zip(dims[:-1], dims[1:]):
            if model == "gcn":
                convs.append(GCNConv(d_in, d_out, normalize=False, add_self_loops=False))
            elif model == "sage":
                convs.append(SAGEConv(d_in, d_out, aggr="mean"))
            else:
                mlp = torch.nn.Sequential(torch.nn.Linear(d_in, d_out), torch.nn.ReLU(), torch.nn.Linear(d_out, d_out))
                convs.append(GINConv(mlp, eps=0.0, train_eps=False))
        self.convs = torch.nn.ModuleList(convs)
        self.transform_first = [w != d for w, d in zip(exchange_widths(dims, transform_first), dims)]  # per layer

    def forward(self, x: torch.Tensor, g: LocalTensors, exchange) -> torch.Tensor:
        """``x``: ``(num_local, F)`` own input features → ``(num_local, C)`` logits of the own vertices."""
        h = x
        for layer, conv in enumerate(self.convs):
            h = vertex_dropout(h, g.own_ids, self.p, dropout_key(self.seed, self.step, layer), self.training)
            if self.transform_first[layer] and getattr(exchange, "overlap_local", False):
                h = exchange.propagate(conv.lin(h)) + conv.bias  # the same sum, own rows' while the exchange runs
            elif self.transform_first[layer]:  # GCNConv's own steps (lin, propagate, bias), the exchange between them
                hw_all = exchange(conv.lin(h))
                h = conv.propagate(g.gcn_adj.to(hw_all.dtype), x=hw_all, edge_weight=None) + conv.bias
            elif self.model == "gcn":
                h_all = exchange(h)  # own rows, then halo rows (graphAllgather)
                h = conv(h_all, g.gcn_adj.to(h_all.dtype))
            else:
                h_all = exchange(h)
                h = conv((h_all, h_all[: g.num_local]), g.adj.to(h_all.dtype))
            if layer < len(self.convs) - 1:
                h = F.relu(h)
        if self.training:
            self.step += 1
        return h
