"""The default recipe: PyG's feature normalisation, Kipf & Welling's first-layer weight decay,
and a warning when a run collapses."""

import math

import numpy as np
import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("torch_geometric")
import torch_geometric.transforms as T  # noqa: E402
from torch_geometric.data import Data  # noqa: E402

from netweave.graph import load_dataset  # noqa: E402
from netweave.scenarios import TrainScenario  # noqa: E402
from netweave.runtime.models import DistGNN  # noqa: E402
from netweave.runtime.recipe import RECIPES, feature_shift, normalize_rows, param_groups  # noqa: E402
from netweave.runtime.report import collapse_warning  # noqa: E402
from netweave.runtime.trainer import RankResult  # noqa: E402


@pytest.mark.parametrize("kind", ["cora", "signed"])
def test_normalisation_is_pygs_normalize_features_on_any_split_of_the_rows(kind):
    if kind == "cora":
        x = load_dataset("cora").features  # sparse bag of words
    else:  # dense, negative values, rows summing below 1: PyG shifts by the global min and clamps at 1
        x = np.random.default_rng(0).normal(size=(50, 7)).astype(np.float32) * 0.01
    expected = T.NormalizeFeatures()(Data(x=torch.tensor(x.toarray() if hasattr(x, "toarray") else x))).x.numpy()
    rows = np.random.default_rng(1).permutation(x.shape[0])
    halves = [rows[: len(rows) // 3], rows[len(rows) // 3:]]
    for part in halves:  # each worker normalises its own rows with the graph-wide shift
        np.testing.assert_allclose(normalize_rows(x[part], feature_shift(x)), expected[part], rtol=1e-6, atol=1e-7)


def test_gcn_decays_only_its_first_layer_and_sage_every_layer():
    gcn = DistGNN("gcn", [10, 16, 3], 0.5, 0)
    groups = param_groups(gcn.convs, 5e-4, RECIPES["gcn"].decay_first_layer_only)
    assert [g["weight_decay"] for g in groups] == [5e-4, 0.0]
    assert {id(p) for p in groups[0]["params"]} == {id(p) for p in gcn.convs[0].parameters()}
    sage = DistGNN("sage", [10, 64, 3], 0.5, 0)
    (only,) = param_groups(sage.convs, 5e-4, RECIPES["sage"].decay_first_layer_only)
    assert len(only["params"]) == len(list(sage.parameters())) and only["weight_decay"] == 5e-4


def test_unset_options_take_the_models_recipe_and_set_ones_win():
    assert (TrainScenario(model="gcn").hidden, TrainScenario(model="sage").hidden) == (16, 64)
    c = TrainScenario(model="gcn", hidden=32, weight_decay=0.0, decay_first_layer_only=False)
    assert (c.hidden, c.weight_decay, c.decay_first_layer_only, c.dropout) == (32, 0.0, False, 0.5)


def rank(spread: float, scale: float = 3.0) -> RankResult:
    return RankResult(0, np.zeros((1, 5)), np.zeros((1, 7)), np.arange(3), None, spread, scale)


def test_collapse_is_constant_logits_or_a_loss_stuck_at_ln_c():
    c = 8
    learning = np.linspace(2.1, 0.3, 200)
    assert collapse_warning([rank(4.0)], learning, c) is None
    assert "same logits" in collapse_warning([rank(0.0)], learning, c)
    stuck = np.full(200, math.log(c) + 1e-4)
    assert "stayed at ln C" in collapse_warning([rank(0.5)], stuck, c)
    assert collapse_warning([rank(0.5)], stuck[:20], c) is None  # a short run may still be near ln C
    diverged = learning.copy()
    diverged[-1] = np.nan
    assert "not finite" in collapse_warning([rank(4.0)], diverged, c)
    assert "not finite" in collapse_warning([rank(float("nan"), float("nan"))], learning, c)


@pytest.mark.slow
def test_amazon_photo_sage_learns_and_the_raw_recipe_is_flagged(shared):
    """The README's example collapsed to ln 8 with raw counts; the recipe learns, and the old
    settings are reported as collapsed instead of passing silently."""
    spec = str(shared / "gnn_benchmark_npz" / "amazon_photo.npz")
    good = TrainScenario(dataset=spec, model="sage", epochs=100, seed=0).run()
    assert good.final_test_acc > 0.8 and not good.collapsed
    raw = TrainScenario(dataset=spec, model="sage", epochs=100, seed=0, hidden=16, normalize_features=False).run()
    assert raw.collapsed and raw.warnings
