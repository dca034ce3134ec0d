"""The checks every graph passes at load, whatever its format: one error line, never a crash.

A graph reaches C code (METIS, scipy's sparse kernels, torch) as CSR arrays that are indexed
there without bounds checks, so no file may put an id out of range, and no file may make the
reports or the model silently wrong. The rules, each an O(n + E) numpy check (the canonical form
two compiled passes over the edges, with O(n) extra memory: about 1.4 s for 40 M entries):

========================= ===========================================================================
arrays                    rule
========================= ===========================================================================
``indptr``                1-D integers, ``n + 1 >= 1`` entries, starts at 0, never decreases, ends at
                          ``len(indices)``
``indices``               1-D integers, every id in ``[0, n)``
canonical form            each row strictly increasing (sorted, no duplicate edge), no self-loop,
                          symmetric (``v`` in row ``u`` iff ``u`` in row ``v``); refused, not repaired,
                          for a file that claims to be a saved netweave graph (loaders of edge lists
                          build through :func:`~.graph.from_edges`, which symmetrises, merges
                          duplicates and drops self-loops)
``features`` (dense)      2-D, ``n`` rows, numeric, every value a finite float32 (no NaN, no inf, at
                          most 3.4e38 in size)
``features`` (sparse)     ``feat_shape`` two non-negative integers with ``n`` rows; ``feat_indptr``
                          as ``indptr`` above for ``feat_indices``; ``feat_indices`` in
                          ``[0, columns)``; ``feat_data`` as long as ``feat_indices``, numeric, finite
``labels``                1-D, ``n`` entries, integer-valued (a float such as 1.5 is refused, not
                          truncated), ``>= 0``, and below ``n``: there are never more classes than
                          vertices (``num_classes = max + 1``)
masks                     1-D, ``n`` entries, boolean (0/1 integers are taken as booleans; any other
                          value is refused)
========================= ===========================================================================

Every refusal is one :class:`~netweave.errors.NetweaveError` line naming the file (``where``), the
member and the first offending entry, and saying how to make a valid file.
"""

from __future__ import annotations

from collections.abc import Mapping

import numba
import numpy as np
import scipy.sparse as sp

from ..errors import NetweaveError
from .graph import Graph, index_dtype

FLOAT32_MAX = float(np.finfo(np.float32).max)
RESAVE = "re-create the file with netweave's Graph.save"
_SELF_LOOP, _DUPLICATE, _UNSORTED, _ASYMMETRIC = 1, 2, 3, 4
MASKS = ("train_mask", "val_mask", "test_mask")


def _integer_vector(a, where: str, what: str, fix: str = RESAVE) -> np.ndarray:
    a = np.asarray(a)
    if a.ndim != 1 or a.dtype.kind not in "iu":
        raise NetweaveError(f"{where}: {what} must be a 1-D integer array, got {a.dtype} of shape {a.shape}; {fix}")
    return a


def _check_pointers(indptr, length: int, where: str, p_name: str, i_name: str, fix: str) -> np.ndarray:
    """Row pointers: 1-D integers, at least one entry, from 0, never decreasing, ending at ``length``."""
    indptr = _integer_vector(indptr, where, p_name, fix)
    if indptr.shape[0] == 0:
        raise NetweaveError(f"{where}: {p_name} is empty; it needs n + 1 entries (a single 0 for no vertices); {fix}")
    if indptr[0] != 0:
        raise NetweaveError(f"{where}: {p_name} starts at {indptr[0]}, not 0; {fix}")
    down = np.flatnonzero(indptr[1:] < indptr[:-1])
    if down.size:
        v = int(down[0])
        raise NetweaveError(f"{where}: {p_name} decreases at row {v} ({indptr[v]} then {indptr[v + 1]}); "
                            f"row pointers never decrease; {fix}")
    if indptr[-1] != length:
        raise NetweaveError(f"{where}: {p_name} ends at {indptr[-1]} but {i_name} holds {length} entries; "
                            f"they must be equal; {fix}")
    return indptr


def _check_ids(ids: np.ndarray, bound: int, where: str, what: str, kind: str, fix: str) -> None:
    """Every entry of ``ids`` in ``[0, bound)`` (a min and a max; the position only on failure)."""
    if ids.size and (ids.min() < 0 or ids.max() >= bound):
        at = int(np.flatnonzero((ids < 0) | (ids >= bound))[0])
        raise NetweaveError(f"{where}: {what} holds {kind} {ids[at]} at position {at}, outside [0, {bound}); {fix}")


