"""Loader for the Planetoid split files of Cora, CiteSeer and PubMed (``ind.<name>.*``).

Follows the construction of Kipf & Welling's ``gcn/utils.py``: features are ``vstack(allx, tx)``
with the test rows put back at the ids in ``test.index``; training nodes are the ``len(y)`` first
ids, validation the next 500, test the ids in ``test.index``. CiteSeer's test ids have gaps
(isolated nodes); their rows are filled with zeros as in the reference code. If ``allx`` is
missing (the PubMed copy in ``../shared/data``), its rows are zeros except the first ``len(x)``,
which are ``x`` (Planetoid stores ``x`` as the head of ``allx``), and a warning says so.
"""

from __future__ import annotations

import itertools
import pickle
import warnings
from pathlib import Path

import numpy as np
import scipy.sparse as sp

from ..errors import NetweaveError
from ..progress import warn
from .graph import Graph, from_edges

PARTS = ("x", "y", "tx", "ty", "allx", "ally", "graph", "test.index")


def planetoid_names(directory: Path) -> list[str]:
    """Dataset names with a ``ind.<name>.graph`` file in ``directory``."""
    return sorted(p.name[4:-6] for p in directory.glob("ind.*.graph"))


def _unpickle(path: Path):
    try:
        with open(path, "rb") as f, warnings.catch_warnings():
            warnings.simplefilter("ignore", DeprecationWarning)  # old scipy module paths in the pickles
            return pickle.load(f, encoding="latin1")
    except Exception as exc:  # pickle raises many types on bad input
        raise NetweaveError(f"{path}: not a readable Planetoid pickle ({type(exc).__name__}: {exc})") from None


def load_planetoid(directory: str | Path, name: str | None = None) -> Graph:
    """Load ``ind.<name>.*`` from ``directory`` (``name`` may be omitted if only one is there)."""
    directory = Path(directory)
    if not directory.is_dir():
        raise NetweaveError(f"{directory}: not a directory; planetoid:DIR:NAME needs the folder with ind.NAME.* files")
    names = planetoid_names(directory)
    if name is None:
        if len(names) != 1:
            raise NetweaveError(f"{directory} holds Planetoid datasets {names or 'none'}; name one as planetoid:{directory}:NAME")
        name = names[0]
    name = name.lower()
    if name not in names:
        raise NetweaveError(f"{directory}: no ind.{name}.graph; available: {', '.join(names) or 'none'}")
    path = lambda part: directory / f"ind.{name}.{part}"  # noqa: E731
    missing = [p for p in PARTS if not path(p).exists()]
    if set(missing) - {"allx"}:
        raise NetweaveError(f"{directory}: Planetoid files missing for {name}: {', '.join('ind.%s.%s' % (name, m) for m in missing)}")
    x, y, tx, ty, ally = (_unpickle(path(p)) for p in ("x", "y", "tx", "ty", "ally"))
    adjacency = _unpickle(path("graph"))
    try:
        test_idx = np.loadtxt(path("test.index"), dtype=np.int64, ndmin=1)
    except ValueError as exc:
        raise NetweaveError(f"{path('test.index')}: expected one integer per line ({exc})") from None
    x, tx = sp.csr_array(x, dtype=np.float32), sp.csr_array(tx, dtype=np.float32)
    y, ty, ally = np.asarray(y), np.asarray(ty), np.asarray(ally)
    n_all = ally.shape[0]
    if "allx" in missing:
        warn(f"{path('allx')} is missing: features of {n_all - x.shape[0]} of {n_all} non-test nodes are filled with zeros")
        allx = sp.vstack([x, sp.csr_array((n_all - x.shape[0], x.shape[1]), dtype=np.float32)])
    else:
        allx = sp.csr_array(_unpickle(path("allx")), dtype=np.float32)

    lo, hi = int(test_idx.min()), int(test_idx.max())
    if lo != n_all or len(np.unique(test_idx)) != tx.shape[0]:
        raise NetweaveError(f"{path('test.index')}: test ids must be distinct and start right after the {n_all} allx rows")
    span = hi - lo + 1
    if span != tx.shape[0]:  # CiteSeer: isolated test ids absent from tx/ty
        warn(f"{name}: {span - tx.shape[0]} test ids in [{lo}, {hi}] have no features; filled with zeros (as GCN does)")
    # tx[i] and ty[i] belong to node test_idx[i] (gcn/utils.py's reorder), gaps stay zero.
    rows = test_idx - lo
    place = sp.csr_array((np.ones(len(rows), np.float32), (rows, np.arange(len(rows)))),
                         shape=(span, tx.shape[0]))
    ty_full = np.zeros((span, ty.shape[1]), dtype=ty.dtype)
    ty_full[rows] = ty
    features = sp.vstack([allx, place @ tx]).tocsr()
    labels_1hot = np.vstack([ally, ty_full])
    labels = labels_1hot.argmax(1).astype(np.int64)

    n = features.shape[0]
    src = np.repeat(np.fromiter(adjacency.keys(), np.int64), np.fromiter(map(len, adjacency.values()), np.int64))
    dst = np.fromiter(itertools.chain.from_iterable(adjacency.values()), np.int64, count=src.size)
    if src.size and max(src.max(), dst.max()) >= n:
        raise NetweaveError(f"{directory}: graph of {name} has ids up to {n - 1} but only {features.shape[0]} feature rows")
    masks = [np.zeros(n, dtype=bool) for _ in range(3)]
    masks[0][: y.shape[0]] = True
    masks[1][y.shape[0]: y.shape[0] + 500] = True
    masks[2][test_idx] = True
    return from_edges(src, dst, n, features=sp.csr_array(features, dtype=np.float32), labels=labels,
                      train_mask=masks[0], val_mask=masks[1], test_mask=masks[2], name=name)
