import gzip

import numpy as np
import pytest

from netweave.errors import NetweaveError
from netweave.graph.edgelist import DistinctEdges, distinct_pairs, parse_edge_pairs, read_distinct_edges, read_edge_pairs
from netweave.graph.snap import load_snap


def test_comments_crlf_tabs_commas_and_extra_columns():
    text = b"# header comment\r\n% another\r\n\r\n1\t2\r\n3,4,0.5\r\n  5 6 999 x\r\n-7;8\n9 10"
    src, dst = parse_edge_pairs(text)
    assert src.tolist() == [1, 3, 5, -7, 9] and dst.tolist() == [2, 4, 6, 8, 10]


def test_header_line_is_skipped():
    src, dst = parse_edge_pairs(b"src,dst,weight\n0,1,5\n1,2,7\n")
    assert src.tolist() == [0, 1] and dst.tolist() == [1, 2]


@pytest.mark.parametrize("text, line, what", [
    (b"0 1\n1 x2\n", 2, "not an integer"),
    (b"# c\n0 1\n2.5 3\n", 3, "not an integer"),
    (b"0 1\n7\n", 2, "fewer than two"),
    (b"0 1\nfoo bar\n", 2, "not an integer"),
])
def test_bad_lines_give_one_clear_error(text, line, what):
    with pytest.raises(NetweaveError, match=rf"line {line}: .*{what}") as err:
        parse_edge_pairs(text, "f.txt")
    assert "\n" not in str(err.value)


def test_truncated_gzip_and_missing_file(tmp_path):
    path = tmp_path / "e.txt.gz"
    path.write_bytes(gzip.compress(b"0 1\n" * 10000)[:-20])
    with pytest.raises(NetweaveError, match="corrupt or truncated gzip"):
        read_edge_pairs(path)
    with pytest.raises(NetweaveError, match="no such file"):
        load_snap(tmp_path / "missing.txt")
    with pytest.raises(NetweaveError, match="no file matches"):
        load_snap(str(tmp_path / "*.nothing"))


def test_load_snap_remaps_arbitrary_ids(tmp_path):
    path = tmp_path / "g.txt"
    path.write_text("# ids are sparse\n1000000000 5\n5 -2\n-2 -2\n")
    g = load_snap(path)
    assert g.num_nodes == 3 and g.num_edges == 2  # the self-loop on -2 is dropped, the vertex kept


def test_load_snap_glob_concatenates(tmp_path):
    (tmp_path / "a_e_0.csv").write_text("src,dst\n0,1\n")
    (tmp_path / "a_e_1.csv").write_text("src,dst\n1,2\n")
    g = load_snap(str(tmp_path / "a_e_*.csv"))
    assert g.num_nodes == 3 and g.num_edges == 2


def test_large_random_edge_list_roundtrip(tmp_path):
    rng = np.random.default_rng(1)
    pairs = rng.integers(0, 10**12, (50000, 2))
    text = "\n".join(f"{a} {b}" for a, b in pairs).encode()
    src, dst = parse_edge_pairs(gzip.decompress(gzip.compress(text)))
    assert np.array_equal(src, pairs[:, 0]) and np.array_equal(dst, pairs[:, 1])


@pytest.fixture
def small_blocks(monkeypatch):
    """Parse in blocks of 64 bytes (lines up to 256) so that block boundaries fall everywhere."""
    import netweave.graph.edgelist as edgelist
    monkeypatch.setattr(edgelist, "CHUNK", 64)
    monkeypatch.setattr(edgelist, "MAX_LINE", 256)


def test_blocks_give_the_same_pairs_and_line_numbers(tmp_path, small_blocks):
    rng = np.random.default_rng(3)
    pairs = rng.integers(-10**15, 10**15, (2000, 2))
    lines = ["# comment", "% another", ""] + [f"{a}\t{b} 1.5" for a, b in pairs]
    text = "\r\n".join(lines).encode()
    (tmp_path / "e.txt").write_bytes(text)
    (tmp_path / "e.txt.gz").write_bytes(gzip.compress(text))
    for name in ("e.txt", "e.txt.gz"):
        src, dst = read_edge_pairs(tmp_path / name)
        assert np.array_equal(src, pairs[:, 0]) and np.array_equal(dst, pairs[:, 1])
    bad = text + b"\r\n5 x\r\n"
    with pytest.raises(NetweaveError, match=rf"line {len(lines) + 1}: '5 x' is not an integer"):
        parse_edge_pairs(bad)


def test_header_after_a_block_of_comments(small_blocks):
    text = b"# " + b"c" * 100 + b"\n" * 3 + b"src,dst\n0,1\n1,2\n"
    src, dst = parse_edge_pairs(text)
    assert src.tolist() == [0, 1] and dst.tolist() == [1, 2]


@pytest.mark.parametrize("value, ok", [
    (2**63 - 1, True), (-(2**63 - 1), True), (2**63, False), (18446744073709551617, False), (10**30, False),
])
def test_ids_beyond_64_bits_are_an_error(value, ok):
    text = f"1 2\n3 {value}\n".encode()
    if ok:
        assert parse_edge_pairs(text)[1].tolist() == [2, value]
    else:
        with pytest.raises(NetweaveError, match=rf"line 2: '3 {value}' has a vertex id outside the 64-bit range"):
            parse_edge_pairs(text)


