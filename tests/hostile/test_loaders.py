"""Hostile dataset and topology files: one error line, exit 2, no traceback, nothing written.

Each case builds its input in a temporary folder and runs the real command line under a memory
cap (see ``conftest.py``). The cases are the attacks of issue 17: pickles that run code, alias
and nesting bombs in YAML, a gzip bomb, generator sizes beyond memory, ids beyond 64 bits, and
paths that are not files.
"""

from __future__ import annotations

import gzip
import pickle
import zipfile
from pathlib import Path

import numpy as np
import pytest
import scipy.sparse as sp

MARKER = "pwned.marker"


class Touch:
    """Unpickling this object runs ``open(path, "w")``: it creates a file (the marker)."""

    def __init__(self, path: Path):
        self.path = str(path)

    def __reduce__(self):
        return (open, (self.path, "w"))


def planetoid_dir(d: Path, **override) -> Path:
    """A tiny valid Planetoid dataset ``ind.toy.*`` (2 train, 1 more allx row, 2 test), parts overridable."""
    one_hot = lambda rows: np.eye(2)[rows]  # noqa: E731
    parts = {"x": sp.csr_matrix(np.ones((2, 3))), "y": one_hot([0, 1]), "allx": sp.csr_matrix(np.ones((3, 3))),
             "ally": one_hot([0, 1, 0]), "tx": sp.csr_matrix(np.ones((2, 3))), "ty": one_hot([1, 0]),
             "graph": {0: [1], 1: [0, 2], 2: [3], 3: [4], 4: [0]}} | override
    folder = d / "planetoid"
    folder.mkdir()
    for name, value in parts.items():
        (folder / f"ind.toy.{name}").write_bytes(pickle.dumps(value, protocol=2))
    (folder / "ind.toy.test.index").write_text("3\n4\n")
    return folder


def crafted_planetoid(d: Path) -> list[str]:
    return ["graph", "stats", f"planetoid:{planetoid_dir(d, x=Touch(d / MARKER))}:toy"]


def wrong_type_planetoid(d: Path) -> list[str]:
    return ["graph", "stats", f"planetoid:{planetoid_dir(d, x='not a matrix')}:toy"]


def crafted_npz(d: Path) -> list[str]:
    np.savez(d / "evil.npz", adj_matrix=np.array(Touch(d / MARKER), dtype=object))
    return ["graph", "stats", f"npz:{d / 'evil.npz'}"]


