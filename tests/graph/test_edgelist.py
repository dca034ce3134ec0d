import gzip

import numpy as np
import pytest

from netweave.errors import NetweaveError
from netweave.graph.edgelist import parse_edge_pairs, read_bytes
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
        read_bytes(path)
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
