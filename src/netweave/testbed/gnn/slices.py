"""Column slices (beyond the paper): one layer's exchange with every row sent as ``k`` slices of
``dim / k`` columns, every unit's slice 0 first, then every unit's slice 1, and so on.

A destination's sum leaves the switch once its last contribution is in (switchgnn.txt §3.3). On a
dense graph such as reddit-like every destination has contributions from every worker spread over
its whole send order, so no sum completes before the last units go up, and the exchange takes
the time up plus the time down (``benchmarks/unit_order_floor.py``). Slice ``s`` of a destination
is a sum of its own, complete once every unit's slice ``s`` is in: slice 0's sums come down while
slice 1 goes up, and the exchange takes about ``up + down / k``. The bytes are the same; the switch
holds the same aggregators (``k`` cells of ``dim / k`` values a destination) and adds ``k`` times
as many cells, each ``k`` times narrower.

The sliced exchange is an ordinary plan over ``k · n`` vertices (:func:`column_slices`): slice
``s`` of vertex ``v`` is vertex ``v + s·n``, with the same owner, and a row of ``dim / k``. The
switch, its tables and the simulator take it as they take any plan. A worker's rows become ``k``
times as many, ``dim / k`` wide (:class:`SlicedTransport`).
"""

from __future__ import annotations

import dataclasses

import numpy as np

MAX_SLICES = 16  # column slices a layer, at most (a worker's sliced rows are this many times its rows)


def check_slices(k: int) -> None:
    """A user's ``--column-slices``: 0 (chosen per layer, :func:`~.completion.choose_slices`) or 1
    (whole rows) to :data:`MAX_SLICES`."""
    from ...errors import NetweaveError

    if not 0 <= k <= MAX_SLICES:
        raise NetweaveError(f"--column-slices {k}: give 1 (whole rows) to {MAX_SLICES}, or 0 to let the "
                            "model choose each layer's")


def slices_asked(k: int, exchange: str, dataplane: str) -> int:
    """What a run asks of the job for a user's ``--column-slices k``: p2p takes whole rows (1); so
    does the userspace agent unless ``k`` says otherwise, since its cells are bound by its CPU, not
    by the links, and slices only add to them (reddit-like, 8 workers, 0.025 Gb/s: 2 slices cost its
    epoch 3-19 % in three alternated pairs, BENCHMARKS.md); the kernel data plane takes ``k``
    (0: :func:`~.completion.choose_slices` per layer)."""
    if exchange != "ina":
        return 1
    return k if k or dataplane == "xdp" else 1


def column_slices(plan, k: int, num_vertices: int):
    """The :class:`~netweave.ina.plan.InaPlan` of ``plan``'s exchange (one block, rows of ``dim``
    values, ``dim % k == 0``) with every row sent as ``k`` column slices: vertex ``v``'s slice
    ``s`` is vertex ``v + s·num_vertices``; each worker sends its units' slice 0 in the plan's order,
    then their slice 1, …; each worker's destinations likewise. ``feature_bytes`` becomes a slice's."""
    if not 1 <= k <= MAX_SLICES:
        raise ValueError(f"{k} column slices: give 1 to {MAX_SLICES}")
    if k == 1:
        return plan
    if plan.num_blocks != 1:
        raise ValueError(f"column slices take a plan of one block, not {plan.num_blocks}")
    m, c, n = plan.num_workers, plan.src.size, num_vertices

    def per_worker(ptr):
        """Indices into the worker-grouped arrays, each worker's run repeated ``k`` times, and each
        index's slice."""
        runs = [(np.arange(ptr[h], ptr[h + 1]), s) for h in range(m) for s in range(k)]
        return np.concatenate([r for r, _ in runs]), np.concatenate([np.full(r.size, s) for r, s in runs])

    unit, unit_slice = per_worker(plan.unit_ptr)
    dest, dest_slice = per_worker(plan.dest_ptr)
    return dataclasses.replace(
        plan, feature_bytes=max(1, plan.feature_bytes // k), parts=np.tile(plan.parts, k),
        src=tiled(plan.src, n, k), dst=tiled(plan.dst, n, k), block=np.tile(plan.block, k),
        unit_lo=plan.unit_lo[unit] + unit_slice * c, unit_hi=plan.unit_hi[unit] + unit_slice * c,
        unit_to=plan.unit_to[unit], unit_ptr=plan.unit_ptr * k, in_edges=tiled(plan.in_edges, c, k),
        dest_v=plan.dest_v[dest] + dest_slice * n, dest_lo=plan.dest_lo[dest] + dest_slice * c,
        dest_hi=plan.dest_hi[dest] + dest_slice * c, dest_ptr=plan.dest_ptr * k,
        forward=None if plan.forward is None else np.tile(plan.forward, k))


def tiled(a: np.ndarray, step: int, k: int) -> np.ndarray:
    """``a``, then ``a + step``, …, ``a + (k - 1)·step``: ids (vertices, edges) of every slice."""
    return np.concatenate([a + s * step for s in range(k)])


def sliced_boundary(boundary: np.ndarray, num_vertices: int, k: int) -> np.ndarray:
    """A worker's boundary vertices (sorted global ids) in the ``k``-sliced numbering: every
    slice's, slice by slice (still sorted)."""
    return tiled(boundary, num_vertices, k)


class SlicedTransport:
    """A worker's exchange (``inner``: :class:`~.packet_transport.PacketTransport` or any transport
    with ``exchange`` and, optionally, ``begin``/``end``) built on the plans of :func:`column_slices`
    and on :func:`sliced_boundary` of ``most`` slices; layer ``l`` is sliced ``slices[l]`` ways
    (1: not at all). Rows ``(B, dim)`` go in as ``(most · B, dim / k)`` — slice ``s`` at rows
    ``s·B …`` — and the sums come back as ``(B, dim)``. Anything else is ``inner``'s."""

    def __init__(self, inner, slices: list[int], most: int):
        self.inner, self.slices, self.most = inner, list(slices), most
        self._shape = None
        if hasattr(inner, "begin"):  # an exchange begun and ended later only where inner has one
            self.begin, self.end = self._begin, self._end

    def __getattr__(self, name):
        if name == "inner":  # not set yet
            raise AttributeError(name)
        return getattr(self.inner, name)

    def _split(self, layer: int, rows: np.ndarray) -> np.ndarray:
        k, (b, dim) = self.slices[layer], rows.shape
        w = dim // k
        out = np.zeros((self.most * b, w), np.float32)
        for s in range(k):
            out[s * b:(s + 1) * b] = rows[:, s * w:(s + 1) * w]
        return out

    def _join(self, layer: int, sums: np.ndarray, shape: tuple[int, int]) -> np.ndarray:
        k, b = self.slices[layer], shape[0]
        return np.hstack([sums[s * b:(s + 1) * b] for s in range(k)]) if k > 1 else sums[:b]

    def exchange(self, layer: int, direction: int, rows: np.ndarray) -> np.ndarray:
        return self._join(layer, self.inner.exchange(layer, direction, self._split(layer, rows)), rows.shape)

    def _begin(self, layer: int, direction: int, rows: np.ndarray) -> None:
        self.inner.begin(layer, direction, self._split(layer, rows))
        self._shape = (layer, rows.shape)

    def _end(self) -> np.ndarray:
        (layer, shape), self._shape = self._shape, None
        return self._join(layer, self.inner.end(), shape)
