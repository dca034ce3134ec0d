"""GCN's embedding exchange as one sum primitive, so that a switch can aggregate it (switchgnn.txt §2.3).

GCN with symmetric normalisation (:mod:`.models`) computes, for an own vertex ``v``,

    out_v = W^T ( Σ_{u ∈ N(v) ∪ {v}} c_u c_v h_u ) + b,      c_x = 1 / sqrt(d_x + 1)

over full-graph degrees ``d``. Split ``N(v)`` into local and remote neighbours: the remote part is
``c_v · R_v`` with

    R_v = Σ_{u remote neighbour of v} c_u h_u.

``R`` is what an in-network aggregator computes: each sender scales its row by ``c_u``, the switch
adds plain vectors, the receiver scales the sum by ``c_v``. One primitive, the *exchange*
``E: (c ⊙ h) rows of own boundary vertices → R rows of own boundary vertices``, carries a layer.

**Backward.** The graph is undirected, so the cross relation is symmetric (``u → v`` crosses iff
``v → u`` does) and a worker's senders are exactly its destinations, its *boundary* vertices.
For ``R = A_× y`` with the symmetric cross adjacency ``A_×``, ``∂L/∂y = A_×^T ∂L/∂R = A_× ∂L/∂R``:
the backward is the same exchange applied to the gradient rows (destinations send, senders
receive). :class:`SumExchange` wraps it in a :class:`torch.autograd.Function` that calls its
transport in both directions.

**Plugging into DistGNN.** :func:`sum_local_tensors` builds a :class:`~.models.LocalTensors`
whose ``gcn_adj`` has columns ``[own rows (local edges + self loop, weights c_u c_v), then one
virtual column per own boundary vertex (weight c_v)]``; :class:`SumExchange` returns
``cat([h, E(c ⊙ h)])``. :class:`~.models.DistGNN`'s GCN layer runs unchanged on it. (GCN only:
SAGE's mean and GIN's plain sum would need other scalings.)

**Transports.** ``transport.exchange(layer, direction, rows) -> sums`` with ``rows`` and ``sums``
``(num_boundary, D)`` float32 in the order of :attr:`SumLayout.boundary`. :class:`ReferenceHub`
is the in-process one (threads, a barrier, the sums taken from the relation directly) that the
unit tests check against a single process; :mod:`netweave.testbed.gnn.worker` has the TCP ones
(through the emulated SwitchGNN switch, and BNS-GCN-style peer to peer).
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass, field

import numpy as np
import scipy.sparse as sp
import torch

from ..errors import NetweaveError
from .models import LocalTensors, _csr

FORWARD, BACKWARD = 0, 1


def gcn_scale(degrees: np.ndarray) -> np.ndarray:
    """``c = 1 / sqrt(d + 1)`` per vertex (float64), over full-graph degrees."""
    return 1.0 / np.sqrt(np.asarray(degrees, dtype=np.float64) + 1.0)


def adjacency(indptr: np.ndarray, indices: np.ndarray, n: int) -> sp.csr_matrix:
    """The graph's 0/1 adjacency as a scipy CSR (float64)."""
    return sp.csr_matrix((np.ones(indices.size), np.asarray(indices, np.int64), np.asarray(indptr, np.int64)),
                         shape=(n, n))


