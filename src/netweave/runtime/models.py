"""GCN, GraphSAGE and GIN from PyG layers, run on one worker's local graph ``G_d``.

Each layer follows DGCL's Listing 1: dropout on the rank's own rows, ``graph_allgather`` to get
own + halo rows, the PyG graph layer on ``G_d``, then only the own rows go on (dgcl.txt §6:
"we remove the embeddings of the remote vertices before ... the normal DNN operations").

* GCN (Kipf & Welling): ``h_v' = W^T Σ_{u ∈ N(v) ∪ {v}} h_u / sqrt((d_u + 1)(d_v + 1)) + b`` with the
  degrees ``d`` of the *full* graph, so the distributed layer equals the single-process one.
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

MODELS = ("gcn", "sage", "gin")


@dataclass(frozen=True, eq=False)
class LocalTensors:
    """``G_d`` as torch tensors.

    Attributes:
        edge_index: ``(2, E)`` int64 ``[source, target]`` in local numbering; targets are own rows
            (``< num_local``), sources own or halo. Within a target, sources keep the global CSR order.
        gcn_weight: ``(E + num_local,)`` GCN edge weights, then one self-loop weight per own row;
            ``gcn_index`` is ``edge_index`` with those self loops appended.
        own_ids: ``(num_local,)`` global ids of the own rows (the dropout keys).
        adj: ``(num_local, num_out)`` sparse CSR of ``edge_index`` with unit values (PyG's
            transposed ``adj_t``: rows are targets); ``gcn_adj`` the same with the GCN weights and
            self loops. The layers run on these (one sparse-dense product per layer instead of a
            gather of every source row per edge: same sums, several times faster and smaller).
    """

    edge_index: torch.Tensor
    gcn_index: torch.Tensor
    gcn_weight: torch.Tensor
    own_ids: torch.Tensor
    adj: torch.Tensor
    gcn_adj: torch.Tensor
    num_local: int
    num_out: int


def local_tensors(local: LocalGraph, degrees: np.ndarray, device="cpu") -> LocalTensors:
    """Edge lists of ``G_d`` with GCN weights ``1 / sqrt((d_u + 1)(d_v + 1))`` over full-graph ``degrees``."""
    n_own = local.num_local
    target = np.repeat(np.arange(n_own, dtype=np.int64), np.diff(local.indptr))
    source = local.indices.astype(np.int64)
    deg1 = degrees[local.global_ids].astype(np.float64) + 1.0
    weight = 1.0 / np.sqrt(deg1[source] * deg1[target])
    loops = np.arange(n_own, dtype=np.int64)
    gcn_index = np.stack([np.concatenate([source, loops]), np.concatenate([target, loops])])
    gcn_weight = np.concatenate([weight, 1.0 / deg1[:n_own]]).astype(np.float32)

    n_out = int(local.global_ids.size)

    def t(a):
        return torch.from_numpy(np.ascontiguousarray(a)).to(device)

    # CSR rows of the GCN operator: each own row's neighbours in CSR order, then its self loop.
    counts = np.diff(local.indptr).astype(np.int64)
    order = np.argsort(np.concatenate([target, loops]), kind="stable")
    gcn_ptr = np.concatenate([[0], np.cumsum(counts + 1)])
    adj = _csr(t(local.indptr.astype(np.int64)), t(source), t(np.ones(source.size, np.float32)), (n_own, n_out))
    gcn_adj = _csr(t(gcn_ptr), t(gcn_index[0][order]), t(gcn_weight[order]), (n_own, n_out))
    return LocalTensors(t(np.stack([source, target])), t(gcn_index), t(gcn_weight),
                        t(local.global_ids[:n_own].astype(np.int64)), adj, gcn_adj, n_own, n_out)


def _csr(indptr: torch.Tensor, indices: torch.Tensor, values: torch.Tensor, shape: tuple[int, int]) -> torch.Tensor:
    with warnings.catch_warnings():  # "sparse CSR support is in beta": the product and its backward are all we use
        warnings.simplefilter("ignore", UserWarning)
        return torch.sparse_csr_tensor(indptr, indices, values, size=shape)


class DistGNN(torch.nn.Module):
    """An ``L``-layer GNN whose layers see own + halo rows through an exchange.

    Args:
        model: ``gcn``, ``sage`` or ``gin``.
        dims: ``[in, hidden, ..., classes]``, ``L + 1`` widths.
        dropout: probability for the input of every layer (keyed by vertex, see :mod:`.dropout`).
        seed: dropout seed.
    """

    def __init__(self, model: str, dims: list[int], dropout: float, seed: int):
        super().__init__()
        from torch_geometric.nn import GCNConv, GINConv, SAGEConv

        if model not in MODELS:
            raise NetweaveError(f"unknown model {model!r}; choose one of {', '.join(MODELS)}")
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

    def forward(self, x: torch.Tensor, g: LocalTensors, exchange) -> torch.Tensor:
        """``x``: ``(num_local, F)`` own input features → ``(num_local, C)`` logits of the own vertices."""
        h = x
        for layer, conv in enumerate(self.convs):
            h = vertex_dropout(h, g.own_ids, self.p, dropout_key(self.seed, self.step, layer), self.training)
            h_all = exchange(h)  # own rows, then halo rows (graphAllgather)
            if self.model == "gcn":
                h = conv(h_all, g.gcn_adj.to(h_all.dtype))
            else:
                h = conv((h_all, h_all[: g.num_local]), g.adj.to(h_all.dtype))
            if layer < len(self.convs) - 1:
                h = F.relu(h)
        if self.training:
            self.step += 1
        return h
