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
import warnings
from pathlib import Path

import numpy as np
import scipy.sparse as sp

from ..errors import NetweaveError
from ..progress import warn
from .graph import Graph, from_edges
from .safe_pickle import safe_load
from .validate import checked_matrix, validate_graph

PARTS = ("x", "y", "tx", "ty", "allx", "ally", "graph", "test.index")


def planetoid_names(directory: Path) -> list[str]:
    """Dataset names with a ``ind.<name>.graph`` file in ``directory``."""
    return sorted(p.name[4:-6] for p in directory.glob("ind.*.graph"))


def _unpickle(path: Path):
    """One Planetoid pickle, loaded with the restricted unpickler (no code runs)."""
    try:
        with open(path, "rb") as f, warnings.catch_warnings():
            warnings.simplefilter("ignore", DeprecationWarning)  # old scipy module paths in the pickles
            return safe_load(f, str(path), "Planetoid pickle")
    except OSError as exc:
        raise NetweaveError(f"{path}: cannot read ({exc.strerror or exc})") from None


def _features(value, path: Path) -> sp.csr_array:
    """``x``/``tx``/``allx``: a 2-D numeric scipy sparse matrix or numpy array, as float32 CSR whose
    arrays are checked (:func:`~.validate.checked_matrix`)."""
    try:
        ok = (sp.issparse(value) or isinstance(value, np.ndarray)) and value.ndim == 2 and value.dtype.kind in "biuf"
    except Exception:  # an unpickled matrix whose attributes are of the wrong kind
        ok = False
    if not ok:
        raise NetweaveError(f"{path}: expected a 2-D feature matrix (scipy sparse or numpy), got {_describe(value)}")
    return checked_matrix(value, str(path), "the feature matrix", "the file is corrupt; re-download it", np.float32)


def _onehot(value, path: Path) -> np.ndarray:
    """``y``/``ty``/``ally``: a 2-D numeric numpy array with one column per class."""
    if not (isinstance(value, np.ndarray) and value.ndim == 2 and value.dtype.kind in "biuf" and value.shape[1] > 0):
        raise NetweaveError(f"{path}: expected a 2-D one-hot label array (numpy), got {_describe(value)}")
    return value


def _adjacency(value, path: Path) -> tuple[np.ndarray, np.ndarray, int]:
    """``graph``: ``{vertex: [neighbours]}`` as ``(src, dst)`` int64 arrays and the number of keys."""
    try:
        if not isinstance(value, dict):
            raise TypeError
        src = np.repeat(np.fromiter(value.keys(), np.int64, count=len(value)),
                        np.fromiter(map(len, value.values()), np.int64, count=len(value)))
        dst = np.fromiter(itertools.chain.from_iterable(value.values()), np.int64, count=src.size)
    except (TypeError, ValueError, OverflowError):
        raise NetweaveError(f"{path}: expected a dict of integer vertex -> list of integer neighbours, "
                            f"got {_describe(value)}") from None
    if src.size and min(src.min(), dst.min()) < 0:
        raise NetweaveError(f"{path}: negative vertex id {min(src.min(), dst.min())}; Planetoid ids start at 0")
    return src, dst, len(value)


def _describe(value) -> str:
    """A short, safe description of an unexpected object: its type and shape."""
    shape = getattr(value, "shape", None)
    return type(value).__name__ + (f" of shape {tuple(shape)}" if isinstance(shape, tuple) else "")


def _check_shapes(name: str, path, **shapes: tuple[int, int]) -> None:
    """Rows of each features file match its labels file; widths and class counts agree."""
    for left, right in (("x", "y"), ("tx", "ty"), ("allx", "ally")):
        if shapes[left][0] != shapes[right][0]:
            raise NetweaveError(f"{path(left)}: {shapes[left][0]} rows but ind.{name}.{right} has "
                                f"{shapes[right][0]}; the Planetoid files do not belong together")
    for parts, what in ((("x", "tx", "allx"), "feature columns"), (("y", "ty", "ally"), "label columns")):
        widths = {p: shapes[p][1] for p in parts}
        if len(set(widths.values())) > 1:
            listed = ", ".join(f"ind.{name}.{p}: {w}" for p, w in widths.items())
            raise NetweaveError(
                f"{path(parts[0]).parent}: {what} differ ({listed}); the Planetoid files do not belong together")


