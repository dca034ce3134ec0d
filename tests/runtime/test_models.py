"""The models on one worker equal their textbook formulas on the whole graph."""

import numpy as np
import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("torch_geometric")

from netweave.graph import erdos_renyi  # noqa: E402
from netweave.partition import Partition, comm_relation  # noqa: E402
from netweave.runtime.exchange import Exchange  # noqa: E402
from netweave.runtime.models import DistGNN, local_tensors  # noqa: E402


def whole_graph(g):
    comm = comm_relation(g, Partition(np.zeros(g.num_nodes, dtype=np.int32), 1, "one"))
    local = comm.local_graph(g, 0)
    return local_tensors(local, g.degrees), Exchange("none", local.global_ids, local.num_local, g.num_nodes)


def dense_adjacency(g):
    a = np.zeros((g.num_nodes, g.num_nodes))
    a[g.edge_sources(), g.indices] = 1.0
    return a


@pytest.mark.parametrize("seed,transform_first", [(0, False), (1, False), (0, True)])
def test_gcn_is_symmetric_normalised_propagation(seed, transform_first):
    g = erdos_renyi(80, 300, seed=seed)
    tensors, exchange = whole_graph(g)
    torch.manual_seed(seed)
    model = DistGNN("gcn", [6, 5, 3], dropout=0.0, seed=0, transform_first=transform_first).double().eval()
    x = torch.randn(g.num_nodes, 6, dtype=torch.float64)
    a_hat = dense_adjacency(g) + np.eye(g.num_nodes)
    d = a_hat.sum(axis=1)
    norm = torch.from_numpy(a_hat / np.sqrt(np.outer(d, d)))
    h = x
    for i, conv in enumerate(model.convs):
        h = norm @ (h @ conv.lin.weight.T) + conv.bias
        h = torch.relu(h) if i == 0 else h
    with torch.no_grad():
        # GCN weights are stored as float32, hence the tolerance.
        np.testing.assert_allclose(model(x, tensors, exchange).numpy(), h.detach().numpy(), rtol=1e-5, atol=1e-7)


@pytest.mark.parametrize("name", ["sage", "gin"])
def test_sage_mean_and_gin_sum(name):
    g = erdos_renyi(70, 250, seed=5)
    tensors, exchange = whole_graph(g)
    torch.manual_seed(0)
    model = DistGNN(name, [4, 3], dropout=0.0, seed=0).double().eval()
    x = torch.randn(g.num_nodes, 4, dtype=torch.float64)
    a = torch.from_numpy(dense_adjacency(g))
    conv = model.convs[0]
    if name == "sage":
        mean = (a @ x) / a.sum(dim=1, keepdim=True).clamp(min=1)
        expected = conv.lin_l(mean) + conv.lin_r(x)
    else:
        expected = conv.nn(x + a @ x)
    with torch.no_grad():
        np.testing.assert_allclose(model(x, tensors, exchange).numpy(), expected.numpy(), rtol=1e-10, atol=1e-12)


def test_local_graph_targets_are_own_rows():
    g = erdos_renyi(90, 400, seed=2)
    parts = Partition(np.arange(g.num_nodes, dtype=np.int32) % 3, 3, "mod")
    local = comm_relation(g, parts).local_graph(g, 1)
    t = local_tensors(local, g.degrees)
    adj, gcn = t.adj.to_dense().numpy(), t.gcn_adj.to_dense().numpy()
    assert adj.shape == gcn.shape == (t.num_local, t.num_out)
    dst, src = np.nonzero(adj)  # rows are the own targets, columns own or halo sources
    gsrc, gdst = local.global_ids[src], local.global_ids[dst]
    expected = np.zeros((g.num_nodes, g.num_nodes))
    expected[g.edge_sources(), g.indices] = 1
    assert adj.sum() == expected[local.global_ids[: t.num_local]].sum() and np.all(expected[gdst, gsrc] == 1)
    d = g.degrees + 1.0
    np.testing.assert_allclose(gcn[dst, src], 1 / np.sqrt(d[gsrc] * d[gdst]), rtol=1e-6)
    np.testing.assert_allclose(np.diag(gcn[:, : t.num_local]), 1 / d[local.global_ids[: t.num_local]], rtol=1e-6)


def test_exchange_widths_and_transform_first_is_gcn_only():
    from netweave.errors import NetweaveError
    from netweave.runtime.models import exchange_widths

    assert exchange_widths([767, 128, 10], False) == [767, 128]
    assert exchange_widths([767, 128, 10], True) == [128, 10]
    assert exchange_widths([8, 16, 4], True) == [8, 4]  # a widening layer still sends its input
    assert DistGNN("gcn", [8, 16, 4], 0.0, 0, transform_first=True).transform_first == [False, True]
    with pytest.raises(NetweaveError, match="GCN"):
        DistGNN("sage", [8, 16, 4], 0.0, 0, transform_first=True)
