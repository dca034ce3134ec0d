"""The docs' complete example (a GAT netweave does not ship), run as written on 4 ranks, equals the
same GAT trained by plain PyG in one process on the whole graph.

The reference shares no netweave code: PyG's own Planetoid reader and ``NormalizeFeatures`` on the
raw Cora files, ``GATConv`` on the full ``edge_index``, a mean cross-entropy, and dropout masks
computed here in numpy from the formula ``docs/distributed.md`` and ``netweave.runtime.dropout``
document (a lowbias32-style hash of seed, step, layer, vertex and column).
"""

import importlib
import sys
from pathlib import Path

import numpy as np
import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("torch_geometric")
import torch.nn.functional as F  # noqa: E402

DOCS = Path(__file__).resolve().parents[2] / "docs" / "distributed.md"
MARK = "<!-- example: gat_example.py -->"
M32 = 0xFFFFFFFF


def example_code() -> str:
    """The python block that follows the example's marker in docs/distributed.md."""
    text = DOCS.read_text()
    assert MARK in text, "docs/distributed.md lost its example marker"
    after = text.split(MARK, 1)[1]
    assert after.lstrip().startswith("```python"), "the example marker must sit right above its code block"
    return after.split("```python\n", 1)[1].split("\n```", 1)[0]


@pytest.fixture(scope="module")
def example(tmp_path_factory):
    """The example, saved as gat_example.py and imported (spawned ranks import it by that name)."""
    directory = tmp_path_factory.mktemp("example")
    (directory / "gat_example.py").write_text(example_code())
    sys.path.insert(0, str(directory))
    try:
        yield importlib.import_module("gat_example")
    finally:
        sys.path.remove(str(directory))
        sys.modules.pop("gat_example", None)


# -- the reference: plain PyG, one process, the whole graph -----------------------------------------

def _mix(h: np.ndarray) -> np.ndarray:
    h = h ^ (h >> np.uint64(16))
    h = (h * np.uint64(0x7FEB352D)) & np.uint64(M32)
    h = h ^ (h >> np.uint64(15))
    h = (h * np.uint64(0x5BD1E995)) & np.uint64(M32)
    return h ^ (h >> np.uint64(16))


def reference_dropout(x, p: float, seed: int, step: int, layer: int):
    """Entry (v, c) kept iff mix(mix(mix((v & M) ^ key) ^ (v >> 32)) ^ c) >= p * 2**32, with
    key = mix(mix((seed·0x9E3779B1 + step·0x85EBCA77 + layer·0xC2B2AE3D) & M) ^ (seed >> 32))."""
    salt = np.array([(seed * 0x9E3779B1 + step * 0x85EBCA77 + layer * 0xC2B2AE3D) & M32], dtype=np.uint64)
    key = _mix(_mix(salt) ^ np.uint64((seed >> 32) & M32))[0]
    v = np.arange(x.shape[0], dtype=np.uint64)[:, None]
    c = np.arange(x.shape[1], dtype=np.uint64)[None, :]
    h = _mix(_mix(_mix((v & np.uint64(M32)) ^ key) ^ (v >> np.uint64(32))) ^ c)
    keep = (h >= np.uint64(int(p * 2.0 ** 32))).astype(np.float32)
    return x * torch.from_numpy(keep * np.float32(1.0 / (1.0 - p)))


def reference_logits(example, planetoid_dir: Path) -> np.ndarray:
    import torch_geometric.transforms as T
    from torch_geometric.io import read_planetoid_data
    from torch_geometric.nn import GATConv

    data = T.NormalizeFeatures()(read_planetoid_data(str(planetoid_dir), "cora"))
    ex = example

    class GAT(torch.nn.Module):
        def __init__(self, in_dim, classes):
            super().__init__()
            self.conv1 = GATConv(in_dim, ex.HIDDEN, heads=ex.HEADS)
            self.conv2 = GATConv(ex.HIDDEN * ex.HEADS, classes, heads=1)

        def forward(self, x, edge_index, step):
            h = reference_dropout(x, ex.DROPOUT, ex.SEED, step, 0) if self.training else x
            h = F.elu(self.conv1(h, edge_index))
            h = reference_dropout(h, ex.DROPOUT, ex.SEED, step, 1) if self.training else h
            return self.conv2(h, edge_index)

    classes = int(data.y.max()) + 1
    model = GAT(data.num_features, classes)
    model.load_state_dict(ex.build_model(data.num_features, classes).state_dict())  # the same initial weights
    optimiser = torch.optim.Adam(model.parameters(), lr=ex.LR, weight_decay=ex.WEIGHT_DECAY)
    for epoch in range(ex.EPOCHS):
        model.train()
        optimiser.zero_grad()
        out = model(data.x, data.edge_index, epoch)
        F.cross_entropy(out[data.train_mask], data.y[data.train_mask]).backward()
        optimiser.step()
    model.eval()
    with torch.no_grad():
        return model(data.x, data.edge_index, ex.EPOCHS).numpy()


@pytest.mark.slow
def test_the_docs_gat_on_four_ranks_equals_single_process_pyg(example, shared, capfd):
    logits = example.main()  # the example's own launch line: 4 ranks, SPST, Cora
    expected = reference_logits(example, shared / "planetoid")
    assert logits.shape == expected.shape == (2708, 7)
    assert np.abs(logits - expected).max() <= 1e-5
    assert "test accuracy" in capfd.readouterr().out  # the example's report line (rank 0 prints it)


def test_the_reference_dropout_is_netweaves_documented_hash():
    """The numpy masks above are the formula the runtime implements (else the slow test could not pass)."""
    from netweave.runtime.dropout import dropout_key, vertex_dropout

    x = torch.rand(300, 40)
    ours = vertex_dropout(x.clone().requires_grad_(True), torch.arange(300), 0.6, dropout_key(7, 3, 1), True)
    assert torch.equal(ours.detach(), reference_dropout(x, 0.6, 7, 3, 1))


def test_the_example_is_a_module_of_the_documented_shape(example):
    assert callable(example.train) and callable(example.main) and example.EPOCHS >= 50
    assert "nwd.launch(train" in example_code() and "ctx.sync_gradients(model)" in example_code()
