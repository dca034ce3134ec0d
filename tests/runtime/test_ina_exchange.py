"""The sum exchange (runtime/ina_exchange.py): 4 workers through the in-process reference
transport give the logits and parameter gradients of plain single-process GCN on cora."""

import numpy as np
import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("torch_geometric")

from netweave.graph import load_dataset  # noqa: E402
from netweave.partition import metis_partition  # noqa: E402
from netweave.runtime.ina_exchange import (ReferenceHub, SumExchange, cross_adjacency, gcn_scale,  # noqa: E402
                                           run_workers, sum_layout, sum_local_tensors)
from netweave.runtime.models import DistGNN  # noqa: E402
from netweave.runtime.recipe import feature_shift, normalize_rows  # noqa: E402

WORKERS = 4


@pytest.fixture(scope="module")
def cora():
    g = load_dataset("cora")
    x = normalize_rows(g.features, feature_shift(g.features))
    parts = metis_partition(g, WORKERS, 0).parts.astype(np.int64)
    return g, x, parts


def plain_gcn(g, x, model):
    """Single process, plainly: dense Â = D^-1/2 (A + I) D^-1/2, logits = Â relu(Â X W1ᵀ + b1) W2ᵀ + b2."""
    n = g.num_nodes
    a = np.zeros((n, n))
    a[np.repeat(np.arange(n), np.diff(g.indptr)), g.indices] = 1.0
    c = gcn_scale(np.diff(g.indptr))
    a_hat = torch.tensor((a + np.eye(n)) * c[:, None] * c[None, :], dtype=torch.float64)
    h = torch.tensor(x, dtype=torch.float64)
    for i, conv in enumerate(model.convs):
        h = a_hat @ (h @ conv.lin.weight.double().T) + conv.bias.double()
        if i < len(model.convs) - 1:
            h = torch.relu(h)
    return h


class Recording:
    """A transport that records the width of every exchange it carries."""

    def __init__(self, inner, widths):
        self.inner, self.widths = inner, widths

    def exchange(self, layer, direction, rows):
        self.widths.append((layer, direction, rows.shape[1]))
        return self.inner.exchange(layer, direction, rows)


class Split:
    """A transport that starts an exchange (``begin``) and finishes it later (``end``), as the
    testbed's do; ``events`` gets the order of both."""

    def __init__(self, inner, events):
        self.inner, self.events, self.args = inner, events, None

    def begin(self, layer, direction, rows):
        self.events.append("begin")
        self.args = (layer, direction, rows.copy())

    def end(self):
        self.events.append("end")
        return self.inner.exchange(*self.args)

    def exchange(self, layer, direction, rows):
        raise AssertionError("an overlapped exchange is begun and ended")


class Recorded:
    """A sparse operator whose products go into ``events`` as ``"own"``."""

    def __init__(self, a, events):
        self.a, self.events = a, events

    def to(self, dtype):
        return Recorded(self.a.to(dtype), self.events)

    def __matmul__(self, x):
        self.events.append("own")
        return self.a @ x


def distributed(g, x, parts, model, scale=None, transform_first=False, widths=None, overlap_local=False, events=None):
    """Logits (global order) and summed parameter gradients of the 4 workers through the reference
    hub; with ``overlap_local``, each layer's own sum through :meth:`SumExchange.propagate`, and with
    ``events`` (a list) over a :class:`Split` transport, worker 0 recording there the order of its
    exchanges' begins and ends and of its own sums."""
    layouts = [sum_layout(g.indptr, g.indices, parts, r) for r in range(WORKERS)]
    if scale is not None:  # a deliberately wrong layout, for the test that must fail
        layouts = [scale(lay) for lay in layouts]
    hub = ReferenceHub(cross_adjacency(g.indptr, g.indices, parts), layouts)
    y = torch.from_numpy(g.labels.astype(np.int64))
    train = torch.from_numpy(g.train_mask)
    num_train = int(train.sum())
    state = model.state_dict()

    def worker(rank):
        lay = layouts[rank]
        m = DistGNN("gcn", [x.shape[1], 16, g.num_classes], 0.0, 0, transform_first)
        m.load_state_dict(state)
        transport = hub.transport(rank)
        if events is not None:
            transport = Split(transport, events if rank == 0 else [])
        ex = SumExchange(lay, Recording(transport, widths) if widths is not None and rank == 0 else transport, len(m.convs),
                         overlap_local=overlap_local)
        if events is not None and rank == 0:
            ex.own, ex.own_t = Recorded(ex.own, events), Recorded(ex.own_t, events)
        own = torch.from_numpy(lay.own)
        logits = m(torch.from_numpy(x[lay.own]), sum_local_tensors(lay), ex)
        mask = train[own]
        loss = torch.nn.functional.cross_entropy(logits[mask], y[own][mask], reduction="sum") / num_train
        loss.backward()
        return lay.own, logits.detach().numpy(), [p.grad.numpy().copy() for p in m.parameters()], ex.counter.calls

    out = run_workers(worker, WORKERS)
    logits = np.zeros((g.num_nodes, g.num_classes))
    for own, lg, _, _ in out:
        logits[own] = lg
    grads = [sum(o[2][i] for o in out) for i in range(len(out[0][2]))]
    return logits, grads, [o[3] for o in out]


