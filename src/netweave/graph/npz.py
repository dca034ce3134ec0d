"""Loader for gnn-benchmark ``.npz`` graphs (Shchur et al. 2018: Amazon, Coauthor, ...).

Two layouts are accepted: pickled scipy matrices under ``adj_matrix`` / ``node_attr`` /
``node_label`` (the copies in ``../shared/data``; read by :class:`.NpzArchive` through the
restricted unpickler, which admits numpy and scipy types only), and the flat layout ``adj_data,
adj_indices, adj_indptr, adj_shape`` (+ ``attr_*`` or ``attr_matrix``, ``labels``). Asymmetric
adjacency is symmetrised. Labels are remapped to ``0..C-1`` (Flickr and BlogCatalog number theirs
from 1). With no split in the file, the
Shchur et al. per-class split (20 train / 30 val per class, seed 0) is used.
"""

from __future__ import annotations

import warnings
from pathlib import Path

import numpy as np
import scipy.sparse as sp

from ..errors import NetweaveError
from .graph import Graph, from_edges
from .saved import load_graph
from .npz_archive import NpzArchive
from .splits import per_class_split
from .validate import checked_matrix, csr_from_arrays, validate_graph, whole_numbers

FIX = "the file is corrupt or not in the gnn-benchmark format; re-download or re-create it"


def _csr(z, prefix: str, where: Path) -> sp.csr_array | None:
    """The flat layout's ``PREFIX_data/_indices/_indptr/_shape`` members as a checked ``csr_array``."""
    keys = {k: f"{prefix}_{k}" for k in ("data", "indices", "indptr", "shape")}
    if all(k in z for k in keys.values()):
        return csr_from_arrays(*(z[keys[k]] for k in ("data", "indices", "indptr", "shape")), str(where),
                               {k: f"member {v!r}" for k, v in keys.items()}, FIX)
    return None


def _sparse(value, path: Path, key: str, dtype=None) -> sp.csr_array:
    """A member that must hold a 2-D scipy sparse matrix (or numeric array), as CSR whose arrays
    are checked (:func:`~.validate.checked_matrix`)."""
    try:
        ok = (sp.issparse(value) or isinstance(value, np.ndarray)) and value.ndim == 2 and value.dtype.kind in "biuf"
    except Exception:  # an unpickled matrix whose attributes are of the wrong kind
        ok = False
    if not ok:
        shape = getattr(value, "shape", None) if isinstance(value, np.ndarray) else None
        raise NetweaveError(f"{path}: member {key!r} must be a 2-D sparse matrix, got {type(value).__name__}"
                            + (f" of shape {shape}" if isinstance(shape, tuple) else ""))
    return checked_matrix(value, str(path), f"member {key!r}", FIX, dtype)


def _obj(z, key: str):
    value = z[key]
    return value.item() if value.dtype == object and value.shape == () else value


def load_npz(path: str | Path) -> Graph:
    """Load a gnn-benchmark ``.npz`` file (object members through the restricted unpickler)."""
    path = Path(path)
    with NpzArchive(path) as z, warnings.catch_warnings():
        keys = set(z.files)
        warnings.simplefilter("ignore", DeprecationWarning)  # old scipy module paths in the pickles
        if {"indptr", "indices"} <= keys:  # a graph written by Graph.save
            return load_graph(path)
        try:
            if "adj_matrix" in keys:
                adj = _sparse(_obj(z, "adj_matrix"), path, "adj_matrix")
                attr = _sparse(_obj(z, "node_attr"), path, "node_attr", np.float32) if "node_attr" in keys else None
                attr_key, label_key = "node_attr", "node_label"
                labels = np.asarray(_obj(z, "node_label")) if "node_label" in keys else None
            elif "adj_data" in keys:
                adj = _csr(z, "adj", path)
                attr = _csr(z, "attr", path)
                attr_key, label_key = "attr_*", "labels"
                if attr is None and "attr_matrix" in keys:
                    attr = np.asarray(z["attr_matrix"], dtype=np.float32)
                    attr_key = "attr_matrix"
                labels = np.asarray(z["labels"]) if "labels" in keys else None
            else:
                raise NetweaveError(
                    f"{path}: no adjacency in this .npz (keys: {', '.join(sorted(keys))}); expected "
                    "'adj_matrix' or 'adj_data/adj_indices/adj_indptr/adj_shape' (gnn-benchmark format)")
        except NetweaveError:
            raise
        except Exception as exc:  # wrong shapes or dtypes inside well-formed members
            raise NetweaveError(
                f"{path}: malformed gnn-benchmark arrays ({type(exc).__name__}: {str(exc)[:80]})") from None
    if adj is None or adj.ndim != 2 or adj.shape[0] != adj.shape[1]:
        raise NetweaveError(f"{path}: adjacency must be a square sparse matrix")
    n = adj.shape[0]
    if attr is not None and (attr.ndim != 2 or attr.shape[0] != n):
        raise NetweaveError(f"{path}: feature matrix of shape {attr.shape} for {n} nodes; expected {n} rows")
    if attr is not None and sp.issparse(attr):
        attr = sp.csr_array(attr, dtype=np.float32)
    masks = (None, None, None)
    if labels is not None:
        if labels.ndim == 2:  # one-hot
            labels = labels.argmax(1)
        if labels.ndim != 1 or labels.shape[0] != n or labels.dtype.kind not in "biuf":
            raise NetweaveError(f"{path}: {labels.shape[0] if labels.ndim else 0} labels for {n} nodes; "
                                "expected one integer label per node")
        whole_numbers(labels, str(path), f"member {label_key!r}", FIX)
        labels = np.unique(labels, return_inverse=True)[1].astype(np.int64)
        masks = per_class_split(labels)
    coo = adj.tocoo()
    graph = from_edges(coo.row, coo.col, n, features=attr, labels=labels, train_mask=masks[0],
                       val_mask=masks[1], test_mask=masks[2], name=path.stem)
    return validate_graph(graph, str(path), {"features": f"member {attr_key!r}"}, fix=FIX)
