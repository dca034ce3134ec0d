"""Fast parsing of text edge lists (SNAP ``.txt``/``.txt.gz``, CSV edge files) into id arrays.

The byte buffer is scanned once by a numba kernel: no Python loop over lines. Accepted: ``#`` and
``%`` comment lines, blank lines, CRLF or LF endings, whitespace/tab/comma/semicolon separators,
extra columns after the first two (weights, timestamps: skipped unparsed), and one header line
such as ``src,dst,weight`` before the first edge.
"""

from __future__ import annotations

import gzip
import re
import zlib
from pathlib import Path

import numba
import numpy as np

from ..errors import NetweaveError

_ERR_NOT_INT, _ERR_ONE_ID = 1, 2


@numba.njit(cache=True, nogil=True)
def _is_sep(c):
    return c == 32 or c == 9 or c == 44 or c == 59 or c == 13  # space, tab, ',', ';', '\r'


@numba.njit(cache=True, nogil=True)
def _parse_pairs(buf, start):  # pragma: no cover - compiled
    """Return ``(pairs (k, 2) int64, k, error_code, error_line)`` for ``buf[start:]``."""
    n = buf.shape[0]
    lines = 1
    for i in range(n):
        if buf[i] == 10:
            lines += 1
    out = np.empty((lines, 2), dtype=np.int64)
    k = 0
    line = 0
    i = start
    while i < n:
        line += 1
        while i < n and (buf[i] == 32 or buf[i] == 9):
            i += 1
        if i >= n:
            break
        c = buf[i]
        if c == 10 or c == 13 or c == 35 or c == 37:  # blank, '#', '%': skip the line
            while i < n and buf[i] != 10:
                i += 1
            i += 1
            continue
        col = 0
        while col < 2:
            while i < n and _is_sep(buf[i]):
                i += 1
            if i >= n or buf[i] == 10:
                return out, k, _ERR_ONE_ID, line
            neg = False
            if buf[i] == 45:  # '-'
                neg = True
                i += 1
            value = 0
            digits = 0
            while i < n and 48 <= buf[i] <= 57:
                value = value * 10 + (buf[i] - 48)
                digits += 1
                i += 1
            if digits == 0 or (i < n and not _is_sep(buf[i]) and buf[i] != 10):
                return out, k, _ERR_NOT_INT, line
            out[k, col] = -value if neg else value
            col += 1
        k += 1
        while i < n and buf[i] != 10:  # skip remaining columns
            i += 1
        i += 1
    return out, k, 0, line


_HEADER = re.compile(rb"^[ \t]*[A-Za-z_][\w .\-]*([,;\t ]+[A-Za-z_][\w .\-]*)+[ \t]*\r?$")


def read_bytes(path: Path) -> bytes:
    """Whole file contents, gunzipped when the name ends in ``.gz`` (clear error if corrupt)."""
    try:
        raw = path.read_bytes()
        return gzip.decompress(raw) if path.name.endswith(".gz") else raw
    except FileNotFoundError:
        raise NetweaveError(f"{path}: no such file") from None
    except (EOFError, gzip.BadGzipFile, zlib.error) as exc:
        raise NetweaveError(f"{path}: corrupt or truncated gzip file ({exc}); re-download it") from None


def parse_edge_pairs(data: bytes, where: str = "<edges>") -> tuple[np.ndarray, np.ndarray]:
    """Parse an edge-list text into ``(src, dst)`` int64 arrays (one entry per edge line)."""
    buf = np.frombuffer(data, dtype=np.uint8)
    start = _header_end(data)
    pairs, k, err, line = _parse_pairs(buf, start)
    if err:
        line += data.count(b"\n", 0, start)
        text = data.split(b"\n", line)[line - 1][:80].decode("utf-8", "replace").strip()
        what = "is not an integer vertex id" if err == _ERR_NOT_INT else "has fewer than two ids"
        raise NetweaveError(
            f"{where}, line {line}: {text!r} {what}; an edge list needs 'src dst' integer pairs per line"
        )
    return pairs[:k, 0].copy(), pairs[:k, 1].copy()


def _header_end(data: bytes) -> int:
    """Byte offset after a header line (``src,dst,weight``) that precedes the first edge, else 0."""
    pos = 0
    while pos < len(data):
        end = data.find(b"\n", pos)
        end = len(data) if end < 0 else end
        line = data[pos:end]
        stripped = line.strip()
        if stripped and not stripped.startswith((b"#", b"%")):
            return end + 1 if _HEADER.match(line) else 0
        pos = end + 1
    return 0
