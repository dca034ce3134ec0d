"""Reading a graph that :meth:`~.graph.Graph.save` wrote: every member checked by :mod:`.validate`
before anything (METIS, scipy, torch) reads it; a file that is not in canonical form is refused,
not repaired (SECURITY.md, "Graph files")."""

from __future__ import annotations

from pathlib import Path

from ..errors import NetweaveError
from .graph import Features, Graph
from .npz_archive import NpzArchive
from .validate import MASKS, SPARSE_MEMBERS, check_csr, check_features, check_labels, check_mask, sparse_features


def load_graph(path: str | Path) -> Graph:
    """Read a graph written by :meth:`Graph.save`, every member checked by :mod:`.validate` (one
    error line naming the member if the file is not such a graph)."""
    where = str(path)
    with NpzArchive(path, allow_pickle=False) as z:
        missing = sorted({"indptr", "indices", "name"} - set(z.files))
        if missing:
            raise NetweaveError(f"{path}: not a graph saved by netweave (no {', '.join(missing)} array)")
        indptr, indices = check_csr(z["indptr"], z["indices"], where)
        n = indptr.shape[0] - 1
        sparse = sorted(f"feat_{k}" for k in SPARSE_MEMBERS if f"feat_{k}" in z)
        if sparse and "features" in z:
            raise NetweaveError(f"{path}: holds both dense 'features' and sparse {', '.join(sparse)}; a saved graph "
                                "has one or the other; re-create it with netweave's Graph.save")
        if sparse and len(sparse) < len(SPARSE_MEMBERS):
            absent = sorted(f"feat_{k}" for k in SPARSE_MEMBERS if f"feat_{k}" not in z)
            raise NetweaveError(f"{path}: sparse features without {', '.join(absent)}; a saved graph holds "
                                "feat_data, feat_indices, feat_indptr and feat_shape together; re-create it with "
                                "netweave's Graph.save")
        features: Features | None = None
        if "features" in z:
            features = check_features(z["features"], n, where)
        elif sparse:
            features = sparse_features(z["feat_data"], z["feat_indices"], z["feat_indptr"], z["feat_shape"], n, where)
        labels = check_labels(z["labels"], n, where) if "labels" in z else None
        masks = {key: check_mask(z[key], n, where, f"member {key!r}") if key in z else None for key in MASKS}
        name = z["name"]
        if name.ndim != 0 or name.dtype.kind != "U":
            raise NetweaveError(f"{path}: member 'name' must be one string, got {name.dtype} of shape {name.shape}; "
                                "re-create the file with netweave's Graph.save")
    return Graph(indptr, indices, features, labels, name=str(name), **masks)
