"""Reading the YAML and JSON files users pass in, with one-line errors and bounded cost.

Input files are untrusted. A few hundred bytes of YAML aliases can expand to gigabytes (the
"billion laughs"), a deeply nested list overflows the parser's recursion, and a huge file keeps
the pure-Python parser busy for minutes before it reports anything. So every file read here:

* is refused above :data:`MAX_BYTES` (before it is parsed),
* is parsed by :class:`SafeYamlLoader`, a ``yaml.SafeLoader`` that refuses anchors and aliases and
  nesting deeper than :data:`MAX_DEPTH` while composing, before anything is expanded, and a key
  repeated in one mapping (plain YAML keeps the last value silently, so a second ``nodes:`` would
  drop the first list),
* and JSON nesting that Python cannot recurse into is one error line, not a ``RecursionError``.
"""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path

import yaml

from .errors import NetweaveError

MAX_BYTES = 8 * 2**20  # 8 MiB: a 100k-link topology is ~5 MB; the pure-Python YAML parser reads ~0.5 MB/s
MAX_DEPTH = 64  # topology, jobs and sweep files nest 4 or 5 levels


class _Refused(yaml.YAMLError):
    """Raised while composing: an alias/anchor or too deep a nesting (carries the position)."""

    def __init__(self, problem: str, mark):
        super().__init__(problem)
        self.problem, self.problem_mark = problem, mark


class SafeYamlLoader(yaml.SafeLoader):
    """``yaml.SafeLoader`` without anchors/aliases and with nesting bounded by :data:`MAX_DEPTH`.

    Both checks run in :meth:`compose_node`, on parser events, so a refused document is never
    built, let alone expanded.
    """

    def __init__(self, stream):
        super().__init__(stream)
        self._depth = 0

    def compose_node(self, parent, index):
        event = self.peek_event()
        if isinstance(event, yaml.AliasEvent) or getattr(event, "anchor", None) is not None:
            raise _Refused("anchors and aliases (&name, *name) are not supported; write the values out",
                           event.start_mark)
        if self._depth >= MAX_DEPTH:
            raise _Refused(f"nested deeper than {MAX_DEPTH} levels", event.start_mark)
        self._depth += 1
        try:
            return super().compose_node(parent, index)
        finally:
            self._depth -= 1

    def construct_mapping(self, node, deep=False):
        """As SafeLoader's, but a key given twice in one mapping is refused (with its line)."""
        if isinstance(node, yaml.MappingNode):
            seen: dict = {}
            for key_node, _ in node.value:
                if key_node.tag == "tag:yaml.org,2002:merge":
                    continue
                key = self.construct_object(key_node, deep=True)
                try:
                    first = seen.setdefault(key, key_node.start_mark)
                except TypeError:  # an unhashable key: SafeLoader's own error names it
                    continue
                if first is not key_node.start_mark:
                    raise _Refused(f"duplicate key {key!r}, first given at line {first.line + 1}; give each key once "
                                   "per mapping", key_node.start_mark)
        return super().construct_mapping(node, deep)


def read_text(path: str | Path, kind: str, smaller: str = "split it into smaller files") -> str:
    """The text of ``path`` (at most :data:`MAX_BYTES`), or one error line naming ``kind``.

    ``smaller`` says how to do without a file that is too large.
    """
    path = Path(path)
    try:
        # O_NONBLOCK: opening a FIFO must not wait for a writer; what was opened is then checked
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
        mode = os.fstat(fd).st_mode
        if not stat.S_ISREG(mode):
            os.close(fd)
            raise NetweaveError(f"{path}: is a directory; expected a {kind} file" if stat.S_ISDIR(mode) else
                                f"{path}: not a regular file (a device, pipe or socket); expected a {kind} file")
        with open(fd, "rb") as fh:
            data = fh.read(MAX_BYTES + 1)  # never more
    except FileNotFoundError:
        raise NetweaveError(f"{path}: no such file") from None
    except OSError as exc:
        raise NetweaveError(f"{path}: cannot read ({exc.strerror or exc})") from None
    if len(data) > MAX_BYTES:
        raise NetweaveError(f"{path}: larger than the {MAX_BYTES // 2**20} MiB accepted for a {kind} file; {smaller}")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise NetweaveError(f"{path}: not UTF-8 text (byte {exc.start}); expected a {kind} file") from None


def load_yaml(path: str | Path, kind: str = "YAML", smaller: str = "split it into smaller files"):
    """Parse the YAML file ``path`` with :class:`SafeYamlLoader` (errors name the line and column).

    ``kind`` and ``smaller`` word the error for a file above :data:`MAX_BYTES` (see :func:`read_text`).
    """
    text = read_text(path, kind, smaller)
    try:
        return yaml.load(text, Loader=SafeYamlLoader)  # noqa: S506 - SafeLoader subclass
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        at = f" at line {mark.line + 1}, column {mark.column + 1}" if mark else ""
        raise NetweaveError(f"{path}: invalid YAML{at} ({getattr(exc, 'problem', None) or exc})") from None
    except RecursionError:  # not reachable with MAX_DEPTH, kept as a last guard
        raise NetweaveError(f"{path}: nested too deeply") from None


def read_yaml(path: str | Path):
    """A YAML file passed by the user (jobs, sweeps), parsed safely; see :func:`load_yaml`."""
    return load_yaml(path)


def read_json(path: str | Path):
    """A JSON file passed by the user, at most :data:`MAX_BYTES`, with one-line errors."""
    text = read_text(path, "JSON")
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise NetweaveError(f"{path}: not valid JSON ({exc.msg}, line {exc.lineno})") from None
    except RecursionError:
        raise NetweaveError(f"{path}: JSON nested too deeply to read") from None
