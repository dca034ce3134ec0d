"""Train/validation/test masks for datasets that ship without a split."""

from __future__ import annotations

import numpy as np


def per_class_split(labels: np.ndarray, train_per_class: int = 20, val_per_class: int = 30,
                    seed: int = 0) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The split of Shchur et al. (2018): ``train_per_class`` and ``val_per_class`` random nodes
    of every class, the rest test. Classes too small for both keep half for training.

    Returns three ``(n,)`` bool masks; deterministic for ``seed``.
    """
    rng = np.random.default_rng(seed)
    n = labels.shape[0]
    train = np.zeros(n, dtype=bool)
    val = np.zeros(n, dtype=bool)
    order = rng.permutation(n)
    by_class = order[np.argsort(labels[order], kind="stable")]  # shuffled within each class
    starts = np.searchsorted(labels[by_class], np.unique(labels))
    ends = np.append(starts[1:], n)
    for s, e in zip(starts, ends):  # one iteration per class
        size = e - s
        tr = min(train_per_class, max(1, size // 2))
        va = min(val_per_class, max(0, (size - tr) // 2))
        train[by_class[s:s + tr]] = True
        val[by_class[s + tr:s + tr + va]] = True
    return train, val, ~(train | val)


def random_split(n: int, train: float = 0.6, val: float = 0.2, seed: int = 0):
    """Random fractions of the vertices (for generated graphs); three ``(n,)`` bool masks."""
    perm = np.random.default_rng(seed).permutation(n)
    a, b = int(round(train * n)), int(round((train + val) * n))
    masks = [np.zeros(n, dtype=bool) for _ in range(3)]
    masks[0][perm[:a]] = masks[1][perm[a:b]] = masks[2][perm[b:]] = True
    return tuple(masks)
