"""Loader for SNAP-style edge lists: one or more ``.txt``/``.csv`` files, optionally gzipped.

Arbitrary integer ids are remapped densely (in increasing id order) onto ``0..n-1``; a vertex
that only appears in self-loops is kept as an isolated vertex. A glob pattern (``DIR/*_e_*.csv.gz``)
concatenates every matching file, which is how sharded edge lists such as the ego-Twitter copy in
``../shared/data`` load.
"""

from __future__ import annotations

import glob
import itertools
from pathlib import Path

from ..errors import NetweaveError
from .edgelist import read_distinct_edges
from .graph import Graph, from_edges, remap_ids
from .validate import validate_graph


def edge_files(pattern: str) -> list[Path]:
    """The regular files a path or glob pattern names, sorted; a clear error when there are none."""
    if any(ch in pattern for ch in "*?["):
        files = sorted(Path(p) for p in glob.glob(pattern))
        if not files:
            raise NetweaveError(f"no file matches {pattern!r}")
        for f in files:
            if not f.is_file():
                raise NetweaveError(
                    f"{f} (matched by {pattern!r}) is not a regular file; narrow the pattern to edge list files")
        return files
    path = Path(pattern)
    if path.is_dir():
        raise NetweaveError(f"{pattern}: is a directory; name its edge list files with a glob such as "
                            f"snap:'{_suggest_glob(path)}'")
    if path.exists() and not path.is_file():
        raise NetweaveError(
            f"{pattern}: not a regular file (a device, pipe or socket); snap: needs a text edge list file")
    if not path.is_file():
        raise NetweaveError(f"{pattern}: no such file")
    return [path]


def _suggest_glob(directory: Path) -> str:
    """``DIR/*.<suffix>`` for the most common edge-list suffix among the files in ``directory``."""
    suffixes = [".".join(p.name.split(".")[1:]) for p in itertools.islice(directory.iterdir(), 1000) if p.is_file()]
    known = [sfx for sfx in suffixes if sfx.split(".")[0] in ("txt", "csv", "tsv", "e", "edges")]
    best = max(set(known), key=known.count) if known else "txt"
    return str(directory / f"*.{best}")


def load_snap(pattern: str | Path) -> Graph:
    """Load an edge list (or every file matching a glob) as an undirected simple graph."""
    files = edge_files(str(pattern))
    src, dst = read_distinct_edges(files)  # deduplicated as they stream: a repeated line costs nothing
    if src.size == 0:
        raise NetweaveError(f"{pattern}: no edges found (only comments or blank lines)")
    src, dst, ids = remap_ids(src, dst)
    name = files[0].name.split(".")[0] if len(files) == 1 else files[0].parent.name
    return validate_graph(from_edges(src, dst, ids.size, name=name), str(pattern))
