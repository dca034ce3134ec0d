"""What the cost model's candidates (:mod:`~netweave.ina.choose`) share, computed once.

Every candidate blocking is planned on the same boundary relation, and several need the same costly
intermediate results (at Reddit's size, seconds to a minute each): the destinations forwarded
without an aggregator and the relation of the others, the GAMR-order peak of all its edges, and the
first METIS split (the same for ``multilevel`` and ``hybrid``). Inside :func:`shared`, :func:`memo`
keeps each per (relation object, key); outside it computes and keeps nothing.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Iterator
from contextlib import contextmanager
from typing import TypeVar

T = TypeVar("T")
_SESSIONS: list[dict] = []


@contextmanager
def shared() -> Iterator[None]:
    """Within the block :func:`memo` keeps what it computes; all of it is dropped on exit."""
    _SESSIONS.append({})
    try:
        yield
    finally:
        _SESSIONS.pop()


def memo(relation: object, key: Hashable, compute: Callable[[], T]) -> T:
    """``compute()``, once per (``relation``, ``key``) inside :func:`shared`."""
    if not _SESSIONS:
        return compute()
    store, k = _SESSIONS[-1], (id(relation), key)
    if k not in store:
        store[k] = (relation, compute())  # holding the relation keeps its id from being reused
    return store[k][1]
