"""The slot model of when a one-block exchange's sums come down (testbed/gnn/completion.py)
against a brute force that walks every worker's units and every owner's downlink one at a time,
and its choice of column slices: none on cora (sums complete while units still go up), two on a
dense reddit-like graph (they all complete at the end: up + down, against up + down / 2)."""

import numpy as np
import pytest

from netweave.testbed.gnn.completion import choose_slices, finish, layer_model, plan_order


def _plan(dataset: str, width: int = 32) -> dict:
    import tempfile

    from netweave.testbed.gnn.job import prepare_gnn_job
    from netweave.testbed.gnn.plans import load_plans

    with tempfile.TemporaryDirectory() as d:
        prepare_gnn_job(dataset, 4, 10_000_000, d, hidden=width, column_slices=1)
        return load_plans(f"{d}/plans.npz")[0]


def brute_force(p: dict, k: int) -> float:
    """Every worker sends its units' slice 0 in the plan's order, then slice 1, …, a 1/k slot each;
    a (destination, slice) is complete when its last unit's slice is in; each owner's downlink
    sends what is complete in that order, a 1/k slot each. The slot the last downlink ends in."""
    m = int(p["num_workers"])
    sent_at = {}
    for w in range(m):
        units = range(int(p["unit_ptr"][w]), int(p["unit_ptr"][w + 1]))
        t = 0.0
        for s in range(k):
            for u in units:
                t += 1.0 / k
                sent_at[u, s] = t
    complete = {}
    for u in range(p["unit_lo"].size):
        for e in range(int(p["unit_lo"][u]), int(p["unit_hi"][u])):
            for s in range(k):
                key = (int(p["dst"][e]), s)
                complete[key] = max(complete.get(key, 0.0), sent_at[u, s])
    end = 0.0
    for o in range(m):
        t = 0.0
        for c in sorted(c for (v, _), c in complete.items() if p["parts"][v] == o):
            t = max(t, c) + 1.0 / k
        end = max(end, t)
    return end


@pytest.mark.parametrize("dataset", ["cora", "reddit-like:scale=0.002"])
def test_the_model_ends_where_a_brute_force_does(dataset):
    p = _plan(dataset)
    model = layer_model(p)
    for k in (1, 2, 4):
        assert finish(model, plan_order(model), k)[0] == pytest.approx(brute_force(p, k), abs=1e-9)


def test_slices_are_chosen_where_the_sums_all_complete_at_the_end():
    sparse, dense = _plan("cora"), _plan("reddit-like:scale=0.002")
    for p, chosen in ((sparse, 1), (dense, 2)):
        model = layer_model(p)
        up = np.bincount(model["worker"]).max()
        down = np.bincount(model["owner"], minlength=4).max()
        whole = finish(model, plan_order(model))[0]
        assert max(up, down) <= whole <= up + down
        assert choose_slices(p, 32) == chosen
    model = layer_model(dense)  # every sum waits for the last units: up + down, and up + down / 2 in two slices
    up, down = np.bincount(model["worker"]).max(), np.bincount(model["owner"], minlength=4).max()
    assert finish(model, plan_order(model))[0] >= 0.95 * (up + down)
    assert finish(model, plan_order(model), 2)[0] <= up + down / 2 + 1
    assert choose_slices(dense, 30) == 1 and choose_slices(dense, 16) == 1  # 2 does not divide it; 8 values a slice