def check_csr(indptr, indices, where: str, canonical: bool = True,
              names: tuple[str, str] = ("member 'indptr'", "member 'indices'"),
              fix: str = RESAVE) -> tuple[np.ndarray, np.ndarray]:
    """Check a CSR adjacency and return it as ``(indptr int64, indices int32|int64)``.

    Always: the shape, the bounds and the dtypes (what C code needs to read it safely). With
    ``canonical`` also the form of a :class:`~.graph.Graph`: sorted rows, no duplicates, no
    self-loops, symmetric. ``names`` says what to call the two arrays in an error line.
    """
    p_name, i_name = names
    indices = _integer_vector(indices, where, i_name, fix)
    indptr = _check_pointers(indptr, indices.shape[0], where, p_name, i_name, fix).astype(np.int64, copy=False)
    n = indptr.shape[0] - 1
    _check_ids(indices, n, where, i_name, "vertex id", fix)
    indices = indices.astype(index_dtype(n), copy=False)
    if canonical and indices.size:
        code, u, v = _first_defect(indptr, indices)
        if code:
            what = {_SELF_LOOP: f"has a self-loop at vertex {u}",
                    _DUPLICATE: f"lists neighbour {v} of vertex {u} twice (a duplicate edge)",
                    _UNSORTED: f"is not sorted in row {u} (neighbour {v} after a larger one)",
                    _ASYMMETRIC: f"is not symmetric: edge {u} -> {v} has no {v} -> {u}"}[code]
            raise NetweaveError(f"{where}: {i_name} {what}; a saved graph is undirected and simple, with sorted "
                                f"rows; {fix} (graph.from_edges builds one from any edge list)")
    return indptr, indices


def check_csr_bounds(indptr, indices, where: str, vertex_weights=None, target_weights=None, num_parts: int = 0) -> None:
    """What C code needs to read a CSR safely (its shape, bounds and integer dtypes, as
    :func:`check_csr` without the canonical form; and the lengths of the optional per-vertex and
    per-part weights), for the arrays handed to METIS: O(n) plus a min and a max over the edges."""
    fix = "the graph was not checked at load (see netweave.graph.validate)"
    indptr, _ = check_csr(indptr, indices, where, canonical=False,
                          names=("the row-pointer array", "the neighbour array"), fix=fix)
    n = indptr.shape[0] - 1
    if vertex_weights is not None and np.shape(vertex_weights) != (n,):
        raise NetweaveError(f"{where}: {np.shape(vertex_weights)} vertex weights for {n} vertices; {fix}")
    if target_weights is not None and np.shape(target_weights) != (num_parts,):
        raise NetweaveError(f"{where}: {np.shape(target_weights)} target part weights for {num_parts} parts; {fix}")


@numba.njit(cache=True, nogil=True)
def _first_defect(indptr, indices):  # pragma: no cover - compiled
    """``(code, u, v)`` of the first entry ``u -> v`` that breaks the canonical form, ``(0, 0, 0)``
    if none; ``indptr``/``indices`` are in bounds (checked before).

    A first pass checks every row (strictly increasing, no self-loop), a second the symmetry: rows
    are visited in increasing order, so the sources ``u`` of the entries ``u -> v`` come in
    increasing order, which is row ``v``'s order when the graph is symmetric; ``cursor[v]`` walks
    row ``v`` as they come. Every entry is matched to a distinct reverse entry, so when all match
    the graph is symmetric. O(E) time, O(n) memory.
    """
    n = indptr.shape[0] - 1
    for u in range(n):
        prev = -1
        for e in range(indptr[u], indptr[u + 1]):
            v = np.int64(indices[e])
            if v <= prev:
                return (_DUPLICATE if v == prev else _UNSORTED), u, v
            if v == u:
                return _SELF_LOOP, u, v
            prev = v
    cursor = indptr[:-1].copy()
    for u in range(n):
        for e in range(indptr[u], indptr[u + 1]):
            v = indices[e]
            c = cursor[v]
            if c >= indptr[v + 1] or indices[c] != u:
                return _ASYMMETRIC, u, np.int64(v)
            cursor[v] = c + 1
    return 0, 0, 0


