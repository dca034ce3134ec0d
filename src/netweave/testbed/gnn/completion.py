"""When a one-block exchange's sums can come down: a model in link slots (one unit's or one sum's
serialization time). Every worker sends its units back to back; a destination's sum leaves the
switch once its last unit is in (switchgnn.txt §3.3); each owner's downlink takes one sum a slot
in the order they complete. The exchange ends when the last downlink is done: ``max(up, down)``
where destinations complete while units still go up, ``up + down`` where they all complete at
the end (a dense graph, whatever the order of the units).

With ``k`` column slices (:mod:`.slices`, beyond the paper) each row goes as ``k`` slices of
``1/k`` slot, every unit's slice 0 first; a destination's slice is a sum of its own, complete once
its units' slices are in. :func:`choose_slices` uses the model where ``--column-slices 0`` asks.
``benchmarks/unit_order_floor.py`` prints it for other orders of the units.
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from .plans import edge_ranges

AUTO_SLICES = 2      # the most slices the model chooses (each more makes the switch add more, narrower cells)
AUTO_GAIN = 0.9      # ... and only where they end the exchange in this share of the slots, or fewer
AUTO_MIN_VALUES = 16  # ... and each slice fills an aggregator's 16 lanes


def layer_model(p: dict) -> dict:
    """A one-block plan's (its arrays, :mod:`.plans`) units, their workers, and the (destination,
    unit) pairs: ``{"m", "worker" (U,), "owner" (D,), "a" (D, U) CSR}``."""
    if int(p["num_blocks"]) != 1:
        raise ValueError(f"the plan has {int(p['num_blocks'])} blocks; the model takes one")
    m = int(p["num_workers"])
    e, unit = edge_ranges(p["unit_lo"], p["unit_hi"])
    dests, dest_of_edge = np.unique(p["dst"][e], return_inverse=True)
    worker = np.repeat(np.arange(m), np.diff(p["unit_ptr"]))
    a = sp.csr_matrix((np.ones(e.size), (dest_of_edge, unit)), shape=(dests.size, p["unit_lo"].size))
    a.sum_duplicates()
    return {"m": m, "worker": worker, "owner": p["parts"][dests], "a": a}


def plan_order(model: dict) -> np.ndarray:
    """Each unit's position in its worker's sending order: the plan's."""
    return np.concatenate([np.arange(n) for n in np.bincount(model["worker"], minlength=model["m"])])


def finish(model: dict, pos: np.ndarray, columns: int = 1) -> tuple[float, float]:
    """The slot the last downlink ends in, and the median destination's completion (of its last
    slice), for units sent at positions ``pos`` (each worker's 0, 1, …) in ``columns`` slices."""
    a, k = model["a"], columns
    sent = np.bincount(model["worker"], minlength=model["m"])[model["worker"]]  # each unit's sender's units
    done = []
    for s in range(k):
        t = (s * sent + pos + 1.0) / k
        done.append(np.maximum.reduceat(t[a.indices], a.indptr[:-1]) if a.nnz else np.zeros(0))
    ends = []
    for o in range(model["m"]):
        c = np.sort(np.concatenate([d[model["owner"] == o] for d in done]))
        ends.append(float(np.max(c + np.arange(c.size, 0, -1) / k)) if c.size else 0.0)
    return max(ends), float(np.median(done[-1])) if done[-1].size else 0.0


def choose_slices(p: dict, width: int) -> int:
    """The column slices of a layer of ``width`` values whose one-block plan is ``p`` (its arrays):
    :data:`AUTO_SLICES` where the model ends the exchange in :data:`AUTO_GAIN` of the slots whole
    rows take, or fewer, and each slice keeps :data:`AUTO_MIN_VALUES` values; else 1."""
    k = AUTO_SLICES
    if int(p["num_blocks"]) != 1 or width % k or width // k < AUTO_MIN_VALUES or p["unit_lo"].size == 0:
        return 1
    model = layer_model(p)
    pos = plan_order(model)
    return k if finish(model, pos, k)[0] <= AUTO_GAIN * finish(model, pos)[0] else 1
