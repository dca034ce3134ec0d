"""What the cost model's candidates (:mod:`~netweave.ina.choose`) share, computed once.

Every candidate blocking is planned on the same boundary relation, and several need the same costly
intermediate results (at Reddit's size, seconds to a minute each): the destinations forwarded
without an aggregator and the relation of the others, the GAMR-order peak of all its edges, and the
METIS splits and the GAMR-order peaks of the edge sets they give (the same for ``multilevel`` and
``hybrid`` until their cut edges: keyed by :func:`content`). Inside :func:`shared`, :func:`memo` keeps
each per (relation object, key); outside it computes and keeps nothing.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Hashable, Iterator
from contextlib import contextmanager
from typing import TypeVar

import numpy as np

T = TypeVar("T")
_SESSIONS: list[dict] = []


def content(edges: np.ndarray) -> tuple[int, bytes]:
    """A key for an edge set by its content (ids in order), so that equal sets built apart share results."""
    return edges.size, hashlib.blake2b(np.ascontiguousarray(edges), digest_size=16).digest()


@contextmanager
def shared() -> Iterator[None]:
    """Within the block :func:`memo` keeps what it computes; all of it is dropped on exit."""
    _SESSIONS.append({})
    try:
        yield
    finally:
        _SESSIONS.pop()


def memo(relation: object, key: Hashable | Callable[[], Hashable], compute: Callable[[], T]) -> T:
    """``compute()``, once per (``relation``, ``key``) inside :func:`shared` (``key`` may be a function
    giving it, called only there)."""
    if not _SESSIONS:
        return compute()
    store, k = _SESSIONS[-1], (id(relation), key() if callable(key) else key)
    if k not in store:
        store[k] = (relation, compute())  # holding the relation keeps its id from being reused
    return store[k][1]
