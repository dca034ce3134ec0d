"""The restricted unpickler admits the dataset types and nothing that can run code."""

import collections
import io
import os
import pickle

import numpy as np
import pytest
import scipy.sparse as sp

from netweave.errors import NetweaveError
from netweave.graph.safe_pickle import safe_load


def load(value, protocol=pickle.HIGHEST_PROTOCOL):
    return safe_load(io.BytesIO(pickle.dumps(value, protocol=protocol)), "f.pkl")


@pytest.mark.parametrize("protocol", [0, 2, 4, 5])
def test_dataset_types_round_trip(protocol):
    adjacency = collections.defaultdict(list, {0: [1, 2], 2: [0]})
    value = {"csr": sp.csr_matrix(np.eye(3)), "csc": sp.csc_array(np.eye(2)), "coo": sp.coo_matrix(np.ones((2, 2))),
             "dense": np.arange(6, dtype=np.float32).reshape(2, 3), "scalar": np.int64(7), "graph": adjacency,
             "misc": [1, 2.5, True, None, "s", b"b", (1, 2), {3}, frozenset({4}), complex(1, 2)]}
    out = load(value, protocol)
    assert (out["csr"] != value["csr"]).nnz == 0 and out["csr"].format == "csr"
    assert np.array_equal(out["dense"], value["dense"]) and out["dense"].dtype == np.float32
    assert out["graph"] == adjacency and isinstance(out["graph"], collections.defaultdict)
    assert out["scalar"] == 7 and out["misc"] == value["misc"]


class Call:
    """Unpickles as ``func(*args)``."""

    def __init__(self, func, *args):
        self.func, self.args = func, args

    def __reduce__(self):
        return self.func, self.args


@pytest.mark.parametrize("payload, name", [
    (Call(os.system, "true"), "posix.system"),
    (Call(eval, "1+1"), "builtins.eval"),
    (Call(open, os.devnull), "io.open"),
    (Call(np.load, os.devnull), "numpy.load"),
    (Call(getattr, 1, "real"), "builtins.getattr"),
    ([1, Call(print, "hi")], "builtins.print"),
])
def test_other_globals_are_refused_with_the_file_and_name(payload, name):
    with pytest.raises(NetweaveError, match=rf"f\.pkl: refused to load {name} from this pickle") as err:
        load(payload, 2)
    assert "\n" not in str(err.value)


def test_codecs_encode_only_for_latin1():
    class Encode:
        def __reduce__(self):
            import _codecs
            return _codecs.encode, ("x", "rot13")
    with pytest.raises(NetweaveError, match="not a readable pickle"):
        load(Encode(), 2)
    assert load(b"\xff\x00", 2) == b"\xff\x00"  # protocol 2 writes bytes through _codecs.encode latin-1


@pytest.mark.parametrize("data", [b"", b"\x80\x04garbage", b"\x80\x02]q\x00(K\x01", pickle.dumps(list(range(100)))[:-5]])
def test_corrupt_pickles_are_one_line(data):
    with pytest.raises(NetweaveError, match="f.pkl: not a readable pickle") as err:
        safe_load(io.BytesIO(data), "f.pkl")
    assert "\n" not in str(err.value)


def test_what_names_the_format():
    with pytest.raises(NetweaveError, match="from this Planetoid pickle"):
        safe_load(io.BytesIO(pickle.dumps(Call(eval, "1"))), "ind.x.y", "Planetoid pickle")


@pytest.mark.parametrize("payload", [
    Call(bytes, 10**12),
    Call(np.ndarray, (10**12,)),
])
def test_allocating_calls_are_refused(payload):
    with pytest.raises(NetweaveError, match="not a readable pickle"):
        load(payload, 2)


def test_reconstruct_of_a_huge_shape_is_refused():
    from numpy._core.multiarray import _reconstruct
    with pytest.raises(NetweaveError, match="asks for more memory"):
        load(Call(_reconstruct, np.ndarray, (10**15,), np.dtype("f8")), 2)
