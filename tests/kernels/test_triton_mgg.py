"""The MGG Triton kernel on CPU (Triton's interpreter, which the module switches on only around the
kernel when there is no GPU) against the reference: random graphs, dims and (ps, dist, wpb), empty
rows, vertices whose neighbours are all remote, and gradients; importing and running it changes no
environment variable."""

import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("triton")

from netweave.graph import rmat  # noqa: E402
from netweave.graph.graph import from_edges  # noqa: E402
from netweave.kernels import Config, aggregate, mgg_layout, shard_embeddings  # noqa: E402
from netweave.kernels.triton_mgg import mgg_aggregate, mgg_sum, non_overlapped_sum  # noqa: E402


@pytest.mark.parametrize("seed,gpus,dim,config", [
    (0, 2, 8, Config(4, 2, 2)), (1, 3, 5, Config(1, 1, 1)), (2, 4, 16, Config(32, 16, 16)),
    (3, 1, 3, Config(3, 5, 7)), (4, 5, 33, Config(7, 3, 1)),
])
def test_kernel_matches_the_reference(seed, gpus, dim, config):
    g = rmat(120, 500, seed=seed)  # rmat leaves isolated (empty) rows
    x = np.random.default_rng(seed).standard_normal((g.num_nodes, dim)).astype(np.float32)
    lay = mgg_layout(g.indptr, g.indices, gpus, config)
    want = aggregate(lay, shard_embeddings(x.astype(np.float64), lay), np.diff(g.indptr), "sum")
    xt = torch.from_numpy(x)
    for got in (mgg_sum(lay, xt, overlap=True), mgg_sum(lay, xt, overlap=False), non_overlapped_sum(lay, xt)):
        np.testing.assert_allclose(got.numpy(), want, rtol=1e-5, atol=1e-4)


def test_vertices_whose_neighbours_are_all_remote():
    """A bipartite graph split so that every edge crosses GPUs: the local CSRs are empty."""
    n = 40
    g = from_edges(np.arange(20), np.arange(20, 40), n)
    lay = mgg_layout(g.indptr, g.indices, 2, Config(2, 2, 1))
    assert all(w.local_ptr[-1] == 0 for w in lay.gpus) and all(w.remote_ptr[-1] > 0 for w in lay.gpus)
    x = torch.randn(n, 6)
    want = aggregate(lay, shard_embeddings(x.double().numpy(), lay), np.diff(g.indptr), "sum")
    np.testing.assert_allclose(mgg_sum(lay, x).numpy(), want, atol=1e-5)


@pytest.mark.parametrize("mode", ["sum", "mean", "gcn"])
def test_gradients_match_a_dense_product(mode):
    g = rmat(60, 240, seed=7)
    lay = mgg_layout(g.indptr, g.indices, 3, Config(4, 2, 2))
    deg = np.diff(g.indptr)
    a = torch.zeros(g.num_nodes, g.num_nodes, dtype=torch.float64)
    a[torch.as_tensor(np.repeat(np.arange(g.num_nodes), deg)), torch.as_tensor(g.indices, dtype=torch.int64)] = 1.0
    d = torch.as_tensor(np.maximum(deg, 1), dtype=torch.float64)
    if mode == "mean":
        a = a / d[:, None]
    elif mode == "gcn":
        a = a * d.rsqrt()[:, None] * d.rsqrt()[None, :]
    x = torch.randn(g.num_nodes, 4, dtype=torch.float64, requires_grad=True)
    x32 = x.detach().float().requires_grad_(True)
    out = mgg_aggregate(lay, x32, deg, mode)
    w = torch.randn_like(out)
    (out * w).sum().backward()
    (a @ x * w.double()).sum().backward()
    np.testing.assert_allclose(out.detach().numpy(), (a @ x).detach().numpy(), atol=1e-4)
    np.testing.assert_allclose(x32.grad.numpy(), x.grad.numpy(), atol=1e-4)


@pytest.mark.parametrize("triton_first", [False, True])
def test_importing_and_running_leave_the_environment_alone(triton_first):
    """Issue 16: the CPU path used to set TRITON_INTERPRET=1 for the whole process. In a fresh
    process without it (triton imported before netweave or not), importing the module and running
    the kernel leave ``os.environ`` and Triton's interpreter setting as they were."""
    code = textwrap.dedent(f"""
        import os
        if {triton_first}:
            import triton
        before = dict(os.environ)
        import numpy as np, torch
        import netweave.kernels.triton_mgg as mgg
        assert dict(os.environ) == before, "import"
        from netweave.graph import rmat
        from netweave.kernels import Config, aggregate, mgg_layout, shard_embeddings
        g = rmat(60, 240, seed=1)
        lay = mgg_layout(g.indptr, g.indices, 2, Config(4, 2, 2))
        x = np.random.default_rng(0).standard_normal((g.num_nodes, 5)).astype(np.float32)
        want = aggregate(lay, shard_embeddings(x.astype(np.float64), lay), np.diff(g.indptr), "sum")
        np.testing.assert_allclose(mgg.mgg_sum(lay, torch.from_numpy(x)).numpy(), want, rtol=1e-5, atol=1e-4)
        import triton
        assert dict(os.environ) == before, "run"
        assert torch.cuda.is_available() or not triton.knobs.runtime.interpret
        print("clean")
    """)
    env = {k: v for k, v in os.environ.items() if k != "TRITON_INTERPRET"}
    done = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0 and "clean" in done.stdout, done.stderr[-2000:]