def _finite(values: np.ndarray, where: str, what: str, locate, fix: str) -> None:
    """Every value a finite float32: min and max (NaN propagates through both), no temporary array."""
    if values.size == 0 or values.dtype.kind in "biu":
        return
    lo, hi = values.min(), values.max()
    if np.isfinite(lo) and np.isfinite(hi) and max(-float(lo), float(hi)) <= FLOAT32_MAX:
        return
    with np.errstate(over="ignore", invalid="ignore"):
        bad = int(np.flatnonzero(~np.isfinite(values.astype(np.float32)).ravel())[0])
    raise NetweaveError(f"{where}: {what} holds {float(values.ravel()[bad]):g} at {locate(bad)}; features must be finite "
                        f"float32 numbers (no NaN, no inf, at most {FLOAT32_MAX:.1e} in size): replace it; {fix}")


def _numeric(a: np.ndarray, where: str, what: str, fix: str) -> None:
    if a.dtype.kind not in "biuf":
        raise NetweaveError(f"{where}: {what} must hold numbers, got {a.dtype}; {fix}")


SPARSE_MEMBERS = {"data": "member 'feat_data'", "indices": "member 'feat_indices'",
                  "indptr": "member 'feat_indptr'", "shape": "member 'feat_shape'"}


def _shape(shape, where: str, what: str, fix: str) -> tuple[int, int]:
    """A matrix shape: two non-negative integers."""
    if isinstance(shape, tuple) and len(shape) == 2 and all(isinstance(d, (int, np.integer)) for d in shape):
        shape = np.array(shape, dtype=np.int64)
    shape = np.asarray(shape)
    if shape.shape != (2,) or shape.dtype.kind not in "iu" or shape.min() < 0:
        shown = shape.tolist() if shape.size <= 4 and shape.dtype.kind in "iufb" else f"of shape {shape.shape}"
        raise NetweaveError(f"{where}: {what} must be two non-negative integers (rows, columns), got {shape.dtype} "
                            f"{shown}; {fix}")
    return int(shape[0]), int(shape[1])


def csr_from_arrays(data, indices, indptr, shape, where: str, names: Mapping[str, str], fix: str,
                    columns_major: bool = False) -> sp.csr_array:
    """A ``csr_array`` from the arrays of a CSR (or, with ``columns_major``, CSC) matrix, after
    checking them: pointers as :func:`check_csr`'s, ids in range, as many values as ids, numeric
    values. ``names`` says what to call ``data``, ``indices``, ``indptr`` and ``shape``."""
    rows, cols = _shape(shape, where, names["shape"], fix)
    major, minor = (cols, rows) if columns_major else (rows, cols)
    if np.ndim(indptr) != 1 or np.shape(indptr)[0] != major + 1:
        raise NetweaveError(f"{where}: {names['indptr']} has shape {np.shape(indptr)} for {major} "
                            f"{'columns' if columns_major else 'rows'}; expected ({major + 1},); {fix}")
    data = np.asarray(data)
    if data.ndim != 1:
        raise NetweaveError(f"{where}: {names['data']} must be 1-D, got shape {data.shape}; {fix}")
    _numeric(data, where, names["data"], fix)
    indices = _integer_vector(indices, where, names["indices"], fix)
    if data.shape[0] != indices.shape[0]:
        raise NetweaveError(f"{where}: {names['data']} holds {data.shape[0]} values but {names['indices']} "
                            f"{indices.shape[0]} ids; they must be equal; {fix}")
    indptr = _check_pointers(indptr, indices.shape[0], where, names["indptr"], names["indices"], fix)
    _check_ids(indices, minor, where, names["indices"], "row" if columns_major else "column", fix)
    if columns_major:
        return sp.csc_array((data, indices, indptr), shape=(rows, cols)).tocsr()
    return sp.csr_array((data, indices, indptr), shape=(rows, cols))


