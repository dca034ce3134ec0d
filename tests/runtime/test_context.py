"""RankContext: every rank's local graph, weights and rows give PyG's full-graph layers exactly.

The ranks are built in this process for a 4-part partition; the exchange is stood in for by
indexing the full matrix with ``ctx.global_ids`` (what the graph allgather returns; its own tests
check that), so each layer is checked against PyG on the whole graph, with PyG's own normalisation.
"""

import numpy as np
import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("torch_geometric")
from torch_geometric.nn import GATConv, GCNConv, GINConv, SAGEConv  # noqa: E402

from netweave.errors import NetweaveError  # noqa: E402
from netweave.runtime.context import rank_context  # noqa: E402
from netweave.scenarios import DistributedScenario  # noqa: E402

DATASET = "rmat:n=300,m=1500,feat=12,classes=3,seed=4"
WORLD = 4


@pytest.fixture(scope="module")
def ranks():
    job, graph = DistributedScenario(dataset=DATASET, workers=WORLD, comm="allreduce", method="random",
                                     seed=1).prepare()
    return graph, [rank_context(job, graph, r, WORLD) for r in range(WORLD)]


def full_edge_index(graph) -> torch.Tensor:
    return torch.from_numpy(np.stack([graph.edge_sources(), graph.indices]).astype(np.int64))


def test_rows_are_own_ascending_then_halo_by_owner(ranks):
    graph, contexts = ranks
    owners = np.zeros(graph.num_nodes, int)
    for c in contexts:
        owners[c.own_ids.numpy()] = c.rank
    seen = np.concatenate([c.own_ids.numpy() for c in contexts])
    assert np.array_equal(np.sort(seen), np.arange(graph.num_nodes))  # every vertex owned once
    for c in contexts:
        own, halo = c.global_ids[: c.num_local].numpy(), c.global_ids[c.num_local:].numpy()
        assert np.all(np.diff(own) > 0) and c.num_out == c.global_ids.numel()
        key = owners[halo] * graph.num_nodes + halo
        assert np.all(np.diff(key) > 0) and np.all(owners[halo] != c.rank)
        # the halo is exactly the other ranks' neighbours of own vertices
        nbrs = np.unique(graph.indices[np.concatenate([np.arange(graph.indptr[v], graph.indptr[v + 1]) for v in own])])
        assert set(halo) == set(nbrs) - set(own)
        assert c.x.shape == (c.num_local, 12) and c.y.shape == (c.num_local,) and c.train_mask.dtype == torch.bool
        assert c.num_train == int(graph.train_mask.sum())


def test_edge_index_is_the_local_graph(ranks):
    graph, contexts = ranks
    full = set(zip(graph.edge_sources().tolist(), graph.indices.tolist()))
    total = 0
    for c in contexts:
        src, dst = c.edge_index
        assert int(dst.max()) < c.num_local and int(src.max()) < c.num_out
        ids = c.global_ids.numpy()
        local = set(zip(ids[src.numpy()].tolist(), ids[dst.numpy()].tolist()))
        assert local <= full and len(local) == src.numel()
        total += src.numel()
    assert total == len(full)  # every edge u -> v appears once, on v's owner


@pytest.mark.parametrize("layer", ["gcn", "gat", "sage", "gin"])
def test_each_rank_computes_the_full_graph_layer_on_its_own_rows(ranks, layer):
    graph, contexts = ranks
    torch.manual_seed(0)
    x = torch.randn(graph.num_nodes, 12, dtype=torch.float64)
    ei = full_edge_index(graph)
    if layer == "gcn":  # PyG's own gcn_norm on the whole graph against the context's full-degree weights
        full = GCNConv(12, 5).double()
        local = GCNConv(12, 5, normalize=False, add_self_loops=False).double()
        local.load_state_dict(full.state_dict())
        expected = full(x, ei)
        run = lambda c, h: local(h, c.gcn_edge_index, c.gcn_edge_weight.double())  # noqa: E731
        run_adj = lambda c, h: local(h, c.gcn_adj_t.to(torch.float64))  # noqa: E731
    elif layer == "gat":
        full = GATConv(12, 3, heads=2).double()
        expected = full(x, ei)
        run = lambda c, h: full(h, c.edge_index)  # noqa: E731
        run_adj = None
    elif layer == "sage":
        full = SAGEConv(12, 5).double()
        expected = full(x, ei)
        run = lambda c, h: full(h, c.edge_index)  # noqa: E731
        run_adj = lambda c, h: full((h, h[: c.num_local]), c.adj_t.to(torch.float64))  # noqa: E731
    else:
        full = GINConv(torch.nn.Sequential(torch.nn.Linear(12, 5), torch.nn.ReLU(), torch.nn.Linear(5, 5))).double()
        expected = full(x, ei)
        run = lambda c, h: full(h, c.edge_index)  # noqa: E731
        run_adj = None
    rtol, atol = (1e-6, 1e-7) if layer == "gcn" else (1e-10, 1e-12)  # GCN's weights are float32 in the context
    with torch.no_grad():
        for c in contexts:
            h_all = x[c.global_ids]  # what ctx.exchange returns
            own = c.own_ids
            np.testing.assert_allclose(run(c, h_all)[: c.num_local].numpy(), expected[own].detach().numpy(),
                                       rtol=rtol, atol=atol)
            if run_adj is not None:
                np.testing.assert_allclose(run_adj(c, h_all)[: c.num_local].numpy(), expected[own].detach().numpy(),
                                           rtol=rtol, atol=atol)


def test_keyed_dropout_and_gather_do_not_depend_on_the_partition(ranks):
    graph, contexts = ranks
    job, _ = DistributedScenario(dataset=DATASET, workers=1, seed=1).prepare()
    whole = rank_context(job, graph, 0, 1)
    x = torch.rand(graph.num_nodes, 7)
    one = whole.dropout(x, 0.5, step=3, layer=1)
    assert 0.3 < float((one == 0).float().mean()) < 0.7
    for c in contexts:
        assert torch.equal(c.dropout(x[c.own_ids], 0.5, step=3, layer=1), one[c.own_ids])
        assert torch.equal(c.dropout(x[c.global_ids], 0.5, step=3, layer=1), one[c.global_ids])  # own + halo rows
        assert c.dropout(x[c.own_ids], 0.5, step=3, layer=1, training=False) is not None
    assert not torch.equal(whole.dropout(x, 0.5, step=4, layer=1), one)
    assert np.array_equal(whole.gather(x), x.numpy())


def test_misuse_is_one_line(ranks):
    _, contexts = ranks
    c = contexts[1]
    with pytest.raises(NetweaveError, match=rf"rank 1: exchange\(\) takes the {c.num_local} own rows .* \[:ctx.num_local\]"):
        c.exchange(torch.zeros(c.num_out, 3))
    with pytest.raises(NetweaveError, match="rank 1: dropout"):
        c.dropout(torch.zeros(c.num_local + 1, 3), 0.5, step=0, layer=0)
    with pytest.raises(NetweaveError, match="rank 1: gather"):
        c.gather(torch.zeros(c.num_out, 3))
