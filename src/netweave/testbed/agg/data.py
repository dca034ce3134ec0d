"""The testbed's data (PAHInA §VI-B trains on CIFAR-10; this machine reaches only package
registries, so):

* ``digits`` — scikit-learn's bundled handwritten digits (1,797 real images of 8×8), upsampled to
  32×32, one channel: a real dataset on which test accuracy can be compared with single-process
  training.
* ``cifar-synthetic`` — CIFAR-10-shaped inputs (3×32×32, 10 classes) for throughput: each class is
  a fixed random smooth pattern, each sample that pattern plus Gaussian noise (σ = 1, as large as
  the pattern), so a model learns it, but the numbers mean speed, not accuracy.

:func:`load` returns ``(x_train, y_train, x_test, y_test)``: float32 ``(N, C, 32, 32)`` and int64 ``(N,)``.
"""

from __future__ import annotations

import numpy as np

from ...errors import NetweaveError

DATASETS = ("digits", "cifar-synthetic")
CHANNELS = {"digits": 1, "cifar-synthetic": 3}  # of each dataset's images


def digits(seed: int = 0):
    """scikit-learn's digits, upsampled to 32×32 and split 80/20 with ``seed``."""
    from sklearn.datasets import load_digits

    d = load_digits()
    x = np.kron(d.images.astype(np.float32) / 16.0, np.ones((4, 4), np.float32))[:, None]  # (N, 1, 32, 32)
    order = np.random.default_rng(seed).permutation(len(x))
    cut = int(0.8 * len(x))
    train, test = order[:cut], order[cut:]
    return x[train], d.target[train].astype(np.int64), x[test], d.target[test].astype(np.int64)


def cifar_synthetic(seed: int = 0, train: int = 5120, test: int = 1024):
    """``train`` + ``test`` CIFAR-10-shaped samples (see the module docstring); deterministic in ``seed``."""
    rng = np.random.default_rng(seed)
    coarse = rng.standard_normal((10, 3, 8, 8)).astype(np.float32)
    patterns = np.kron(coarse, np.ones((1, 1, 4, 4), np.float32))  # smooth 32×32 class patterns
    labels = rng.integers(0, 10, train + test)
    x = patterns[labels] + rng.standard_normal((train + test, 3, 32, 32)).astype(np.float32)
    return x[:train], labels[:train].astype(np.int64), x[train:], labels[train:].astype(np.int64)


def load(name: str, seed: int = 0):
    if name == "digits":
        return digits(seed)
    if name == "cifar-synthetic":
        return cifar_synthetic(seed)
    raise NetweaveError(f"--data {name!r}: use one of {', '.join(DATASETS)}")
