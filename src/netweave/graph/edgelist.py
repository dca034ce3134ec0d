"""Fast, bounded parsing of text edge lists (SNAP ``.txt``/``.txt.gz``, CSV edge files) into id arrays.

A file is streamed (gunzipped on the fly when its name ends in ``.gz``) in blocks of
:data:`CHUNK` bytes cut at the last newline, and each block is scanned once by a numba kernel: no
Python loop over lines, and memory bounded by the block size plus the parsed ids, whatever the
file holds (a ``.gz`` of gigabytes of zeros fails in its first block). Accepted: ``#`` and ``%``
comment lines, blank lines, CRLF or LF endings, whitespace/tab/comma/semicolon separators, extra
columns after the first two (weights, timestamps: skipped unparsed), and one header line such as
``src,dst,weight`` before the first edge. Ids are signed 64-bit integers. The first bad line
stops parsing with its number and its text, escaped and shortened, in one error line.

The graph loaders read with :func:`read_distinct_edges`, which keeps only the distinct undirected
edges as it streams (:class:`DistinctEdges`), so their memory is bounded by the edges of the graph,
not by the lines of the file: a repeated line costs nothing.
"""

from __future__ import annotations

import re
import zlib
from pathlib import Path
from typing import IO, Iterable, Iterator

import numba
import numpy as np

from ..errors import NetweaveError
from .graph import sorted_unique

CHUNK = 1 << 23  # bytes of text parsed per kernel call
MAX_LINE = 1 << 20  # a longer line is not an edge line
_IN_CHUNK = 1 << 20  # compressed bytes read per call
_ERR_NOT_INT, _ERR_ONE_ID, _ERR_RANGE = 1, 2, 3
_MAX_DIV10 = (2**63 - 1) // 10  # 922337203685477580: value * 10 + digit overflows beyond it


@numba.njit(cache=True, nogil=True)
def _is_sep(c):
    return c == 32 or c == 9 or c == 44 or c == 59 or c == 13  # space, tab, ',', ';', '\r'


@numba.njit(cache=True, nogil=True)
def _parse_pairs(buf, start):  # pragma: no cover - compiled
    """Parse ``buf[start:]``: ``(pairs (k, 2) int64, k, error_code, error_line, error_pos, newlines)``.

    ``error_line`` counts lines from ``start`` (1-based), ``error_pos`` is the offset of that
    line's first byte, ``newlines`` the number of ``\\n`` in the whole of ``buf``.
    """
    n = buf.shape[0]
    newlines = 0
    for i in range(n):
        if buf[i] == 10:
            newlines += 1
    out = np.empty((newlines + 1, 2), dtype=np.int64)
    k = 0
    line = 0
    i = start
    while i < n:
        line += 1
        line_start = i
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
                return out, k, _ERR_ONE_ID, line, line_start, newlines
            neg = False
            if buf[i] == 45:  # '-'
                neg = True
                i += 1
            value = 0
            digits = 0
            while i < n and 48 <= buf[i] <= 57:
                d = buf[i] - 48
                if value >= _MAX_DIV10 and (value > _MAX_DIV10 or d > 7):  # beyond 2**63 - 1
                    return out, k, _ERR_RANGE, line, line_start, newlines
                value = value * 10 + d
                digits += 1
                i += 1
            if digits == 0 or (i < n and not _is_sep(buf[i]) and buf[i] != 10):
                return out, k, _ERR_NOT_INT, line, line_start, newlines
            out[k, col] = -value if neg else value
            col += 1
        k += 1
        while i < n and buf[i] != 10:  # skip remaining columns
            i += 1
        i += 1
    return out, k, 0, line, 0, newlines


_HEADER = re.compile(rb"^[ \t]*[A-Za-z_][\w .\-]*([,;\t ]+[A-Za-z_][\w .\-]*)+[ \t]*\r?$")
_CONTENT = re.compile(rb"^[ \t]*[^ \t\r\n#%]", re.M)  # the first line that is not blank or a comment
_WHAT = {_ERR_NOT_INT: "is not an integer vertex id", _ERR_ONE_ID: "has fewer than two ids",
         _ERR_RANGE: "has a vertex id outside the 64-bit range (at most 9223372036854775807 in size)"}


def show_line(raw: bytes, limit: int = 80) -> str:
    """``raw`` quoted, with every non-ASCII or control byte escaped (``\\x00``), at most ``limit`` characters."""
    text = repr(raw[:limit].rstrip(b"\r"))[1:]  # bytes repr without its b: printable ASCII stays as it is
    return text if len(text) <= limit and len(raw) <= limit else text[: limit - 4] + "...'"


def _check_file(path: Path) -> None:
    """One error line unless ``path`` is an existing regular file."""
    if not path.exists():
        raise NetweaveError(f"{path}: no such file")
    if path.is_dir():
        raise NetweaveError(f"{path}: is a directory; name the edge files in it with a glob such as '{path}/*.txt'")
    if not path.is_file():
        raise NetweaveError(f"{path}: not a regular file (a device, pipe or socket); an edge list must be a text file")


