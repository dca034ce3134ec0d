"""METIS gets the graph's CSR in its own index type, without copies we could avoid (issue 20), and
partitions exactly as before (when the arrays were narrowed to int32 and pymetis widened them again)."""

import numpy as np
import pymetis

from netweave.graph import rmat
from netweave.partition import metis_partition
from netweave.partition.metis import metis_index_dtype, metis_labels


def test_metis_reads_the_csr_without_copies(monkeypatch):
    g = rmat(2000, 16000, seed=1)
    seen = {}
    real = pymetis.part_graph

    def spy(nparts, adjacency=None, **kw):
        seen["xadj"], seen["adjncy"] = adjacency.adj_starts, adjacency.adjacent
        return real(nparts, adjacency=adjacency, warn_on_copies=True, **kw)

    monkeypatch.setattr(pymetis, "part_graph", spy)
    import warnings
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # pymetis warns when it has to copy
        metis_labels(g.indptr, g.indices, 4, seed=0)
    idx = metis_index_dtype()
    assert seen["xadj"].dtype == idx and seen["adjncy"].dtype == idx
    if g.indptr.dtype == idx:
        assert np.shares_memory(seen["xadj"], g.indptr)
    if g.indices.dtype == idx:
        assert np.shares_memory(seen["adjncy"], g.indices)


def test_metis_partition_unchanged_by_the_input_type():
    g = rmat(3000, 30000, seed=2)
    for k in (2, 8, 16):  # recursive bisection up to 8 parts, k-way above
        _, want = pymetis.part_graph(k, adjacency=pymetis.CSRAdjacency(g.indptr.astype(np.int32), g.indices.astype(np.int32)),
                                     options=pymetis.Options(seed=0))
        np.testing.assert_array_equal(metis_partition(g, k, seed=0).parts, np.asarray(want, dtype=np.int32))