def large_model(g, x):
    """A seeded 2-layer GCN with its weights times 4: logits large enough for the tolerance to mean something."""
    torch.manual_seed(0)
    model = DistGNN("gcn", [x.shape[1], 16, g.num_classes], 0.0, 0)
    with torch.no_grad():
        for p in model.parameters():
            p.mul_(4.0)
    return model


def reference(g, x, model):
    ref = plain_gcn(g, x, model)
    train = torch.from_numpy(g.train_mask)
    y = torch.from_numpy(g.labels.astype(np.int64))
    m64 = [p for p in model.parameters()]
    loss = torch.nn.functional.cross_entropy(ref[train], y[train], reduction="mean")
    grads = torch.autograd.grad(loss, m64)
    return ref.detach().numpy(), [gr.numpy() for gr in grads]


@pytest.mark.parametrize("transform_first", [False, True])
def test_logits_and_gradients_equal_single_process(cora, transform_first):
    g, x, parts = cora
    model = large_model(g, x)
    ref_logits, ref_grads = reference(g, x, model)
    widths = []
    logits, grads, calls = distributed(g, x, parts, model, transform_first=transform_first, widths=widths)
    assert np.abs(ref_logits).max() > 0.05
    np.testing.assert_allclose(logits, ref_logits, atol=1e-5, rtol=0)
    assert len(grads) == len(ref_grads)
    for a, b in zip(grads, ref_grads):
        np.testing.assert_allclose(a, b, atol=1e-5, rtol=0)
    if transform_first:  # h W on the wire: 16 and 7 values a row, forward and backward (W needs the gradient)
        assert calls == [4] * WORKERS
        assert sorted(widths) == [(0, 0, 16), (0, 1, 16), (1, 0, g.num_classes), (1, 1, g.num_classes)]
    else:  # two forward exchanges, one backward (the features need no gradient)
        assert calls == [3] * WORKERS
        assert sorted(widths) == [(0, 0, x.shape[1]), (1, 0, 16), (1, 1, 16)]


@pytest.mark.parametrize("split", [False, True])
def test_the_own_sum_while_the_exchange_is_on_the_wire_gives_the_same_logits_and_gradients(cora, split):
    """``overlap_local`` (h W on the wire): each layer's own neighbours' sum between the exchange's
    begin and end, forward and backward (``split``: over a transport that has both; else the
    exchange, then the own sum); the logits and gradients of plain single-process GCN."""
    g, x, parts = cora
    model = large_model(g, x)
    ref_logits, ref_grads = reference(g, x, model)
    events = [] if split else None
    logits, grads, calls = distributed(g, x, parts, model, transform_first=True, overlap_local=True, events=events)
    assert np.abs(ref_logits).max() > 0.05
    np.testing.assert_allclose(logits, ref_logits, atol=1e-5, rtol=0)
    for a, b in zip(grads, ref_grads):
        np.testing.assert_allclose(a, b, atol=1e-5, rtol=0)
    assert calls == [4] * WORKERS
    if split:  # two layers forward, two backward: each own sum inside its exchange
        assert events == ["begin", "own", "end"] * 4


def test_a_wrong_scaling_is_caught(cora):
    """Sending h instead of c ⊙ h (no sender scaling) must not pass the same comparison."""
    from dataclasses import replace

    g, x, parts = cora
    model = large_model(g, x)
    ref_logits, _ = reference(g, x, model)
    logits, _, _ = distributed(g, x, parts, model, scale=lambda lay: replace(lay, c_boundary=np.ones_like(lay.c_boundary)))
    assert np.abs(logits - ref_logits).max() > 1e-3


def test_dropout_follows_the_one_worker_model(cora):
    """With vertex-keyed dropout in training mode the 4 workers equal DistGNN on the whole graph."""
    from netweave.partition import Partition, comm_relation
    from netweave.runtime.exchange import Exchange
    from netweave.runtime.models import local_tensors

    g, x, parts = cora
    torch.manual_seed(1)
    model = DistGNN("gcn", [x.shape[1], 16, g.num_classes], 0.5, 3)
    whole = comm_relation(g, Partition(np.zeros(g.num_nodes, np.int32), 1, "one")).local_graph(g, 0)
    one = model(torch.from_numpy(x), local_tensors(whole, g.degrees), Exchange("none", whole.global_ids, g.num_nodes,
                                                                                g.num_nodes)).detach().numpy()
    layouts = [sum_layout(g.indptr, g.indices, parts, r) for r in range(WORKERS)]
    hub = ReferenceHub(cross_adjacency(g.indptr, g.indices, parts), layouts)
    state = model.state_dict()

    def worker(rank):
        m = DistGNN("gcn", [x.shape[1], 16, g.num_classes], 0.5, 3)
        m.load_state_dict(state)
        lay = layouts[rank]
        with torch.no_grad():
            return lay.own, m(torch.from_numpy(x[lay.own]), sum_local_tensors(lay),
                              SumExchange(lay, hub.transport(rank), 2)).numpy()

    got = np.zeros_like(one)
    for own, lg in run_workers(worker, WORKERS):
        got[own] = lg
    np.testing.assert_allclose(got, one, atol=1e-5, rtol=0)
