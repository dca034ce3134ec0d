"""NpzArchive reads what np.load reads, without numpy's pickle, and fails in one line."""

import zipfile

import numpy as np
import pytest
import scipy.sparse as sp

from netweave.errors import NetweaveError
from netweave.graph.npz_archive import NpzArchive

ARRAYS = {
    "ints": np.arange(10, dtype=np.int32),
    "fortran": np.asfortranarray(np.arange(12.0).reshape(3, 4)),
    "scalar": np.array(3.5),
    "empty": np.empty((0, 3), dtype=np.int64),
    "bools": np.array([True, False, True]),
    "text": np.array(["cora", "citeseer"]),
    "big_endian": np.arange(5, dtype=">i8"),
    "records": np.array([(1, 2.0)], dtype=[("a", "<i4"), ("b", "<f8")]),
}


@pytest.mark.parametrize("compressed", [False, True])
def test_plain_members_equal_np_load(tmp_path, compressed):
    path = tmp_path / "a.npz"
    (np.savez_compressed if compressed else np.savez)(path, **ARRAYS)
    with NpzArchive(path) as z, np.load(path) as ref:
        assert sorted(z.files) == sorted(ref.files)
        for key in ref.files:
            got = z[key]
            assert got.dtype == ref[key].dtype and got.shape == ref[key].shape, key
            assert np.array_equal(got, ref[key]), key
            assert got.flags.writeable


def test_object_member_through_the_restricted_unpickler(tmp_path):
    adj = sp.csr_matrix(np.eye(4))
    np.savez(tmp_path / "o.npz", adj_matrix=np.array(adj, dtype=object), meta=np.array({"k": [1, 2]}, dtype=object))
    with NpzArchive(tmp_path / "o.npz") as z:
        assert (z["adj_matrix"].item() != adj).nnz == 0
        assert z["meta"].item() == {"k": [1, 2]}
    with NpzArchive(tmp_path / "o.npz", allow_pickle=False) as z, pytest.raises(NetweaveError, match="holds Python objects"):
        z["adj_matrix"]


def test_header_claiming_more_than_the_member_holds(tmp_path):
    header = "{'descr': '<f8', 'fortran_order': False, 'shape': (1000000000000,), }"
    data = b"\x93NUMPY\x01\x00" + len(header + "\n").to_bytes(2, "little") + header.encode() + b"\n" + b"\0" * 64
    with zipfile.ZipFile(tmp_path / "h.npz", "w") as z:
        z.writestr("x.npy", data)
    with NpzArchive(tmp_path / "h.npz") as z, pytest.raises(NetweaveError, match="member 'x': header says .* corrupt"):
        z["x"]


@pytest.mark.parametrize("content, match", [
    (b"", "no zip header"),
    (b"PK\x03\x04truncated", "not a readable .npz archive"),
])
def test_not_an_archive(tmp_path, content, match):
    (tmp_path / "b.npz").write_bytes(content)
    with pytest.raises(NetweaveError, match=match) as err:
        NpzArchive(tmp_path / "b.npz")
    assert "\n" not in str(err.value)


def test_missing_and_not_regular(tmp_path):
    with pytest.raises(NetweaveError, match="no such file"):
        NpzArchive(tmp_path / "none.npz")
    with pytest.raises(NetweaveError, match="not a regular file"):
        NpzArchive(tmp_path)


def test_corrupt_member_is_one_line(tmp_path):
    path = tmp_path / "c.npz"
    np.savez(path, x=np.arange(1000))
    data = bytearray(path.read_bytes())
    data[200:260] = b"\xff" * 60  # inside the member's data: CRC mismatch
    path.write_bytes(bytes(data))
    with NpzArchive(path) as z, pytest.raises(NetweaveError, match="member 'x' is unreadable .*BadZipFile"):
        z["x"]


@pytest.mark.filterwarnings("ignore::DeprecationWarning")  # old scipy paths, np.load side
def test_shared_gnn_benchmark_files_equal_np_load(shared):
    for path in sorted((shared / "gnn_benchmark_npz").glob("*.npz")):
        with NpzArchive(path) as z, np.load(path, allow_pickle=True) as ref:
            for key in ("adj_matrix", "node_attr", "node_label"):
                got, want = z[key], ref[key]
                if got.dtype == object:
                    got, want = got.item(), want.item()
                    assert got.format == want.format and (got != want).nnz == 0, (path.name, key)
                else:
                    assert np.array_equal(got, want) and got.dtype == want.dtype, (path.name, key)
