"""Reading ``.npz`` archives without ``np.load(allow_pickle=True)``.

An ``.npz`` is a zip of ``.npy`` members. Plain (numeric) members are read straight from the zip
into a preallocated array after their header has been checked against the member's size. Object
members, which ``np.save`` writes as a pickle after the header, go through
:func:`~netweave.graph.safe_pickle.safe_load`, so they can hold numpy arrays and scipy sparse
matrices but cannot run code. Every failure (not a zip, truncated or corrupt member, a header
that claims more data than the member holds, a refused pickle) is one
:class:`~netweave.errors.NetweaveError` line naming the file and member.

>>> import numpy as np, tempfile, os
>>> path = os.path.join(tempfile.mkdtemp(), "a.npz"); np.savez(path, x=np.arange(3))
>>> with NpzArchive(path) as z: z["x"].tolist()
[0, 1, 2]
"""

from __future__ import annotations

import math
import zipfile
from pathlib import Path

import numpy as np

from ..errors import NetweaveError
from .memory import check_memory
from .safe_pickle import safe_load

CHUNK = 1 << 24  # bytes read from the zip per call


class NpzArchive:
    """Read-only mapping ``member name → array`` over an ``.npz`` file (use as a context manager).

    With ``allow_pickle=False`` an object member is refused instead of going through the
    restricted unpickler (files netweave writes itself hold numeric arrays only).
    """

    def __init__(self, path: str | Path, allow_pickle: bool = True):
        self.path = Path(path)
        self.allow_pickle = allow_pickle
        try:
            if not self.path.is_file():
                raise NetweaveError(f"{self.path}: no such file" if not self.path.exists()
                                    else f"{self.path}: not a regular file; expected an .npz archive")
            with open(self.path, "rb") as fh:
                if fh.read(4) != b"PK\x03\x04":
                    raise NetweaveError(f"{self.path}: not a readable .npz archive (no zip header)")
            self._zip = zipfile.ZipFile(self.path)
        except NetweaveError:
            raise
        except (zipfile.BadZipFile, OSError, ValueError, EOFError) as exc:
            raise NetweaveError(f"{self.path}: not a readable .npz archive ({type(exc).__name__}: {str(exc)[:80]}); "
                                "the file is truncated or corrupt, re-create or re-download it") from None
        self._members = {info.filename[:-4]: info for info in self._zip.infolist() if info.filename.endswith(".npy")}

    @property
    def files(self) -> list[str]:
        """Member names without ``.npy``, as ``np.load(...).files``."""
        return list(self._members)

    def __contains__(self, key: str) -> bool:
        return key in self._members

    def __getitem__(self, key: str) -> np.ndarray:
        if key not in self._members:
            raise KeyError(key)
        where = f"{self.path}: member {key!r}"
        try:
            return self._read(self._members[key], where)
        except NetweaveError:
            raise
        except Exception as exc:  # zipfile, zlib and numpy's header parser raise many types
            raise NetweaveError(f"{where} is unreadable ({type(exc).__name__}: {str(exc)[:80]}); "
                                "the archive is truncated or corrupt, re-create or re-download it") from None

    def _read(self, info: zipfile.ZipInfo, where: str) -> np.ndarray:
        """One ``.npy`` member: header, then raw data or a restricted pickle."""
        check_memory(where, info.file_size, "the archive is corrupt or too large for this machine")
        with self._zip.open(info) as fh:
            version = np.lib.format.read_magic(fh)
            if version == (1, 0):
                shape, fortran, dtype = np.lib.format.read_array_header_1_0(fh)
            elif version == (2, 0):
                shape, fortran, dtype = np.lib.format.read_array_header_2_0(fh)
            else:
                raise NetweaveError(f"{where}: .npy format version {version} is not supported (1.0 and 2.0 are)")
            if dtype.hasobject and not self.allow_pickle:
                raise NetweaveError(f"{where}: holds Python objects ({dtype}); this file may only hold numeric arrays")
            if dtype.hasobject:
                value = safe_load(fh, where, "pickled .npz member")
                if not isinstance(value, np.ndarray):
                    raise NetweaveError(f"{where}: expected a pickled numpy array, got {type(value).__name__}")
                return value
            count = math.prod(shape)
            nbytes = count * dtype.itemsize
            if nbytes > info.file_size - fh.tell():
                raise NetweaveError(f"{where}: header says {shape} {dtype} ({nbytes} bytes) but the member "
                                    f"holds {info.file_size - fh.tell()}; the archive is corrupt")
            array = np.empty(count, dtype=dtype)
            view = memoryview(array.view(np.uint8)) if nbytes else memoryview(b"")
            pos = 0
            while pos < nbytes:  # chunks of the member, not elements
                got = fh.readinto(view[pos:pos + CHUNK])
                if not got:
                    raise NetweaveError(f"{where}: ends after {pos} of {nbytes} bytes; the archive is truncated")
                pos += got
        return array.reshape(shape[::-1]).transpose() if fortran else array.reshape(shape)

    def close(self) -> None:
        """Close the underlying zip file."""
        self._zip.close()

    def __enter__(self) -> NpzArchive:
        return self

    def __exit__(self, *exc) -> None:
        self.close()
