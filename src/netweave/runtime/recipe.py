"""The standard training recipe of each model: width, optimiser, regularisation, input scaling.

A full-graph trainer is judged by the accuracy its users know from the literature, so every
model trains by default the way its reference implementation does:

* **GCN** — Kipf & Welling (ICLR 2017) §5.2 and PyG's ``examples/gcn.py``: 16 hidden units,
  dropout 0.5 before each layer, Adam with learning rate 0.01, L2 regularisation 5·10⁻⁴ on the
  *first* layer's weights only, 200 epochs.
* **GraphSAGE (mean)** and **GIN** — their papers tune on inductive (PPI, Reddit) and
  graph-classification tasks, not on the transductive node classification netweave trains; they
  use the regularisation of Kipf & Welling's transductive setting (dropout 0.5, L2 5·10⁻⁴), here
  on every layer, which is how PyG's node-classification examples train them, with 64 hidden
  units (GIN's social-network setting; GraphSAGE's supervised models are wider).

Every recipe row-normalises the input features (``x_v / Σ_c x_vc`` after shifting the minimum to 0:
PyG's ``NormalizeFeatures``, Kipf & Welling's preprocessing). Bag-of-words counts of a few hundred ones per row otherwise
saturate the first layer: on Amazon Photo, GraphSAGE trained on raw counts collapses to one
prediction for every vertex (loss ln C).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp


@dataclass(frozen=True)
class Recipe:
    """Defaults of one model.

    Attributes:
        hidden: hidden width (units per hidden layer).
        lr: Adam learning rate.
        weight_decay: L2 coefficient (Adam's ``weight_decay``).
        decay_first_layer_only: apply ``weight_decay`` to the first layer's parameters only (GCN).
        dropout: dropout probability before every layer.
    """

    hidden: int
    lr: float
    weight_decay: float
    decay_first_layer_only: bool
    dropout: float


RECIPES: dict[str, Recipe] = {
    "gcn": Recipe(hidden=16, lr=0.01, weight_decay=5e-4, decay_first_layer_only=True, dropout=0.5),
    "sage": Recipe(hidden=64, lr=0.01, weight_decay=5e-4, decay_first_layer_only=False, dropout=0.5),
    "gin": Recipe(hidden=64, lr=0.01, weight_decay=5e-4, decay_first_layer_only=False, dropout=0.5),
}


def feature_shift(features) -> float:
    """The graph-wide minimum feature value (implicit zeros of a sparse matrix included)."""
    if sp.issparse(features):
        data = features.data
        low = float(data.min()) if data.size else 0.0
        return min(low, 0.0) if data.size < features.shape[0] * features.shape[1] else low
    return float(np.min(features)) if np.size(features) else 0.0


def normalize_rows(features, shift: float) -> np.ndarray:
    """``(R, F)`` features → dense float32 ``(x_v − shift) / max(Σ_c (x_vc − shift), 1)``.

    PyG's ``NormalizeFeatures`` with its ``shift = min(x)`` taken over the *whole* graph
    (:func:`feature_shift`), so any partition of the rows gives the single-process values exactly.
    """
    dense = features.toarray() if sp.issparse(features) else np.asarray(features)
    dense = np.asarray(dense, dtype=np.float32) - np.float32(shift)
    return dense / np.maximum(dense.sum(axis=1, keepdims=True, dtype=np.float32), np.float32(1.0))


def param_groups(convs, weight_decay: float, first_layer_only: bool) -> list[dict]:
    """Adam parameter groups: ``weight_decay`` on the first layer (or on all), none elsewhere."""
    if not first_layer_only:
        return [{"params": [p for c in convs for p in c.parameters()], "weight_decay": weight_decay}]
    rest = [p for c in convs[1:] for p in c.parameters()]
    groups = [{"params": list(convs[0].parameters()), "weight_decay": weight_decay}]
    return groups + ([{"params": rest, "weight_decay": 0.0}] if rest else [])