@dataclass(frozen=True, eq=False)
class SumLayout:
    """What one worker holds for the sum exchange.

    Attributes:
        rank: the worker; own: ``(num_local,)`` its vertices (sorted global ids, the local order).
        boundary: ``(num_boundary,)`` own vertices with a remote neighbour (sorted global ids):
            the rows it sends and the sums it receives.
        boundary_local: their positions among ``own``.
        c_boundary: ``(num_boundary,)`` ``c`` of each boundary vertex.
        rows, cols, vals: ``gcn_adj`` entries (see the module docstring): ``(num_local, num_local + num_boundary)``.
    """

    rank: int
    own: np.ndarray
    boundary: np.ndarray
    boundary_local: np.ndarray
    c_boundary: np.ndarray
    rows: np.ndarray
    cols: np.ndarray
    vals: np.ndarray

    @property
    def num_local(self) -> int:
        return int(self.own.size)

    @property
    def num_boundary(self) -> int:
        return int(self.boundary.size)

    def arrays(self) -> dict[str, np.ndarray]:
        """Plain arrays (an ``.npz`` a worker process loads with ``allow_pickle=False``)."""
        return {"rank": np.array(self.rank), "own": self.own, "boundary": self.boundary,
                "boundary_local": self.boundary_local, "c_boundary": self.c_boundary, "rows": self.rows,
                "cols": self.cols, "vals": self.vals}

    @classmethod
    def from_arrays(cls, a) -> "SumLayout":
        return cls(int(a["rank"]), *(np.asarray(a[k]) for k in ("own", "boundary", "boundary_local", "c_boundary",
                                                                  "rows", "cols", "vals")))


def sum_layout(indptr: np.ndarray, indices: np.ndarray, parts: np.ndarray, rank: int) -> SumLayout:
    """The :class:`SumLayout` of ``rank`` for the graph ``(indptr, indices)`` split by ``parts``."""
    n = parts.size
    a = adjacency(indptr, indices, n)
    c = gcn_scale(np.diff(indptr))
    own = np.flatnonzero(parts == rank)
    a_own = a[own]  # own rows, all columns
    remote = a_own.multiply(sp.csr_matrix(parts[None, :] != rank)).tocsr()  # own rows' remote neighbours
    boundary_local = np.flatnonzero(np.diff(remote.indptr) > 0)
    local = a_own[:, own].tocoo()
    r = np.concatenate([local.row, np.arange(own.size), boundary_local]).astype(np.int64)
    k = np.concatenate([local.col, np.arange(own.size), own.size + np.arange(boundary_local.size)]).astype(np.int64)
    cv = c[own]
    v = np.concatenate([cv[local.row] * cv[local.col], cv * cv, cv[boundary_local]])
    order = np.lexsort((k, r))
    return SumLayout(rank, own, own[boundary_local], boundary_local, cv[boundary_local], r[order], k[order], v[order])


def sum_local_tensors(layout: SumLayout, device="cpu") -> LocalTensors:
    """The :class:`~.models.LocalTensors` of ``layout`` for :class:`~.models.DistGNN` (GCN)."""
    n_own, n_out = layout.num_local, layout.num_local + layout.num_boundary
    ptr = np.zeros(n_own + 1, np.int64)
    np.cumsum(np.bincount(layout.rows, minlength=n_own), out=ptr[1:])

    def t(x):
        return torch.from_numpy(np.ascontiguousarray(x)).to(device)

    gcn = _csr(t(ptr), t(layout.cols), t(layout.vals.astype(np.float32)), (n_own, n_out))
    # ``adj`` (SAGE/GIN) is not meaningful with virtual columns: the same pattern with unit weights
    adj = _csr(t(ptr), t(layout.cols), t(np.ones(layout.cols.size, np.float32)), (n_own, n_out))
    return LocalTensors(adj, gcn, t(layout.own.astype(np.int64)), n_own, n_out)


@dataclass
class ExchangeCounter:
    """Seconds inside the exchange, and bytes the transport sent and received (its own framing);
    ``entered``: each call's start (s, ``time.perf_counter``: on Linux the system's monotonic
    clock, so the processes of one machine can compare theirs)."""

    seconds: float = 0.0
    bytes_sent: int = 0
    bytes_received: int = 0
    calls: int = 0
    entered: list[float] = field(default_factory=list)

    def reset(self) -> None:
        self.seconds, self.bytes_sent, self.bytes_received, self.calls = 0.0, 0, 0, 0
        self.entered.clear()

    def call(self, t0: float) -> None:
        """One exchange, begun at ``t0`` (``time.perf_counter``) and ended now."""
        self.seconds += time.perf_counter() - t0
        self.calls += 1
        self.entered.append(t0)


