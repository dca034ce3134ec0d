"""Loader for gnn-benchmark ``.npz`` graphs (Shchur et al. 2018: Amazon, Coauthor, ...).

Two layouts are accepted: pickled scipy matrices under ``adj_matrix`` / ``node_attr`` /
``node_label`` (the copies in ``../shared/data``; loading them needs ``allow_pickle``, so only load
files you trust), and the flat layout ``adj_data, adj_indices, adj_indptr, adj_shape`` (+ ``attr_*``
or ``attr_matrix``, ``labels``). Asymmetric adjacency is symmetrised. Labels are remapped to
``0..C-1`` (Flickr and BlogCatalog number theirs from 1). With no split in the file, the
Shchur et al. per-class split (20 train / 30 val per class, seed 0) is used.
"""

from __future__ import annotations

import warnings
import zipfile
from pathlib import Path

import numpy as np
import scipy.sparse as sp

from ..errors import NetweaveError
from .graph import Graph, from_edges, load_graph
from .splits import per_class_split


def _csr(z, prefix: str, where: Path) -> sp.csr_array | None:
    keys = [f"{prefix}_{k}" for k in ("data", "indices", "indptr", "shape")]
    if all(k in z for k in keys):
        return sp.csr_array(tuple(z[k] for k in keys[:3]), shape=tuple(z[keys[3]]))
    return None


def _obj(z, key: str):
    value = z[key]
    return value.item() if value.dtype == object and value.shape == () else value


def load_npz(path: str | Path) -> Graph:
    """Load a gnn-benchmark ``.npz`` file."""
    path = Path(path)
    try:
        with open(path, "rb") as fh:
            if fh.read(4) != b"PK\x03\x04":  # np.load with allow_pickle would unpickle other files
                raise NetweaveError(f"{path}: not a readable .npz archive (no zip header)")
        z = np.load(path, allow_pickle=True)
    except FileNotFoundError:
        raise NetweaveError(f"{path}: no such file") from None
    except (zipfile.BadZipFile, ValueError, OSError, EOFError) as exc:
        raise NetweaveError(f"{path}: not a readable .npz archive ({exc})") from None
    with z, warnings.catch_warnings():
        keys = set(z.files)
        warnings.simplefilter("ignore", DeprecationWarning)  # old scipy module paths in the pickles
        if {"indptr", "indices"} <= keys:  # a graph written by Graph.save
            return load_graph(path)
        try:
            if "adj_matrix" in keys:
                adj = sp.csr_array(_obj(z, "adj_matrix"))
                attr = sp.csr_array(_obj(z, "node_attr"), dtype=np.float32) if "node_attr" in keys else None
                labels = np.asarray(_obj(z, "node_label")) if "node_label" in keys else None
            elif "adj_data" in keys:
                adj = _csr(z, "adj", path)
                attr = _csr(z, "attr", path)
                if attr is None and "attr_matrix" in keys:
                    attr = np.asarray(z["attr_matrix"], dtype=np.float32)
                labels = np.asarray(z["labels"]) if "labels" in keys else None
            else:
                raise NetweaveError(
                    f"{path}: no adjacency in this .npz (keys: {', '.join(sorted(keys))}); expected "
                    "'adj_matrix' or 'adj_data/adj_indices/adj_indptr/adj_shape' (gnn-benchmark format)")
        except NetweaveError:
            raise
        except Exception as exc:  # corrupt members, wrong shapes, bad pickles
            raise NetweaveError(f"{path}: malformed gnn-benchmark arrays ({type(exc).__name__}: {exc})") from None
    if adj is None or adj.shape[0] != adj.shape[1]:
        raise NetweaveError(f"{path}: adjacency must be a square sparse matrix")
    n = adj.shape[0]
    if attr is not None and attr.shape[0] != n:
        raise NetweaveError(f"{path}: {attr.shape[0]} feature rows for {n} nodes")
    if attr is not None and sp.issparse(attr):
        attr = sp.csr_array(attr, dtype=np.float32)
    masks = (None, None, None)
    if labels is not None:
        if labels.ndim == 2:  # one-hot
            labels = labels.argmax(1)
        if labels.shape[0] != n:
            raise NetweaveError(f"{path}: {labels.shape[0]} labels for {n} nodes")
        labels = np.unique(labels, return_inverse=True)[1].astype(np.int64)
        masks = per_class_split(labels)
    coo = adj.tocoo()
    return from_edges(coo.row, coo.col, n, features=attr, labels=labels, train_mask=masks[0],
                      val_mask=masks[1], test_mask=masks[2], name=path.stem)
