"""Check: SwitchGNN's plans and simulated layers are the same as at another git revision.

Speed work on the planner (issue 20) must not change what it plans. This runs 32 cases (cora,
amazon_cs, coauthor_phy at 8 workers and ``reddit-like:scale=0.02`` at 128; host, strawman and
switchgnn with blockings paper, destination, hybrid, multilevel, single and auto) on this tree and
on ``REV`` (a temporary worktree under /tmp, removed afterwards), each in a fresh process, and
compares every plan array and every number of ``netweave ina --json`` except wall times. The
``choice`` may differ only in candidates the newer code stops early (pruned, never picked).

Usage: python benchmarks/ina_same_as.py REV [--data ../shared/data]
Exit status 1 when a plan, a simulated result or a pick differs.
"""

from __future__ import annotations

import argparse
import os
import pickle
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
FIELDS = ("src", "dst", "block", "unit_lo", "unit_hi", "unit_to", "unit_ptr", "dest_v", "dest_lo", "dest_hi", "dest_ptr")
BLOCKINGS = [("host", "auto"), ("straw", "auto")] + [("switchgnn", b) for b in
                                                     ("paper", "destination", "hybrid", "multilevel", "single", "auto")]

# Run on the code under test (PYTHONPATH): every case's plan arrays and summary, pickled to argv[2].
DUMP = """
import pickle, sys
from netweave.scenarios.ina import InaScenario
cases, out, inputs = eval(sys.argv[1]), {}, {}
for ds, w, mem, strategy, blocking in cases:
    s = InaScenario(dataset=ds, workers=w, switch_memory=mem, strategy=strategy, blocking=blocking)
    key = s.inputs_key()
    if key not in inputs:
        inputs[key] = s.prepare()
    r = s.run(inputs[key])
    summary = {k: v for k, v in r.summary().items() if not k.endswith("time_s") or k == "completion_time_s"}
    for c in summary.get("choice", {}).get("candidates", []):
        c.pop("plan_time_s")
        if c.get("skipped", "") is None:  # a field newer than some revisions
            del c["skipped"]
    out[(ds, w, mem, strategy, blocking)] = (summary, {f: getattr(r.layer.plan, f) for f in FIELDS})
pickle.dump(out, open(sys.argv[2], "wb"))
"""


def cases(data: Path) -> list[tuple]:
    npz = data / "gnn_benchmark_npz"
    graphs = [("cora", 8, 200_000), (str(npz / "amazon_cs.npz"), 8, 2_000_000),
              ("reddit-like:scale=0.02", 128, 1_000_000), (str(npz / "coauthor_phy.npz"), 8, 5_000_000)]
    return [(g, w, m, s, b) for g, w, m in graphs if g.startswith(("cora", "reddit")) or Path(g).exists()
            for s, b in BLOCKINGS]


def dump(src: Path, todo: list[tuple], path: Path) -> dict:
    env = dict(os.environ, PYTHONPATH=str(src), NETWEAVE_NO_PROGRESS="1")
    subprocess.run([sys.executable, "-c", f"FIELDS = {FIELDS!r}\n" + DUMP, repr(todo), str(path)], env=env, check=True)
    with open(path, "rb") as f:  # our own file, written by the line above
        return pickle.load(f)


def differences(old: dict, new: dict) -> list[str]:
    out = []
    for key, (s_old, p_old) in old.items():
        s_new, p_new = new[key]
        arrays = [f for f in FIELDS if not np.array_equal(p_old[f], p_new[f])]
        numbers = [k for k in s_old if k != "choice" and s_old[k] != s_new.get(k)]
        if arrays or numbers:
            out.append(f"{key}: plan {arrays} summary {numbers}")
        if "choice" in s_old:
            c_old, c_new = s_old["choice"], s_new["choice"]
            if (c_old["blocking"], c_old["overlap"]) != (c_new["blocking"], c_new["overlap"]):
                out.append(f"{key}: picked {c_old['blocking']} → {c_new['blocking']}")
            for a, b in zip(c_old["candidates"], c_new["candidates"]):
                if a != b and not b["pruned"]:
                    out.append(f"{key}: candidate {a['blocking']} overlap={a['overlap']} priced differently")
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("rev")
    ap.add_argument("--data", type=Path, default=HERE.parent.parent / "shared" / "data")
    args = ap.parse_args()
    todo = cases(args.data)
    with tempfile.TemporaryDirectory(prefix="netweave-same-") as tmp:
        tree = Path(tmp) / "tree"
        subprocess.run(["git", "-C", str(HERE.parent), "worktree", "add", "--detach", "-q", str(tree), args.rev], check=True)
        try:
            old = dump(tree / "src", todo, Path(tmp) / "old.pkl")
        finally:
            subprocess.run(["git", "-C", str(HERE.parent), "worktree", "remove", "--force", str(tree)], check=True)
        new = dump(HERE.parent / "src", todo, Path(tmp) / "new.pkl")
    diffs = differences(old, new)
    pruned = sum(a != b for k in old if "choice" in old[k][0]
                 for a, b in zip(old[k][0]["choice"]["candidates"], new[k][0]["choice"]["candidates"]))
    print(f"{len(todo)} cases against {args.rev}: {len(diffs)} differences; "
          f"{pruned} candidates priced before are now stopped early (never the pick)")
    for d in diffs:
        print("  " + d)
    sys.exit(1 if diffs else 0)


if __name__ == "__main__":
    main()