def test_bad_line_is_shown_escaped_and_short():
    with pytest.raises(NetweaveError) as err:
        parse_edge_pairs(b"0 1\n\x00\x1b[31m\xff" + b"z" * 500 + b"\n")
    msg = str(err.value)
    assert "line 2: '\\x00\\x1b[31m\\xffzz" in msg and "z...' is not an integer" in msg
    assert "\x00" not in msg and "\x1b" not in msg and len(msg) < 250


def test_gzip_members_padding_and_bomb(tmp_path):
    (tmp_path / "m.txt.gz").write_bytes(gzip.compress(b"0 1\n1 2\n") + gzip.compress(b"2 3\n") + b"\0" * 10)
    assert read_edge_pairs(tmp_path / "m.txt.gz")[0].tolist() == [0, 1, 2]
    member = gzip.compress(b"\0" * 2**20, 9)
    (tmp_path / "bomb.txt.gz").write_bytes(member * 4096)  # 4 GiB of zeros; fails in the first block
    with pytest.raises(NetweaveError, match=r"line 1: '\\x00\\x00.*\.\.\.' is not an integer"):
        read_edge_pairs(tmp_path / "bomb.txt.gz")


def test_overlong_line_without_bad_bytes(tmp_path, small_blocks):
    (tmp_path / "long.txt").write_bytes(b"0 1\n" + b" " * 1000)
    with pytest.raises(NetweaveError, match="long.txt, line 2: longer than 256 bytes"):
        read_edge_pairs(tmp_path / "long.txt")


def test_not_regular_files(tmp_path):
    with pytest.raises(NetweaveError, match="not a regular file"):
        load_snap("/dev/zero")
    (tmp_path / "d").mkdir()
    (tmp_path / "d" / "x_e_0.csv.gz").write_bytes(gzip.compress(b"0,1\n"))
    with pytest.raises(NetweaveError, match=r"is a directory; .*glob such as snap:'.*/d/\*\.csv\.gz'"):
        load_snap(tmp_path / "d")
    with pytest.raises(NetweaveError, match="is a directory"):
        read_edge_pairs(tmp_path / "d")


def _canonical_unique(src, dst):
    """The distinct undirected pairs ``(min, max)`` of ``src, dst``, sorted (the reference)."""
    pairs = np.unique(np.stack([np.minimum(src, dst), np.maximum(src, dst)], axis=1), axis=0)
    return pairs[:, 0].tolist(), pairs[:, 1].tolist()


@pytest.mark.parametrize("ids", ["small", "wide"])
def test_distinct_edges_across_blocks_files_and_merges(tmp_path, small_blocks, monkeypatch, ids):
    """Every distinct undirected edge once (self-loops kept as one pair), whatever the blocks, the
    files and the merges: the same as np.unique of the canonical pairs."""
    monkeypatch.setattr(DistinctEdges, "MERGE_AT", 8)  # merge often
    rng = np.random.default_rng(0)
    src, dst = rng.integers(0, 30, 600), rng.integers(0, 30, 600)
    if ids == "wide":  # beyond 2**31 and negative: the lexsort path
        src, dst = src * 10**12 - 5 * 10**12, dst * 10**12 - 5 * 10**12
    half = src.size // 2
    for name, part in (("a.txt", slice(0, half)), ("b.txt.gz", slice(half, None))):
        text = "".join(f"{u} {v}\n" for u, v in zip(src[part], dst[part])).encode()
        (tmp_path / name).write_bytes(gzip.compress(text) if name.endswith(".gz") else text)
    lo, hi = read_distinct_edges([tmp_path / "a.txt", tmp_path / "b.txt.gz"])
    assert (lo.tolist(), hi.tolist()) == _canonical_unique(src, dst)
    assert lo.dtype == hi.dtype == np.int64


def test_distinct_pairs_of_a_long_run_and_of_nothing():
    lo, hi = distinct_pairs(np.full(10**6, 3, np.int64), np.full(10**6, 7, np.int64))
    assert lo.tolist() == [3] and hi.tolist() == [7]
    lo, hi = distinct_pairs(np.array([5, 1, 5, 1]), np.array([6, 2, 6, 2]))  # alternating: sorted, then unique
    assert lo.tolist() == [1, 5] and hi.tolist() == [2, 6]
    assert distinct_pairs(np.empty(0, np.int64), np.empty(0, np.int64))[0].size == 0


def test_snap_of_repeated_lines_is_the_graph_of_its_distinct_edges(tmp_path):
    (tmp_path / "rep.txt.gz").write_bytes(gzip.compress(b"0 1\n1 0\n5 5\n" * 100_000 + b"1 2\n"))
    g = load_snap(tmp_path / "rep.txt.gz")
    assert g.num_nodes == 4 and g.num_edges == 2  # ids 0 1 2 5; vertex 5 only in self-loops: isolated
    assert g.degrees.tolist() == [1, 2, 1, 0]