def _gunzip(fh: IO[bytes]) -> Iterator[bytes]:
    """Decompressed blocks of at most :data:`CHUNK` bytes of a gzip stream (several members allowed).

    ``zlib`` with ``max_length`` keeps the output of each call bounded, so a file of compressed
    zeros costs one block of memory however far it would expand.
    """
    new = lambda: zlib.decompressobj(16 + zlib.MAX_WBITS)  # noqa: E731 - gzip header and trailer
    d, started, ended, pending = new(), False, False, b""
    while True:
        if not pending and not ended:
            pending = fh.read(_IN_CHUNK)
            ended = not pending
        if not started:
            pending = pending.lstrip(b"\0")  # zero padding after a member, as gzip allows
            if not pending:
                if ended:
                    return
                continue
            started = True
        out = d.decompress(pending, CHUNK)
        if d.eof:
            pending, d, started = d.unused_data, new(), False
        else:
            pending = d.unconsumed_tail
            if not out and not pending and ended:
                raise EOFError("compressed file ended before the end-of-stream marker was reached")
        if out:
            yield out


def _raw_blocks(path: Path) -> Iterator[bytes]:
    """Blocks of the file's text (gunzipped when the name ends in ``.gz``); one error line on failure."""
    _check_file(path)
    try:
        with open(path, "rb") as fh:
            if path.name.endswith(".gz"):
                yield from _gunzip(fh)
            else:
                yield from iter(lambda: fh.read(CHUNK), b"")
    except (EOFError, zlib.error) as exc:
        raise NetweaveError(f"{path}: corrupt or truncated gzip file ({exc}); re-download it") from None
    except OSError as exc:
        raise NetweaveError(f"{path}: cannot read ({exc.strerror or exc})") from None


def _whole_lines(blocks: Iterable[bytes]) -> Iterator[tuple[bytes, int]]:
    """``(data, cut)`` with ``data[:cut]`` the next run of whole lines (the last may lack its newline).

    A line longer than :data:`MAX_LINE` is yielded on its own, so the parser can show it, and then
    :class:`_LineTooLong` is raised: memory stays bounded by one block plus one line.
    """
    tail = b""
    for block in blocks:
        data = tail + block if tail else block
        cut = data.rfind(b"\n") + 1
        if cut == 0:
            if len(data) > MAX_LINE:
                yield data, len(data)
                raise _LineTooLong
            tail = data
            continue
        tail = data[cut:]
        yield data, cut
    if tail:
        yield tail, len(tail)


class _LineTooLong(Exception):
    """A line without a newline in :data:`MAX_LINE` bytes (raised by :func:`_whole_lines`)."""


def iter_edge_pairs(blocks: Iterable[bytes], where: str = "<edges>") -> Iterator[tuple[np.ndarray, np.ndarray]]:
    """The ``(src, dst)`` int64 ids of each run of whole lines of an edge list given as blocks of bytes.

    Each run goes through the numba kernel in one call; the first bad line stops parsing with its
    number and its text (escaped, shortened) in one :class:`NetweaveError` line.
    """
    edges = 0  # parsed so far
    header = None  # (line number, text) of the header line skipped, if any
    line_base = 0  # lines in the blocks before this one
    header_open = True  # a header may come until the first non-comment line
    try:
        for data, cut in _whole_lines(blocks):
            start = 0
            if header_open:
                start, header_open = _header_end(data, cut)
                if start:
                    first = _CONTENT.search(data, 0, cut).start()
                    end = data.find(b"\n", first, cut)
                    header = (line_base + data.count(b"\n", 0, first) + 1, data[first: end if end >= 0 else cut])
            pairs, k, err, line, pos, newlines = _parse_pairs(np.frombuffer(data, dtype=np.uint8, count=cut), start)
            if err:
                line += line_base + data.count(b"\n", 0, start)
                end = data.find(b"\n", pos, cut)
                raw = data[pos: min(end if end >= 0 else cut, pos + 1024)]
                raise NetweaveError(f"{where}, line {line}: {show_line(raw)} {_WHAT[err]}; "
                                    "an edge list needs 'src dst' integer pairs per line")
            edges += k
            line_base += newlines
            if k:
                yield pairs[:k, 0], pairs[:k, 1]
    except _LineTooLong:
        raise NetweaveError(f"{where}, line {line_base + 1}: longer than {MAX_LINE} bytes without a line break; "
                            "not a text edge list") from None
    if header is not None and not edges and not re.search(rb"[,;\t]", header[1]):
        # a lone line of words ("alice bob") is no header of a SNAP file: its ids are not integers
        raise NetweaveError(f"{where}, line {header[0]}: {show_line(header[1][:1024])} {_WHAT[_ERR_NOT_INT]}; "
                            "an edge list needs 'src dst' integer pairs per line")