class _SumExchangeFn(torch.autograd.Function):
    """``R = E(y)``; its backward is ``E`` again on the gradient (``E`` is self-adjoint, see the module)."""

    @staticmethod
    def forward(ctx, y, exchange, layer):
        ctx.exchange, ctx.layer = exchange, layer
        return exchange._call(layer, FORWARD, y)

    @staticmethod
    def backward(ctx, grad):
        return ctx.exchange._call(ctx.layer, BACKWARD, grad), None, None


class _OverlappedSumFn(torch.autograd.Function):
    """``A_own x + Pᵀ diag(c) E(diag(c) P x)`` (``P``: the boundary rows): the sum over own and
    remote neighbours that ``gcn_adj`` makes of ``cat([x, E(c ⊙ x[boundary])])``, with ``A_own x``
    computed while the exchange is on the wire. Its backward is the same with ``A_ownᵀ`` and ``E``
    again (self-adjoint), overlapped the same way."""

    @staticmethod
    def forward(ctx, x, exchange, layer):
        ctx.exchange, ctx.layer = exchange, layer
        return exchange._overlapped(layer, FORWARD, x, exchange.own)

    @staticmethod
    def backward(ctx, grad):
        return ctx.exchange._overlapped(ctx.layer, BACKWARD, grad, ctx.exchange.own_t), None, None


class SumExchange:
    """The ``exchange`` callable of :class:`~.models.DistGNN`: ``h`` ``(num_local, D)`` →
    ``cat([h, E(c ⊙ h)])``; layer ``i`` of a forward pass is the ``i``-th call (mod ``num_layers``).

    With ``overlap_local`` (beyond the papers) a GCN layer that exchanges ``h W`` calls
    :meth:`propagate` instead, which sums the own neighbours' rows (``A_own``, ``gcn_adj``'s own
    columns) while the exchange is on the wire, where the transport can start an exchange and
    finish it later (``begin(layer, direction, rows)``, then ``end()``); a worker whose part has
    more local edges than the others' then no longer starts its exchange later than they do."""

    def __init__(self, layout: SumLayout, transport, num_layers: int, device="cpu", overlap_local: bool = False):
        self.layout, self.transport, self.num_layers = layout, transport, num_layers
        self.index = torch.from_numpy(layout.boundary_local.astype(np.int64)).to(device)
        self.scale = torch.from_numpy(layout.c_boundary.astype(np.float32))[:, None].to(device)
        self.counter = ExchangeCounter()
        self.overlap_local = overlap_local
        if overlap_local:
            n, keep = layout.num_local, layout.cols < layout.num_local
            own = sp.csr_matrix((layout.vals[keep], (layout.rows[keep], layout.cols[keep])), shape=(n, n))
            self.own, self.own_t = (_csr(torch.from_numpy(m.indptr.astype(np.int64)),
                                         torch.from_numpy(m.indices.astype(np.int64)),
                                         torch.from_numpy(m.data.astype(np.float32)), (n, n)).to(device)
                                    for m in (own, own.T.tocsr()))  # A_own, and A_ownᵀ for the backward
        self._layer = 0

    def _next_layer(self) -> int:
        layer = self._layer
        self._layer = (self._layer + 1) % self.num_layers
        return layer

    def __call__(self, h: torch.Tensor) -> torch.Tensor:
        layer = self._next_layer()
        y = h.index_select(0, self.index) * self.scale
        return torch.cat([h, _SumExchangeFn.apply(y, self, layer)])

    def propagate(self, x: torch.Tensor) -> torch.Tensor:
        """``(num_local, D)`` → ``(num_local, D)``: ``gcn_adj @ cat([x, E(c ⊙ x[boundary])])``, the
        own part overlapped with the exchange (needs ``overlap_local``); the layer's call like
        :meth:`__call__`."""
        return _OverlappedSumFn.apply(x, self, self._next_layer())

    def _overlapped(self, layer: int, direction: int, x: torch.Tensor, own: torch.Tensor) -> torch.Tensor:
        """``own @ x`` plus the boundary rows' sums of ``c ⊙ x[boundary]``, scaled by ``c``; the
        exchange's time (``counter``) runs from its start to its end, the own sum inside it."""
        scale = self.scale.to(x.dtype)
        rows = np.ascontiguousarray((x.detach().index_select(0, self.index) * scale).cpu().numpy(), np.float32)
        begin, out = getattr(self.transport, "begin", None), None
        t0 = time.perf_counter()
        if begin is not None:
            begin(layer, direction, rows)
            out = own.to(x.dtype) @ x.detach()  # while the rows are on the wire
            sums = self.transport.end()
        else:
            sums = self.transport.exchange(layer, direction, rows)
        self.counter.call(t0)
        if out is None:  # a transport that exchanges in one call: the own sum after it
            out = own.to(x.dtype) @ x.detach()
        r = torch.from_numpy(np.asarray(sums, np.float32)).to(device=x.device, dtype=x.dtype)
        return out.index_add_(0, self.index, r * scale)

    def _call(self, layer: int, direction: int, rows: torch.Tensor) -> torch.Tensor:
        t0 = time.perf_counter()
        out = self.transport.exchange(layer, direction, np.ascontiguousarray(rows.detach().cpu().numpy(), np.float32))
        self.counter.call(t0)
        return torch.from_numpy(np.asarray(out, np.float32)).to(rows.device)


