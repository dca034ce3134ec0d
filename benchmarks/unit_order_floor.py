"""How early can an in-network exchange's sums come down? The model of one layer's exchange through
the SwitchGNN switch with everything in one block (``netweave.testbed.gnn.completion``), counted
in slots (one unit's or one sum's serialization time on a link): every worker sends its units back
to back, a destination's sum leaves the switch once its last unit is in, and each owner's downlink
takes one sum a slot in the order they complete. The exchange ends when the last downlink is
done: max(up, down) if destinations complete while units still go up, up + down if they all
complete at the end.

    python benchmarks/unit_order_floor.py reddit-like:scale=0.02 [--greedy]

Orders: the plan's, by the destinations' in-degree (units sent in the order of the first
destination they feed), and with ``--greedy`` one that repeatedly completes the destination
needing the fewest more slots on the busiest sender (minutes on reddit-like). Writes nothing;
prints the slots of each order beside up, down and up + down (BENCHMARKS.md, issue 32)."""

from __future__ import annotations

import argparse
import tempfile

import numpy as np

from netweave.testbed.gnn.completion import finish, layer_model, plan_order


def by_rank(model: dict, rank: np.ndarray) -> np.ndarray:
    """Units sent in the order of the lowest ``rank`` among the destinations they feed."""
    a = model["a"].tocsc()
    first = np.minimum.reduceat(rank[a.indices], a.indptr[:-1]) if a.nnz else np.zeros(0)
    pos = np.empty(first.size)
    for w in range(model["m"]):
        idx = np.flatnonzero(model["worker"] == w)
        pos[idx[np.argsort(first[idx], kind="stable")]] = np.arange(idx.size)
    return pos


def greedy(model: dict) -> np.ndarray:
    """Complete, one at a time, the destination whose missing units end soonest on the busiest sender."""
    a, worker, m = model["a"], model["worker"], model["m"]
    at = a.T.tocsr()
    missing = np.zeros((a.shape[0], m), np.int64)
    np.add.at(missing, (np.repeat(np.arange(a.shape[0]), np.diff(a.indptr)), worker[a.indices]), 1)
    sent, pos, count = np.zeros(a.shape[1], bool), np.zeros(a.shape[1]), np.zeros(m, np.int64)
    done = np.zeros(a.shape[0], bool)
    for _ in range(a.shape[0]):
        cost = (count[None, :] + missing).max(axis=1).astype(float)
        cost[done] = np.inf
        d = int(np.argmin(cost))
        done[d] = True
        units = a.indices[a.indptr[d]:a.indptr[d + 1]]
        units = units[~sent[units]]
        for u in units.tolist():
            pos[u], count[worker[u]] = count[worker[u]], count[worker[u]] + 1
        sent[units] = True
        if units.size:
            sub = at[units]
            np.subtract.at(missing, (sub.indices, np.repeat(worker[units], np.diff(sub.indptr))), 1)
    return pos


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("dataset")
    ap.add_argument("--workers", type=int, default=8)
    ap.add_argument("--memory", type=int, default=10_000_000)
    ap.add_argument("--hidden", type=int, default=128)
    ap.add_argument("--greedy", action="store_true", help="also the greedy order (minutes on a dense graph)")
    ap.add_argument("--columns", type=int, nargs="*", default=[],
                    help="also each order with rows sent as k column slices, slice by slice (beyond the paper)")
    args = ap.parse_args()
    from netweave.testbed.gnn.job import prepare_gnn_job
    from netweave.testbed.gnn.plans import load_plans

    with tempfile.TemporaryDirectory() as d:
        prepare_gnn_job(args.dataset, args.workers, args.memory, d, hidden=args.hidden, column_slices=1)
        p = load_plans(f"{d}/plans.npz")[0]
    if int(p["num_blocks"]) != 1:
        raise SystemExit(f"netweave: error: the plan has {int(p['num_blocks'])} blocks; the model takes one "
                         "(give more --memory)")
    model = layer_model(p)
    up = int(np.bincount(model["worker"], minlength=model["m"]).max())
    down = int(np.bincount(model["owner"], minlength=model["m"]).max())
    print(f"{args.dataset}, layer 0: {model['a'].shape[1]} units, {model['a'].shape[0]} destinations; "
          f"slots up {up}, down {down}, up + down {up + down}")
    plan = plan_order(model)
    indegree = np.diff(model["a"].indptr)
    orders = {"the plan's": plan, "by in-degree": by_rank(model, np.argsort(np.argsort(indegree, kind="stable")))}
    if args.greedy:
        orders["greedy"] = greedy(model)
    for name, pos in orders.items():
        end, median = finish(model, pos)
        print(f"  {name} order: ends at slot {end:.0f}; the median destination completes at {median:.0f}")
        for k in args.columns:
            end, median = finish(model, pos, k)
            print(f"    in {k} column slices: ends at slot {end:.0f}; the median destination's last slice "
                  f"completes at {median:.0f}")


if __name__ == "__main__":
    main()
