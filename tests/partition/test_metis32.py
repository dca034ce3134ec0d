"""The ``metis32`` method: the system's 32-bit METIS through ctypes, checked against pymetis's METIS
(which netweave did not write) on real and generated graphs. Skipped where no system METIS is installed."""

import subprocess
import sys

import numpy as np
import pytest

from netweave.errors import NetweaveError
from netweave.graph import load_dataset, rmat
from netweave.partition import metis_partition, partition_by_method
from netweave.partition import metis32

try:
    metis32.metis32_library()
    HAVE = True
except NetweaveError:
    HAVE = False
needs_lib = pytest.mark.skipif(not HAVE, reason="no 32-bit system METIS (apt-get install libmetis5)")


def _cut(g, parts):
    return int(np.count_nonzero(parts[g.edge_sources()] != parts[g.indices])) // 2


@needs_lib
@pytest.mark.parametrize("k", [2, 8, 16, 64])  # recursive bisection up to 8 parts, k-way above
def test_cut_and_balance_like_pymetis(k):
    g = load_dataset("cora")
    ours = [metis_partition(g, k, seed=s, bits=32) for s in range(5)]
    ref = [metis_partition(g, k, seed=s) for s in range(5)]  # pymetis's 64-bit METIS
    for p in ours:
        assert p.method == "metis32" and p.parts.dtype == np.int32
        assert set(np.unique(p.parts)) == set(range(k))
        assert p.sizes().max() <= 1.05 * np.ceil(g.num_nodes / k) + 1  # METIS's default 3 % imbalance
    # one seed's cut varies by up to 20 % (cora, 64 parts); the medians agree within 2 % there
    assert np.median([_cut(g, p.parts) for p in ours]) <= 1.05 * np.median([_cut(g, p.parts) for p in ref])


@needs_lib
def test_deterministic_per_seed_and_weights_honoured():
    g = rmat(3000, 30000, seed=2)
    a = partition_by_method(g, "metis32", 8, None, seed=3).parts
    assert np.array_equal(a, partition_by_method(g, "metis32", 8, None, seed=3).parts)
    w = np.ones(g.num_nodes, dtype=np.int64)
    w[: g.num_nodes // 2] = 3  # the first half weighs three times as much: parts balance weight
    labels = metis32.metis32_labels(g.indptr, g.indices, 4, 0, vertex_weights=w)
    per_part = np.bincount(labels, weights=w, minlength=4)
    assert per_part.max() <= 1.05 * w.sum() / 4
    skew = metis32.metis32_labels(g.indptr, g.indices, 2, 0, target_weights=[0.25, 0.75])
    assert abs(np.count_nonzero(skew == 1) / g.num_nodes - 0.75) < 0.03


@needs_lib
def test_index_width_probe_reads_the_library():
    assert metis32._index_bits(metis32.metis32_library()) == 32


def test_missing_library_is_one_clear_line(monkeypatch, tmp_path):
    monkeypatch.setattr(metis32, "LIBRARIES", ("libnetweave-no-such-metis.so",))
    monkeypatch.setattr(metis32.ctypes.util, "find_library", lambda name: None)
    metis32.metis32_library.cache_clear()
    try:
        with pytest.raises(NetweaveError, match="needs the system METIS library.*apt-get install libmetis5"):
            metis32.metis32_labels(np.array([0, 1, 2]), np.array([1, 0], dtype=np.int32), 2)
    finally:
        metis32.metis32_library.cache_clear()


def test_cli_method_metis32(tmp_path):
    out = tmp_path / "p.npz"
    r = subprocess.run([sys.executable, "-m", "netweave", "partition", "cora", "--method", "metis32", "--parts", "4",
                        "--out", str(out)], capture_output=True, text=True)
    if HAVE:
        assert r.returncode == 0, r.stderr
        assert out.exists()
    else:
        assert r.returncode == 2 and r.stderr.startswith("netweave: error:") and "libmetis5" in r.stderr
        assert not out.exists()