def truncated_npz(d: Path) -> list[str]:
    adj = sp.random(200, 200, density=0.05, format="csr", random_state=0)
    np.savez(d / "t.npz", adj_data=adj.data, adj_indices=adj.indices, adj_indptr=adj.indptr, adj_shape=adj.shape)
    data = (d / "t.npz").read_bytes()
    (d / "t.npz").write_bytes(data[: len(data) // 2])
    return ["graph", "stats", str(d / "t.npz")]


def billion_laughs(d: Path) -> list[str]:
    lines = ['a: &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]']
    for prev, name in zip("abcdefgh", "bcdefghi"):
        lines.append(f"{name}: &{name} [" + ",".join([f"*{prev}"] * 9) + "]")
    (d / "laughs.yaml").write_text("\n".join(lines) + "\nnodes: [{name: A, kind: host, server: *i}]\nlinks: []\n")
    return ["topology", "show", str(d / "laughs.yaml")]


def deep_yaml(d: Path) -> list[str]:
    (d / "deep.yaml").write_text("nodes: " + "[" * 100_000 + "]" * 100_000 + "\nlinks: []\n")
    return ["topology", "show", str(d / "deep.yaml")]


def big_yaml(d: Path) -> list[str]:
    rows = "".join(f"  - {{name: H{i}, kind: host}}\n" for i in range(330_000))  # ~9 MB, minutes to parse
    (d / "big.yaml").write_text("nodes:\n" + rows + "links: []\n")
    return ["topology", "show", str(d / "big.yaml")]


def gzip_bomb(d: Path) -> list[str]:
    member = gzip.compress(b"\0" * 2**20, 9)  # 1 MiB of zeros in ~1 KB; 4096 members: 4 GiB
    (d / "bomb.txt.gz").write_bytes(member * 4096)
    return ["graph", "stats", f"snap:{d / 'bomb.txt.gz'}"]


def truncated_gz(d: Path) -> list[str]:
    (d / "cut.txt.gz").write_bytes(gzip.compress(b"0 1\n1 2\n" * 50_000)[:-40])
    return ["graph", "stats", f"snap:{d / 'cut.txt.gz'}"]


def id_overflow(d: Path) -> list[str]:
    (d / "ids.txt").write_text("1 2\n2 3\n18446744073709551617 3\n")
    return ["graph", "stats", f"snap:{d / 'ids.txt'}"]


def binary_line(d: Path) -> list[str]:
    (d / "bin.txt").write_bytes(b"0 1\n" + bytes(range(256)) * 4 + b"\n")
    return ["graph", "stats", f"snap:{d / 'bin.txt'}"]


def shard_directory(d: Path) -> list[str]:
    (d / "shards").mkdir()
    for i in range(2):
        (d / "shards" / f"part_{i}.csv.gz").write_bytes(gzip.compress(b"src,dst\n0,1\n"))
    return ["graph", "stats", f"snap:{d / 'shards'}"]


CASES = [
    # (id, build(dir) -> CLI args, expected text in the error line)
    ("planetoid-pickle-runs-code", crafted_planetoid, "refused to load io.open"),
    ("planetoid-wrong-type", wrong_type_planetoid, "expected a 2-D feature matrix"),
    ("npz-pickle-runs-code", crafted_npz, "refused to load io.open"),
    ("npz-truncated", truncated_npz, "not a readable .npz archive"),
    ("yaml-billion-laughs", billion_laughs, "anchors and aliases"),
    ("yaml-deep-nesting", deep_yaml, "nested deeper than"),
    ("yaml-too-large", big_yaml, "larger than the 8 MiB"),
    ("gzip-bomb", gzip_bomb, r"line 1: '\x00\x00"),
    ("gzip-truncated", truncated_gz, "corrupt or truncated gzip"),
    ("snap-id-beyond-int64", id_overflow, "line 3: '18446744073709551617 3' has a vertex id outside the 64-bit range"),
    ("snap-binary-line", binary_line, r"line 2: '\x00\x01"),
    ("snap-dev-zero", lambda d: ["graph", "stats", "snap:/dev/zero"], "not a regular file"),
    ("dataset-dev-zero", lambda d: ["graph", "stats", "/dev/zero"], "not a regular file"),
    ("snap-directory", shard_directory, "is a directory; name its edge list files with a glob such as snap:'"),
    ("rmat-beyond-memory", lambda d: ["graph", "stats", "rmat:n=100000000000,m=10"], "GB of memory but only"),
    ("preset-beyond-memory", lambda d: ["graph", "stats", "products-like:scale=4"], "GB of memory but only"),
    ("rmat-negative-n", lambda d: ["graph", "stats", "rmat:n=-5"], "n=-5 must be a positive number of vertices"),
]


@pytest.mark.parametrize("build, expected", [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_hostile_input_is_one_error_line(netweave_cli, inputs, build, expected):
    run = netweave_cli(*build(inputs))
    assert run.rc == 2, run.stderr[-2000:]
    assert len(run.error_lines) == 1 and run.error_lines[0].startswith("netweave: error: "), run.stderr[-2000:]
    assert "Traceback" not in run.stderr
    assert expected in run.error_lines[0]
    assert len(run.error_lines[0]) < 400  # shown lines are escaped and shortened
    assert run.written == [] and run.stdout == ""
    assert not (inputs / MARKER).exists(), "the pickle ran code"


def test_the_crafted_pickle_does_run_code_when_unpickled_freely(tmp_path):
    """The attack is real: plain ``pickle.loads`` of the payload creates the marker."""
    pickle.loads(pickle.dumps(Touch(tmp_path / MARKER))).close()
    assert (tmp_path / MARKER).exists()


def test_valid_inputs_still_load(netweave_cli, inputs):
    """The builders above make valid files when nothing hostile is put in."""
    run = netweave_cli("graph", "stats", "--json", f"planetoid:{planetoid_dir(inputs)}:toy")
    assert run.rc == 0, run.stderr
    assert '"num_nodes": 5' in run.stdout.replace(" ", "").replace('":', '": ')


def test_npz_with_zip_header_but_garbage_member(netweave_cli, inputs):
    with zipfile.ZipFile(inputs / "g.npz", "w") as z:
        z.writestr("adj_matrix.npy", b"\x93NUMPY\x01\x00" + b"garbage" * 10)
    run = netweave_cli("graph", "stats", str(inputs / "g.npz"))
    assert run.rc == 2 and len(run.error_lines) == 1 and "member 'adj_matrix'" in run.error_lines[0]