def checked_matrix(value, where: str, what: str, fix: str, dtype=None) -> sp.csr_array:
    """A 2-D numeric matrix from a pickle (numpy array or scipy CSR/CSC/COO/LIL matrix) as a
    ``csr_array``, its internal arrays checked before any scipy routine reads them: an unpickled
    scipy matrix carries whatever arrays the file put in it, and scipy's C code indexes with them
    unchecked."""
    names = {k: f"{what} ({k})" for k in ("data", "indices", "indptr", "shape", "row", "col")}
    try:
        if isinstance(value, np.ndarray):
            if value.ndim != 2:
                raise NetweaveError(f"{where}: {what} must be a 2-D matrix, got shape {value.shape}; {fix}")
            _numeric(value, where, what, fix)
            out = sp.csr_array(value)
        elif isinstance(value, (sp.csr_matrix, sp.csr_array, sp.csc_matrix, sp.csc_array)):
            out = csr_from_arrays(value.data, value.indices, value.indptr, value._shape, where, names, fix,
                                  columns_major=value.format == "csc")
        elif isinstance(value, (sp.coo_matrix, sp.coo_array)):
            rows, cols = _shape(value._shape, where, names["shape"], fix)
            coords = value.__dict__.get("coords") or (value.__dict__.get("row"), value.__dict__.get("col"))
            row, col = (_integer_vector(c, where, names[k], fix) for c, k in zip(coords, ("row", "col")))
            data = np.asarray(value.data)
            if not (data.ndim == 1 and data.shape[0] == row.shape[0] == col.shape[0]) or len(coords) != 2:
                raise NetweaveError(f"{where}: {what} holds coordinates and values of different lengths; {fix}")
            _numeric(data, where, names["data"], fix)
            _check_ids(row, rows, where, names["row"], "row", fix)
            _check_ids(col, cols, where, names["col"], "column", fix)
            out = sp.coo_array((data, (row, col)), shape=(rows, cols)).tocsr()
        elif isinstance(value, (sp.lil_matrix, sp.lil_array)):
            _shape(value._shape, where, names["shape"], fix)
            csr = value.tocsr()  # copies the row lists into arrays; indexes nothing with them
            out = csr_from_arrays(csr.data, csr.indices, csr.indptr, csr.shape, where, names, fix)
        else:
            shape = getattr(value, "shape", None)
            raise NetweaveError(f"{where}: {what} must be a 2-D matrix (numpy or scipy sparse), got "
                                f"{type(value).__name__}" + (f" of shape {shape}" if isinstance(shape, tuple) else "")
                                + f"; {fix}")
    except NetweaveError:
        raise
    except Exception as exc:  # attributes of the wrong kind in an unpickled matrix
        raise NetweaveError(f"{where}: {what} is not a well-formed matrix ({type(exc).__name__}: {str(exc)[:80]}); "
                            f"{fix}") from None
    return out if dtype is None else out.astype(dtype)


def check_features(features, n: int, where: str, what: str = "member 'features'", fix: str = RESAVE):
    """Dense ``(n, F)`` or scipy sparse features with finite values, returned as they are (a sparse
    matrix's own arrays are checked as :func:`csr_from_arrays` does)."""
    if sp.issparse(features):
        f = features if features.format == "csr" else checked_matrix(features, where, what, fix)
        sparse_features(f.data, f.indices, f.indptr, f.shape, n, where, {k: what for k in SPARSE_MEMBERS}, fix)
        return features
    features = np.asarray(features)
    if features.ndim != 2 or features.shape[0] != n:
        raise NetweaveError(f"{where}: {what} has shape {features.shape}; expected ({n}, F), one row per vertex; {fix}")
    _numeric(features, where, what, fix)
    width = max(features.shape[1], 1)
    _finite(features, where, what, lambda i: f"vertex {i // width}, column {i % width}", fix)
    return features


def sparse_features(data, indices, indptr, shape, n: int, where: str, names: Mapping[str, str] = SPARSE_MEMBERS,
                    fix: str = RESAVE) -> sp.csr_array:
    """``(n, F)`` sparse features as a ``csr_array`` from their four arrays, checked as
    :func:`csr_from_arrays` does, with ``n`` rows and finite values."""
    rows, _ = _shape(shape, where, names["shape"], fix)
    if rows != n:
        raise NetweaveError(f"{where}: {names['shape']} says {rows} rows for {n} vertices; one row per vertex; {fix}")
    f = csr_from_arrays(data, indices, indptr, shape, where, names, fix)
    _finite(f.data, where, names["data"], lambda i: f"position {i}", fix)
    return f