def cross_adjacency(indptr: np.ndarray, indices: np.ndarray, parts: np.ndarray) -> sp.csr_matrix:
    """``A_×``: the cross-partition edges ``u → v`` (``parts[u] != parts[v]``) as an ``(n, n)`` 0/1 CSR."""
    n = parts.size
    a = adjacency(indptr, indices, n).tocoo()
    keep = parts[a.row] != parts[a.col]
    return sp.csr_matrix((a.data[keep], (a.row[keep], a.col[keep])), shape=(n, n))


@dataclass
class ReferenceHub:
    """The in-process transport: one thread per worker; every exchange deposits the workers' rows,
    waits for all, and each worker takes ``R = A_× Y`` (float64) for its boundary rows directly
    from the relation. ``hub.transport(rank)`` is worker ``rank``'s end."""

    cross: sp.csr_matrix
    layouts: list[SumLayout]
    _rows: dict = field(default_factory=dict)

    def __post_init__(self):
        self._barrier = threading.Barrier(len(self.layouts), timeout=120)

    def transport(self, rank: int) -> "_ReferenceTransport":
        return _ReferenceTransport(self, rank)

    def _exchange(self, rank: int, rows: np.ndarray) -> np.ndarray:
        self._rows[rank] = rows
        self._barrier.wait()
        full = np.zeros((self.cross.shape[0], rows.shape[1]))
        for lay in self.layouts:
            full[lay.boundary] = self._rows[lay.rank]
        mine = self.layouts[rank].boundary
        out = (self.cross[mine] @ full).astype(np.float32)
        self._barrier.wait()  # nobody deposits the next exchange's rows before all have read these
        return out


@dataclass
class _ReferenceTransport:
    hub: ReferenceHub
    rank: int

    def exchange(self, layer: int, direction: int, rows: np.ndarray) -> np.ndarray:
        if rows.shape[0] != self.hub.layouts[self.rank].num_boundary:
            raise NetweaveError(f"worker {self.rank}: {rows.shape[0]} rows for "
                                f"{self.hub.layouts[self.rank].num_boundary} boundary vertices")
        return self.hub._exchange(self.rank, rows)


def run_workers(fn, workers: int) -> list:
    """``fn(rank)`` in one thread per worker (the reference transport's way of running them); the
    first exception is raised here."""
    results, errors = [None] * workers, []

    def body(rank):
        try:
            results[rank] = fn(rank)
        except BaseException as e:  # noqa: BLE001 - reported below
            errors.append(e)

    threads = [threading.Thread(target=body, args=(r,), daemon=True) for r in range(workers)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    if errors:
        raise errors[0]
    return results