def parse_edge_blocks(blocks: Iterable[bytes], where: str = "<edges>") -> tuple[np.ndarray, np.ndarray]:
    """Parse an edge list given as blocks of bytes into ``(src, dst)`` int64 arrays, one entry per
    edge line (see :func:`iter_edge_pairs`)."""
    parts = list(iter_edge_pairs(blocks, where))
    return tuple(np.concatenate([p[col] for p in parts] or [np.empty(0, np.int64)]) for col in (0, 1))


def read_edge_pairs(path: Path) -> tuple[np.ndarray, np.ndarray]:
    """Stream and parse the edge list at ``path`` (``.gz`` gunzipped on the fly), one entry per edge line."""
    return parse_edge_blocks(_raw_blocks(Path(path)), str(path))


def read_distinct_edges(paths: Iterable[Path]) -> tuple[np.ndarray, np.ndarray]:
    """The distinct undirected edges of the edge lists at ``paths``, deduplicated as they stream
    (:class:`DistinctEdges`): ``(lo, hi)`` int64 with ``lo <= hi``, sorted."""
    edges = DistinctEdges()
    for path in paths:
        for src, dst in iter_edge_pairs(_raw_blocks(Path(path)), str(path)):
            edges.add(src, dst)
    return edges.arrays()


def parse_edge_pairs(data: bytes, where: str = "<edges>") -> tuple[np.ndarray, np.ndarray]:
    """Parse an in-memory edge-list text into ``(src, dst)`` int64 arrays (one entry per edge line)."""
    return parse_edge_blocks([data], where)


class DistinctEdges:
    """The distinct undirected edges ``{u, v}`` of a stream of edge arrays, kept as sorted pairs
    ``lo <= hi`` (a self-loop stays one pair ``(v, v)``: its vertex exists).

    Each block is deduplicated when it comes and the blocks are merged whenever the unmerged ones
    outgrow the merged set, so memory stays a small multiple of the distinct edges plus one block,
    however often a line repeats (a 389 kB ``.gz`` of one edge 10⁸ times holds one edge), and the
    sorting work stays O(E log E) overall.
    """

    MERGE_AT = 1 << 21  # unmerged pairs that always wait for the next merge

    def __init__(self) -> None:
        self._lo = self._hi = np.empty(0, np.int64)
        self._pending: list[tuple[np.ndarray, np.ndarray]] = []
        self._waiting = 0

    def add(self, src: np.ndarray, dst: np.ndarray) -> None:
        """Add the edges ``src[i] - dst[i]`` (int64 arrays of one length)."""
        lo, hi = distinct_pairs(np.minimum(src, dst), np.maximum(src, dst))
        self._pending.append((lo, hi))
        self._waiting += lo.size
        if self._waiting > max(self._lo.size, self.MERGE_AT):
            self._merge()

    def _merge(self) -> None:
        if self._pending:
            parts = [(self._lo, self._hi), *self._pending]
            self._pending, self._waiting = [], 0
            lo = np.concatenate([p[0] for p in parts])
            hi = np.concatenate([p[1] for p in parts])
            del parts
            self._lo, self._hi = distinct_pairs(lo, hi)

    def arrays(self) -> tuple[np.ndarray, np.ndarray]:
        """``(lo, hi)``: every distinct edge once, sorted by ``lo`` then ``hi``."""
        self._merge()
        return self._lo, self._hi


def distinct_pairs(lo: np.ndarray, hi: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The distinct pairs ``(lo[i], hi[i])``, sorted (int64 arrays).

    A run of one repeated pair is collapsed first (no sort needed for it); ids in ``[0, 2**31)``,
    the usual case, are sorted as one int64 key each, other ids by ``lexsort``.
    """
    if lo.size == 0:
        return lo.astype(np.int64), hi.astype(np.int64)
    keep = np.empty(lo.size, dtype=bool)
    keep[0] = True
    np.not_equal(lo[1:], lo[:-1], out=keep[1:])
    keep[1:] |= hi[1:] != hi[:-1]
    lo, hi = lo[keep], hi[keep]
    if min(lo.min(), hi.min()) >= 0 and max(lo.max(), hi.max()) < 2**31:
        keys = sorted_unique((lo << 31) | hi)
        return keys >> 31, keys & (2**31 - 1)
    order = np.lexsort((hi, lo))
    lo, hi = lo[order], hi[order]
    keep = np.empty(lo.size, dtype=bool)
    keep[0] = True
    np.not_equal(lo[1:], lo[:-1], out=keep[1:])
    keep[1:] |= hi[1:] != hi[:-1]
    return lo[keep], hi[keep]


def _header_end(buf: bytes, cut: int) -> tuple[int, bool]:
    """``(offset after a header line such as src,dst,weight, header still possible)`` in ``buf[:cut]``.

    The header is the first line that is neither blank nor a comment, if it is made of names;
    when the block holds only comments the header may still come in the next block.
    """
    first = _CONTENT.search(buf, 0, cut)
    if first is None:
        return 0, True
    end = buf.find(b"\n", first.start(), cut)
    end = cut if end < 0 else end
    return (end + 1 if _HEADER.match(bytes(buf[first.start():end])) else 0), False
