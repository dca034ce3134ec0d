"""Vertex-keyed dropout: the same mask for a vertex whatever rows it comes with."""

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from netweave.runtime.dropout import dropout_key, keep_mask, vertex_dropout  # noqa: E402


def test_mask_depends_only_on_vertex_column_and_key():
    ids = torch.arange(1000)
    x = torch.randn(1000, 8, requires_grad=True)
    full = vertex_dropout(x, ids, 0.5, dropout_key(3, 7, 1), True)
    perm = torch.randperm(1000)[:300]
    part = vertex_dropout(x[perm], ids[perm], 0.5, dropout_key(3, 7, 1), True)
    assert torch.equal(full[perm], part)
    other = vertex_dropout(x, ids, 0.5, dropout_key(3, 8, 1), True)
    assert not torch.equal(full, other)  # a new step draws a new mask


def test_sparse_path_equals_dense_path():
    rng = np.random.default_rng(0)
    dense = rng.random((400, 50)) * (rng.random((400, 50)) < 0.1)
    ids = torch.from_numpy(rng.permutation(10_000)[:400])
    x = torch.from_numpy(dense.astype(np.float32))
    key = dropout_key(0, 1, 0)
    no_grad_out = vertex_dropout(x, ids, 0.3, key, True)  # hashes non-zeros only
    grad_out = vertex_dropout(x.clone().requires_grad_(True), ids, 0.3, key, True)
    assert torch.equal(no_grad_out, grad_out.detach())


@pytest.mark.parametrize("p", [0.1, 0.5, 0.8])
def test_keep_rate_and_scaling(p):
    v = torch.arange(200_000).repeat_interleave(4)
    c = torch.arange(4).repeat(200_000)
    kept = keep_mask(v, c, p, dropout_key(1, 0, 0)).double().mean().item()
    assert abs(kept - (1 - p)) < 0.005
    x = torch.ones(50_000, 4)
    y = vertex_dropout(x, torch.arange(50_000), p, dropout_key(2, 0, 0), True)
    assert abs(y.mean().item() - 1.0) < 0.02  # inverted dropout keeps the expectation


def test_eval_and_zero_p_are_identity():
    x = torch.randn(10, 3)
    assert vertex_dropout(x, torch.arange(10), 0.5, 1, False) is x
    assert vertex_dropout(x, torch.arange(10), 0.0, 1, True) is x


def test_numba_kernel_and_torch_hash_agree():
    ids = torch.from_numpy(np.random.default_rng(1).integers(0, 2**40, 300))
    x = torch.ones(300, 7)
    key = dropout_key(9, 2, 1)
    kernel = vertex_dropout(x, ids, 0.4, key, True) > 0
    hashed = keep_mask(ids.repeat_interleave(7), torch.arange(7).repeat(300), 0.4, key).view(300, 7)
    assert torch.equal(kernel, hashed)
