"""Loader for MUSAE directories (Rozemberczki et al.): ``edges.csv``, ``features.json``, ``target.csv``.

* ``edges.csv``: a header, then ``u,v`` pairs with 0-based ids.
* ``features.json``: ``{"node": [feature ids, ...]}``, sparse binary features (repeated ids count
  once). Missing file: the graph has no features and a warning says so.
* ``target.csv``: the node id is column ``new_id`` when present (Twitch), else ``id``. The label is
  the first of ``page_type``, ``ml_target``, ``mature``, ``target`` present. String or boolean
  labels become class ids; a continuous ``target`` (Wikipedia traffic of chameleon/squirrel) is
  binned into 5 equal-frequency classes, as Geom-GCN does.
"""

from __future__ import annotations

import csv
import itertools
import json
from pathlib import Path

import numpy as np
import scipy.sparse as sp

from ..errors import NetweaveError
from ..progress import warn
from .edgelist import read_distinct_edges
from .graph import Graph, from_edges
from .splits import per_class_split
from .validate import validate_graph

LABEL_COLUMNS = ("page_type", "ml_target", "mature", "target")
NUM_BINS = 5


def _features(path: Path, n: int) -> sp.csr_array | None:
    if not path.exists():
        warn(f"{path} is missing: the graph has no node features")
        return None
    try:
        table = json.loads(path.read_text())
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise NetweaveError(f"{path}: not valid JSON ({exc})") from None
    try:
        rows = np.repeat(np.fromiter(map(int, table.keys()), np.int64),
                         np.fromiter(map(len, table.values()), np.int64))
        cols = np.fromiter(itertools.chain.from_iterable(table.values()), np.int64, count=rows.size)
    except (TypeError, ValueError, AttributeError):
        raise NetweaveError(f"{path}: expected {{\"node\": [feature ids, ...]}} with integer ids") from None
    if rows.size and rows.max() >= n:
        raise NetweaveError(f"{path}: node {rows.max()} has features but the graph has {n} nodes")
    dim = int(cols.max()) + 1 if cols.size else 0
    f = sp.csr_array((np.ones(rows.size, np.float32), (rows, cols)), shape=(n, dim))
    f.sum_duplicates()
    f.data[:] = 1.0
    return f


def _labels(path: Path, n: int) -> np.ndarray | None:
    if not path.exists():
        warn(f"{path} is missing: the graph has no labels")
        return None
    with open(path, newline="") as fh:
        rows = list(csv.reader(fh))
    header, body = rows[0], rows[1:]
    id_col = "new_id" if "new_id" in header else "id"
    label_col = next((c for c in LABEL_COLUMNS if c in header), None)
    if id_col not in header or label_col is None:
        raise NetweaveError(f"{path}: needs an 'id' (or 'new_id') column and one of {', '.join(LABEL_COLUMNS)}; found {header}")
    table = np.array(body, dtype=object)
    try:
        ids = table[:, header.index(id_col)].astype(np.int64)
    except ValueError:
        raise NetweaveError(f"{path}: column {id_col!r} holds non-integer ids") from None
    raw = table[:, header.index(label_col)].astype(str)
    if ids.min() < 0 or ids.max() >= n:
        raise NetweaveError(f"{path}: node id {ids.max()} outside the graph's {n} nodes")
    try:
        values = raw.astype(np.float64)
        continuous = label_col == "target" and np.unique(values).size > 20
    except ValueError:
        continuous = False
    if continuous:  # equal-frequency bins (Geom-GCN's 5 traffic classes)
        edges = np.quantile(values, np.linspace(0, 1, NUM_BINS + 1)[1:-1])
        classes = np.searchsorted(edges, values, side="right")
    else:
        classes = np.unique(raw, return_inverse=True)[1]
    labels = np.zeros(n, dtype=np.int64)
    labels[ids] = classes
    return labels


def load_musae(directory: str | Path) -> Graph:
    """Load a MUSAE dataset directory."""
    directory = Path(directory)
    edges = directory / "edges.csv"
    if not directory.exists():
        raise NetweaveError(f"{directory}: no such directory; musae:DIR needs the folder with edges.csv, "
                            "features.json and target.csv")
    if not directory.is_dir():
        raise NetweaveError(f"{directory}: not a directory; musae:DIR needs the folder with edges.csv, "
                            "features.json and target.csv, not a file in it")
    if not edges.is_file():
        raise NetweaveError(f"{directory}: no edges.csv; a MUSAE directory holds edges.csv, features.json and target.csv")
    src, dst = read_distinct_edges([edges])
    n = int(max(src.max(), dst.max())) + 1 if src.size else 0
    if src.size and min(src.min(), dst.min()) < 0:
        raise NetweaveError(f"{edges}: negative node id; MUSAE ids are 0-based")
    target = directory / "target.csv"
    if target.exists():  # some nodes may have no edges: the target table knows them all
        with open(target) as fh:
            n = max(n, sum(1 for _ in fh) - 1)
    features = _features(directory / "features.json", n)
    labels = _labels(target, n)
    masks = per_class_split(labels) if labels is not None else (None, None, None)
    graph = from_edges(src, dst, n, features=features, labels=labels, train_mask=masks[0],
                       val_mask=masks[1], test_mask=masks[2], name=directory.name)
    return validate_graph(graph, str(directory), {"features": "features.json", "labels": "target.csv"},
                          fix="fix the MUSAE files")
