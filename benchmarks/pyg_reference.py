"""An outside reference for netweave's trainer: the same datasets trained the way PyG's examples do.

Nothing here imports netweave's training code. The graphs are read by PyG's own ``Planetoid``
reader (from the raw ``ind.*`` files, no download) or, for gnn-benchmark ``.npz`` files, by the
few lines of scipy their README gives; the models are PyG's layers as in ``examples/gcn.py``
(``GCNConv`` with its own normalisation, ``F.dropout``), trained with PyG's transform
``NormalizeFeatures`` and Adam. The only thing taken from netweave is the train/val/test split of
the ``.npz`` graphs, which ship without one (Shchur et al.'s 20/30 per class, seed 0); the caller
checks that both sides read the same labels, so those masks pick the same vertices.

Recipes (the literature's, written out here on their own):
* GCN: Kipf & Welling §5.2 / PyG ``examples/gcn.py`` — 16 hidden, dropout 0.5, lr 0.01,
  weight decay 5e-4 on the first layer only.
* GraphSAGE (mean) and GIN: 64 hidden, dropout 0.5, lr 0.01, weight decay 5e-4 on all layers.

The ``.npz`` copies hold pickled scipy matrices; they are unpickled here by a small allow-list of
numpy and scipy classes of this script's own (not netweave's loader), so a crafted file cannot run code.
"""

from __future__ import annotations

import io
import pickle
import shutil
import tempfile
import zipfile
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import scipy.sparse as sp
import torch
import torch.nn.functional as F
import torch_geometric.transforms as T
from torch_geometric.data import Data
from torch_geometric.datasets import Planetoid
from torch_geometric.nn import GCNConv, GINConv, SAGEConv
from torch_geometric.utils import to_undirected

HIDDEN = {"gcn": 16, "sage": 64, "gin": 64}


@dataclass
class ReferenceRun:
    """One PyG training run: accuracies after the last epoch and at the best validation epoch."""

    final_test_acc: float
    test_acc_at_best_val: float
    final_loss: float


def planetoid(directory: Path, name: str) -> Data:
    """PyG's ``Planetoid`` reader on the raw files of ``directory`` (copied to a scratch root)."""
    with tempfile.TemporaryDirectory(prefix="nw-pyg-") as root:
        raw = Path(root) / name / "raw"
        raw.mkdir(parents=True)
        for f in directory.glob(f"ind.{name.lower()}.*"):
            shutil.copy(f, raw / f.name)
        return Planetoid(root, name, transform=T.NormalizeFeatures())[0]


class _NumpyScipyOnly(pickle.Unpickler):
    """Unpickles numpy arrays and scipy sparse matrices, nothing else."""

    NAMES = {"_reconstruct", "ndarray", "dtype", "scalar", "_frombuffer", "csr_matrix", "csc_matrix", "coo_matrix"}

    def find_class(self, module: str, name: str):
        if module.split(".")[0] in ("numpy", "scipy") and name in self.NAMES:
            return super().find_class(module, name)
        raise pickle.UnpicklingError(f"{module}.{name} is not a numpy or scipy array type")


def npz_member(path: Path, key: str):
    """One member of an ``.npz``: plain arrays by numpy without pickle, object arrays (pickled
    scipy matrices) through :class:`_NumpyScipyOnly`."""
    with zipfile.ZipFile(path) as zf:
        raw = io.BytesIO(zf.read(f"{key}.npy"))
    version = np.lib.format.read_magic(raw)
    read_header = np.lib.format.read_array_header_1_0 if version == (1, 0) else np.lib.format.read_array_header_2_0
    _, _, dtype = read_header(raw)
    if not dtype.hasobject:
        raw.seek(0)
        return np.lib.format.read_array(raw, allow_pickle=False)
    return _NumpyScipyOnly(raw, encoding="latin1").load()


def gnn_benchmark(path: Path, masks: tuple[np.ndarray, np.ndarray, np.ndarray]) -> Data:
    """A gnn-benchmark ``.npz`` (pickled scipy ``adj_matrix``/``node_attr``, ``node_label``) as PyG Data."""
    adj = sp.coo_matrix(npz_member(path, "adj_matrix").item())
    x = torch.tensor(sp.csr_matrix(npz_member(path, "node_attr").item()).toarray(), dtype=torch.float32)
    y = torch.tensor(np.asarray(npz_member(path, "node_label")), dtype=torch.long)
    edge_index = torch.tensor(np.stack([adj.row, adj.col]), dtype=torch.long)
    edge_index = edge_index[:, edge_index[0] != edge_index[1]]
    data = Data(x=x, y=y, edge_index=to_undirected(edge_index, num_nodes=x.shape[0]))
    data.train_mask, data.val_mask, data.test_mask = (torch.from_numpy(m) for m in masks)
    return T.NormalizeFeatures()(data)


class Net(torch.nn.Module):
    """Two PyG layers with dropout before each, ReLU between (PyG ``examples/gcn.py``)."""

    def __init__(self, model: str, d_in: int, hidden: int, classes: int):
        super().__init__()
        if model == "gcn":
            self.conv1, self.conv2 = GCNConv(d_in, hidden, cached=True), GCNConv(hidden, classes, cached=True)
        elif model == "sage":
            self.conv1, self.conv2 = SAGEConv(d_in, hidden), SAGEConv(hidden, classes)
        else:
            def mlp(a, b):
                return torch.nn.Sequential(torch.nn.Linear(a, b), torch.nn.ReLU(), torch.nn.Linear(b, b))
            self.conv1, self.conv2 = GINConv(mlp(d_in, hidden)), GINConv(mlp(hidden, classes))

    def forward(self, x, edges):
        x = F.dropout(x, p=0.5, training=self.training)
        x = self.conv1(x, edges).relu()
        x = F.dropout(x, p=0.5, training=self.training)
        return self.conv2(x, edges)


def train(data: Data, model: str, seed: int, epochs: int = 200) -> ReferenceRun:
    """Train ``model`` on ``data`` for ``epochs`` full-batch Adam steps; seed fixes init and dropout."""
    torch.manual_seed(seed)
    net = Net(model, data.num_features, HIDDEN[model], int(data.y.max()) + 1)
    if model == "gcn":
        edges = data.edge_index
        groups = [dict(params=net.conv1.parameters(), weight_decay=5e-4),
                  dict(params=net.conv2.parameters(), weight_decay=0.0)]
    else:  # mean/sum aggregation as a sparse product: PyG's SparseTensor path, far faster than a gather
        edges = T.ToSparseTensor(layout=torch.sparse_csr)(data.clone()).adj_t
        groups = [dict(params=net.parameters(), weight_decay=5e-4)]
    optimiser = torch.optim.Adam(groups, lr=0.01)
    best_val, test_at_best, loss = -1.0, 0.0, float("nan")
    for _ in range(epochs):
        net.train()
        optimiser.zero_grad()
        out = net(data.x, edges)
        loss_t = F.cross_entropy(out[data.train_mask], data.y[data.train_mask])
        loss_t.backward()
        optimiser.step()
        loss = float(loss_t)
        net.eval()
        with torch.no_grad():
            pred = net(data.x, edges).argmax(dim=1)
        val, test = (float((pred[m] == data.y[m]).float().mean()) for m in (data.val_mask, data.test_mask))
        if val > best_val:
            best_val, test_at_best = val, test
    return ReferenceRun(final_test_acc=test, test_acc_at_best_val=test_at_best, final_loss=loss)
