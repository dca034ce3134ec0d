"""A restricted unpickler for dataset files: numpy arrays, scipy sparse matrices, lists and dicts.

Planetoid's ``ind.*`` files and the object members of gnn-benchmark ``.npz`` files are pickles.
``pickle.load`` runs whatever callable a file names, so a crafted file executes code. Here
:meth:`SafeUnpickler.find_class` admits only the globals these formats hold (numpy's array and
dtype reconstruction, scipy's sparse matrix classes under their old and new module paths,
``collections.defaultdict``, the plain builtin containers and numbers, and the helpers older
protocols route them through: ``copyreg._reconstructor`` and a latin-1-only ``_codecs.encode``)
and refuses everything else with one :class:`~netweave.errors.NetweaveError` line that names the
file and the global. Calls that could allocate without bound (``ndarray(shape)``, ``bytes(n)``)
are refused too.

>>> import io, pickle
>>> safe_load(io.BytesIO(pickle.dumps({0: [1, 2]})), "ind.toy.graph")
{0: [1, 2]}
"""

from __future__ import annotations

import _compat_pickle
import builtins
import collections
import copyreg
import math
import pickle
from typing import IO

import numpy as np
import scipy.sparse as sp

from ..errors import NetweaveError
from .memory import available_bytes


def _latin1_encode(text, encoding="utf-8", errors="strict"):
    """``_codecs.encode`` as protocol-2 pickles use it for ``bytes`` (latin-1 only)."""
    if str(encoding).lower().replace("_", "-") not in ("latin1", "latin-1"):
        raise pickle.UnpicklingError(f"_codecs.encode with encoding {encoding!r} is not allowed")
    return text.encode("latin-1", errors)


_CORE = np._core.multiarray if hasattr(np, "_core") else np.core.multiarray
_NUMPY_RECONSTRUCT = _CORE._reconstruct


class _NdarrayType:
    """Stands for ``numpy.ndarray`` in a pickle: the subtype :func:`_reconstruct` builds, never called.

    numpy pickles an array as ``_reconstruct(ndarray, (0,), dtype)`` and then fills it from bytes in
    the stream (``BUILD``), so its size is bounded by the file; calling ``ndarray(shape)`` directly
    could allocate any size and is refused.
    """

    def __call__(self, *args, **kwargs):
        raise pickle.UnpicklingError("calling numpy.ndarray is not allowed")


NDARRAY = _NdarrayType()


def _reconstruct(subtype, shape, dtype):
    """numpy's ``_reconstruct`` for plain arrays, refusing shapes that would not fit in memory."""
    if subtype is not NDARRAY:
        raise pickle.UnpicklingError(f"_reconstruct of {type(subtype).__name__} is not allowed")
    count = math.prod(shape) if isinstance(shape, tuple) else int(shape)
    nbytes = count * np.dtype(dtype).itemsize
    if nbytes > 2**26 and nbytes > available_bytes():  # numpy's own pickles always say shape (0,)
        raise MemoryError
    return _NUMPY_RECONSTRUCT(np.ndarray, shape, dtype)


def _bytes(*args):
    """``bytes`` as protocol 2 pickles ``b""`` (``bytes()``); ``bytes(n)`` would allocate n bytes."""
    if args and isinstance(args[0], int):
        raise pickle.UnpicklingError("bytes(int) is not allowed")
    return bytes(*args)


def _allowed() -> dict[tuple[str, str], object]:
    """``(module, name)`` → object for every global a dataset pickle may name."""
    table: dict[tuple[str, str], object] = {}
    for module in ("numpy.core.multiarray", "numpy._core.multiarray"):
        table[(module, "_reconstruct")] = _reconstruct
        table[(module, "scalar")] = _CORE.scalar
    numeric = np._core.numeric if hasattr(np, "_core") else np.core.numeric
    for module in ("numpy.core.numeric", "numpy._core.numeric"):  # protocol 5 arrays
        table[(module, "_frombuffer")] = numeric._frombuffer
    table[("numpy", "ndarray")] = NDARRAY
    table[("numpy", "dtype")] = np.dtype
    for kind in ("csr", "csc", "coo", "lil"):  # scipy < 1.8 wrote scipy.sparse.csr, newer ._csr
        for cls in (f"{kind}_matrix", f"{kind}_array"):
            if hasattr(sp, cls):
                for module in ("scipy.sparse", f"scipy.sparse.{kind}", f"scipy.sparse._{kind}"):
                    table[(module, cls)] = getattr(sp, cls)
    table[("collections", "defaultdict")] = collections.defaultdict
    table[("collections", "OrderedDict")] = collections.OrderedDict
    table[("_codecs", "encode")] = _latin1_encode
    for module in ("copyreg", "copy_reg"):  # protocols 0 and 1 rebuild objects through it, by allowed classes only
        table[(module, "_reconstructor")] = copyreg._reconstructor
    for module in ("builtins", "__builtin__"):  # Python 2 pickles say __builtin__
        for name in ("list", "dict", "set", "frozenset", "tuple", "int", "float", "complex", "bool",
                     "str", "object"):
            table[(module, name)] = getattr(builtins, name)
        table[(module, "bytes")] = _bytes
        table[(module, "unicode")] = str
        table[(module, "long")] = int
    return table


ALLOWED = _allowed()


class SafeUnpickler(pickle.Unpickler):
    """``pickle.Unpickler`` whose ``find_class`` admits only :data:`ALLOWED` (no other code runs)."""

    def find_class(self, module: str, name: str):
        try:
            return ALLOWED[(module, name)]
        except KeyError:
            module = _compat_pickle.IMPORT_MAPPING.get(module, module)  # name it as Python 3 does
            raise RefusedGlobal(f"{module}.{name}") from None


class RefusedGlobal(pickle.UnpicklingError):
    """A pickle named a global outside :data:`ALLOWED`; ``args[0]`` is ``module.name``."""


def safe_load(fh: IO[bytes], where: str, what: str = "pickle"):
    """Unpickle one object from ``fh`` with :class:`SafeUnpickler`.

    ``where`` names the file and ``what`` its kind (``Planetoid pickle``) in the error line.

    Python 2 pickles (Planetoid) decode their byte strings as latin-1, as ``gcn/utils.py`` does.
    """
    try:
        return SafeUnpickler(fh, encoding="latin1").load()
    except RefusedGlobal as exc:
        raise NetweaveError(
            f"{where}: refused to load {exc.args[0]} from this {what}; dataset pickles may only hold "
            "numpy arrays, scipy sparse matrices, lists and dicts (the file is corrupt or not a dataset)"
        ) from None
    except MemoryError:
        raise NetweaveError(
            f"{where}: this {what} asks for more memory than is available; the file is corrupt") from None
    except Exception as exc:  # pickle, numpy and zlib raise many types on corrupt input
        detail = str(exc)[:120]
        raise NetweaveError(f"{where}: not a readable {what} ({type(exc).__name__}: {detail}); "
                            "the file is corrupt or truncated, re-download it") from None
