"""An :class:`~netweave.ina.plan.InaPlan` as the arrays the switch agent and the workers load:
written by the launcher as one ``.npz`` (:func:`save_plans`), read back with ``allow_pickle=False``
and checked (:func:`load_plans`): the files cross the process boundary and are not trusted."""

from __future__ import annotations

import numpy as np

from .slices import MAX_SLICES

PLAN_FIELDS = ("num_blocks", "num_workers", "parts", "src", "dst", "block", "unit_lo", "unit_hi", "unit_ptr",
               "in_edges", "dest_v", "dest_lo", "dest_hi", "dest_ptr", "forward", "dim", "slices")


def plan_arrays(plan, dim: int, slices: int = 1) -> dict[str, np.ndarray]:
    """What the switch and the workers need of an :class:`~netweave.ina.plan.InaPlan` of width ``dim``
    (a slice's, where the plan is :func:`~.slices.column_slices`' of ``slices``)."""
    forward = plan.forward if plan.forward is not None else np.zeros(plan.parts.size, bool)
    return {"num_blocks": np.array(plan.num_blocks), "num_workers": np.array(plan.num_workers), "parts": plan.parts,
            "src": plan.src, "dst": plan.dst, "block": plan.block, "unit_lo": plan.unit_lo, "unit_hi": plan.unit_hi,
            "unit_ptr": plan.unit_ptr, "in_edges": plan.in_edges, "dest_v": plan.dest_v, "dest_lo": plan.dest_lo,
            "dest_hi": plan.dest_hi, "dest_ptr": plan.dest_ptr, "forward": forward, "dim": np.array(dim),
            "slices": np.array(slices)}


def save_plans(path: str, plans: list[dict[str, np.ndarray]]) -> None:
    np.savez(path, num_layers=np.array(len(plans)), **{f"l{i}_{k}": v for i, p in enumerate(plans) for k, v in p.items()})


def load_plans(path: str) -> list[dict[str, np.ndarray]]:
    """The per-layer plan arrays of :func:`save_plans` (untrusted: ``allow_pickle=False``, checked)."""
    with np.load(path, allow_pickle=False) as f:
        layers = int(f["num_layers"])
        plans = [{k: np.asarray(f[f"l{i}_{k}"]) for k in PLAN_FIELDS} for i in range(layers)]
    for i, p in enumerate(plans):
        m, b, c = int(p["num_workers"]), int(p["num_blocks"]), p["dst"].size
        ok = (p["unit_ptr"].size == m * b + 1 and p["dest_ptr"].size == m * b + 1 and p["src"].size == c
              and p["block"].size == c and p["in_edges"].size == c
              and (c == 0 or (0 <= p["unit_lo"].min() and p["unit_hi"].max() <= c and p["dst"].max() < p["parts"].size
                              and p["src"].max() < p["parts"].size and p["block"].max() < b))
              and p["forward"].size == p["parts"].size and p["forward"].dtype == bool
              and p["slices"].shape == () and 1 <= int(p["slices"]) <= MAX_SLICES and p["parts"].size % int(p["slices"]) == 0
              and p["parts"].size // int(p["slices"]) == plans[0]["parts"].size // int(plans[0]["slices"]))
        if not ok:
            raise ValueError(f"{path}: layer {i}'s plan is inconsistent")
    return plans


def edge_ranges(lo: np.ndarray, hi: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Concatenated ``range(lo[i], hi[i])`` and, per element, its ``i`` (vectorised)."""
    lens = hi - lo
    which = np.repeat(np.arange(lo.size), lens)
    starts = np.cumsum(lens) - lens
    return lo[which] + np.arange(which.size) - starts[which], which