def whole_numbers(values: np.ndarray, where: str, what: str, fix: str = RESAVE) -> None:
    """Class ids stored as floats must be whole numbers: 1.5 or NaN is refused, not truncated."""
    if values.dtype.kind != "f":
        return
    whole = np.isfinite(values) & (values == np.floor(values))
    if not whole.all():
        at = int(np.flatnonzero(~whole)[0])
        raise NetweaveError(f"{where}: {what} holds {float(values[at]):g} at vertex {at}; class ids are whole "
                            f"numbers 0, 1, 2, … (it would be truncated); {fix}")


def check_labels(labels, n: int, where: str, what: str = "member 'labels'", fix: str = RESAVE) -> np.ndarray:
    """``(n,)`` int64 class ids: integer-valued, ``>= 0``, below ``n`` (at most one class per vertex)."""
    labels = np.asarray(labels)
    if labels.ndim != 1 or labels.shape[0] != n:
        raise NetweaveError(f"{where}: {what} has shape {labels.shape}; expected ({n},), one class id per vertex; {fix}")
    if labels.dtype.kind not in "biuf":
        raise NetweaveError(f"{where}: {what} must hold integer class ids, got {labels.dtype}; {fix}")
    if labels.size == 0:
        return labels.astype(np.int64)
    whole_numbers(labels, where, what, fix)
    lo, hi = labels.min(), labels.max()
    if lo < 0:
        at = int(np.argmin(labels))
        raise NetweaveError(f"{where}: {what} holds {labels[at]} at vertex {at}; class ids are 0, 1, 2, …; {fix}")
    if hi >= n:
        at = int(np.argmax(labels))
        raise NetweaveError(f"{where}: {what} holds class {labels[at]:.0f} at vertex {at}, but the graph has {n} "
                            f"vertices and so at most {n} classes (ids 0 to {n - 1}); number classes densely "
                            f"from 0; {fix}")
    return labels.astype(np.int64, copy=False)


def check_mask(mask, n: int, where: str, what: str, fix: str = RESAVE) -> np.ndarray:
    """``(n,)`` bool: booleans as they are, 0/1 integers converted; anything else refused."""
    mask = np.asarray(mask)
    if mask.ndim != 1 or mask.shape[0] != n:
        raise NetweaveError(f"{where}: {what} has shape {mask.shape}; expected ({n},), one flag per vertex; {fix}")
    if mask.dtype.kind == "b":
        return mask
    if mask.dtype.kind in "iu":
        bad = np.flatnonzero((mask != 0) & (mask != 1))
        if bad.size == 0:
            return mask.astype(bool)
        raise NetweaveError(f"{where}: {what} holds {mask[bad[0]]} at vertex {bad[0]}; a mask is boolean "
                            f"(True/False, or 0/1); {fix}")
    raise NetweaveError(f"{where}: {what} must be boolean (True/False, or 0/1 integers), got {mask.dtype}; {fix}")


def validate_graph(graph: Graph, where: str, names: Mapping[str, str] | None = None, canonical: bool = True,
                   fix: str = RESAVE) -> Graph:
    """``graph`` after every rule of this module (labels as int64, masks as bool).

    ``names`` maps an attribute (``features``, ``labels``, ``train_mask``, …) to what the error
    line calls it (default ``member '<attribute>'``, the member of a saved graph); ``canonical``
    False keeps the O(n) and min/max checks of the CSR and skips its passes over the edges (for
    graphs a generator has just built in canonical form).
    """
    what = lambda key: (names or {}).get(key, f"member {key!r}")  # noqa: E731
    indptr, indices = check_csr(graph.indptr, graph.indices, where, canonical, (what("indptr"), what("indices")), fix)
    n = indptr.shape[0] - 1
    changes = {"indptr": indptr, "indices": indices}
    if graph.features is not None:
        check_features(graph.features, n, where, what("features"), fix)
    if graph.labels is not None:
        changes["labels"] = check_labels(graph.labels, n, where, what("labels"), fix)
    for key in MASKS:
        if getattr(graph, key) is not None:
            changes[key] = check_mask(getattr(graph, key), n, where, what(key), fix)
    if all(changes[k] is getattr(graph, k) for k in changes):
        return graph
    return graph.with_(**changes)