def load_planetoid(directory: str | Path, name: str | None = None) -> Graph:
    """Load ``ind.<name>.*`` from ``directory`` (``name`` may be omitted if only one is there)."""
    directory = Path(directory)
    if not directory.is_dir():
        raise NetweaveError(f"{directory}: not a directory; planetoid:DIR:NAME needs the folder with ind.NAME.* files")
    names = planetoid_names(directory)
    if name is None:
        if not names:
            raise NetweaveError(f"{directory}: holds no Planetoid dataset (ind.NAME.graph, ind.NAME.x, … files); "
                                "point planetoid:DIR at the folder with them")
        if len(names) != 1:
            raise NetweaveError(f"{directory} holds Planetoid datasets {', '.join(names)}; name one as "
                                f"planetoid:{directory}:NAME")
        name = names[0]
    name = name.lower()
    if name not in names:
        raise NetweaveError(f"{directory}: no ind.{name}.graph; available: {', '.join(names) or 'none'}")
    path = lambda part: directory / f"ind.{name}.{part}"  # noqa: E731
    missing = [p for p in PARTS if not path(p).exists()]
    odd = [p for p in PARTS if path(p).exists() and not path(p).is_file()]
    if odd:
        raise NetweaveError(
            f"{path(odd[0])}: not a regular file (a directory, device or pipe); Planetoid parts are files")
    if set(missing) - {"allx"}:
        raise NetweaveError(f"{directory}: Planetoid files missing for {name}: {', '.join('ind.%s.%s' % (name, m) for m in missing)}")
    x, tx = (_features(_unpickle(path(p)), path(p)) for p in ("x", "tx"))
    y, ty, ally = (_onehot(_unpickle(path(p)), path(p)) for p in ("y", "ty", "ally"))
    src, dst, n_graph = _adjacency(_unpickle(path("graph")), path("graph"))
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", UserWarning)  # an empty file: reported below
            test_idx = np.loadtxt(path("test.index"), dtype=np.int64, ndmin=1)
    except (ValueError, OverflowError) as exc:
        raise NetweaveError(f"{path('test.index')}: expected one integer per line ({str(exc)[:80]})") from None
    n_all = ally.shape[0]
    if "allx" in missing:
        if x.shape[0] > n_all:
            raise NetweaveError(f"{path('x')}: {x.shape[0]} rows but ind.{name}.ally has only {n_all}")
        warn(f"{path('allx')} is missing: features of {n_all - x.shape[0]} of {n_all} non-test nodes are filled with zeros")
        allx = sp.vstack([x, sp.csr_array((n_all - x.shape[0], x.shape[1]), dtype=np.float32)])
    else:
        allx = _features(_unpickle(path("allx")), path("allx"))
    _check_shapes(name, path, x=x.shape, tx=tx.shape, allx=allx.shape,
                  y=y.shape, ty=ty.shape, ally=ally.shape)

    if test_idx.size == 0 or int(test_idx.min()) != n_all or len(np.unique(test_idx)) != tx.shape[0]:
        raise NetweaveError(f"{path('test.index')}: test ids must be distinct, one per ind.{name}.tx row, "
                            f"and start right after the {n_all} allx rows")
    lo, hi = n_all, int(test_idx.max())
    if hi >= max(n_graph, n_all + tx.shape[0]):  # bounds the zero rows below by the input's size
        raise NetweaveError(f"{path('test.index')}: test id {hi} is beyond the {n_graph} vertices of ind.{name}.graph")
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
    if src.size and max(src.max(), dst.max()) >= n:
        raise NetweaveError(f"{path('graph')}: vertex ids go up to {max(src.max(), dst.max())} "
                            f"but there are only {n} feature rows; the Planetoid files do not belong together")
    masks = [np.zeros(n, dtype=bool) for _ in range(3)]
    masks[0][: y.shape[0]] = True
    masks[1][y.shape[0]: y.shape[0] + 500] = True
    masks[2][test_idx] = True
    graph = from_edges(src, dst, n, features=sp.csr_array(features, dtype=np.float32), labels=labels,
                       train_mask=masks[0], val_mask=masks[1], test_mask=masks[2], name=name)
    return validate_graph(graph, str(directory), {"features": f"ind.{name}.x/tx/allx"},
                          fix=f"fix ind.{name}.x, tx and allx")
