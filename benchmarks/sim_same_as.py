"""Check: the switch simulator gives the same results as at another git revision, bit for bit.

Work on the simulator's code that must not change what it does (issue 30: the kernel's named
state) runs this. It simulates a grid of layers on this tree and on ``REV`` (a temporary worktree
under /tmp, removed afterwards), each side in one fresh process, and compares, exactly, every
number of ``netweave ina --json`` except wall times, and every array of the simulator's result
(finish times, link bytes, the largest backlog of every queue, peak aggregators, counters, the
timeline, the delivered sums) and of the plan (a large array by dtype, shape and the SHA-256 of its
bytes).

The grid: cora (star and leaf-spine, 8 workers), ``reddit-like:scale=0.01`` (star and leaf-spine,
16 workers) and amazon_cs (star, 8 workers, when the shared data is there); strategies host,
straw, switchgnn (auto, paper, and destination double-buffered); switch memory 100KB and
unlimited (switchgnn, whose blocks are sized to the memory: 100KB and 1MB); clean, and with ``--loss 0.05 --cc --background 0.3 --buffer 200KB`` (reddit-like without the background:
its events at 16 hosts x 30 % of 100 Gb/s take minutes per case); with and without ``--verify``.

Usage: python benchmarks/sim_same_as.py REV [--data ../shared/data] [--baseline FILE]
``--baseline FILE`` keeps REV's results in FILE (and reads them from there when FILE exists and
was made at the same commit). Exit status 1 when anything differs.
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
PLAN = ("src", "dst", "block", "unit_lo", "unit_hi", "unit_to", "unit_ptr", "dest_v", "dest_lo", "dest_hi", "dest_ptr")
RESULT = ("completion_time_s", "finish_s", "up_bytes", "down_bytes", "core_bytes", "max_queue_bytes",
          "peak_aggregator_bytes", "counters", "timeline", "sums")
STRATEGIES = [("host", "auto", False), ("straw", "auto", False), ("switchgnn", "auto", False),
              ("switchgnn", "paper", False), ("switchgnn", "destination", True)]
IMPAIRED = {"loss": 0.05, "congestion_control": True, "background_load": 0.3, "buffer_bytes": 200e3}
QUIETER = {"loss": 0.05, "congestion_control": True, "buffer_bytes": 200e3}  # reddit-like: no background

# Run on the code under test (PYTHONPATH): every case's summary, result and plan arrays, pickled to argv[2].
DUMP = """
import pickle, sys, time
import numpy as np
from netweave.scenarios.ina import InaScenario
from netweave.sim import SimConfig
from netweave.errors import NetweaveError
cases, out, inputs, wall = eval(sys.argv[1]), {}, {}, 0.0


def digest(a):  # large arrays (a plan's, the sums): compare their dtype, shape and the SHA-256 of their bytes
    import hashlib
    return (str(a.dtype), a.shape, hashlib.sha256(np.ascontiguousarray(a).tobytes()).hexdigest())


for ds, w, topo, strategy, blocking, overlap, mem, impaired, verify in cases:
    sim = SimConfig(**({"full": IMPAIRED, "quieter": QUIETER}[impaired] if impaired else {}))
    s = InaScenario(dataset=ds, workers=w, topology=topo, switch_memory=mem, strategy=strategy, blocking=blocking,
                    overlap=overlap, verify=verify, sim=sim)
    key = s.inputs_key()
    if key not in inputs:
        inputs[key] = s.prepare()
    t0 = time.perf_counter()
    try:
        r = s.run(inputs[key])
    except NetweaveError as exc:  # an outcome like any other: it must be the same one
        out[(ds, w, topo, strategy, blocking, overlap, mem, impaired, verify)] = (str(exc), None, None)
        print(f"{time.perf_counter() - t0:7.2f} s  {ds} {w} {topo} {strategy} {blocking} {overlap} {mem} {impaired} "
              f"{verify}: {exc}", file=sys.stderr)
        continue
    wall += r.layer.sim_time_s
    print(f"{time.perf_counter() - t0:7.2f} s  {ds} {w} {topo} {strategy} {blocking} {overlap} {mem} {impaired} "
          f"{verify}: {r.layer.sim_time_s:.3f} s simulating", file=sys.stderr)
    summary = {k: v for k, v in r.summary().items() if not k.endswith("time_s") or k == "completion_time_s"}
    for c in summary.get("choice", {}).get("candidates", []):
        c.pop("plan_time_s", None)
    result = {f: getattr(r.sim, f) for f in RESULT}
    result = {f: digest(v) if isinstance(v, np.ndarray) and v.size > 100_000 else v for f, v in result.items()}
    out[(ds, w, topo, strategy, blocking, overlap, mem, impaired, verify)] = (
        summary, result, {f: digest(getattr(r.layer.plan, f)) for f in PLAN})
print(f"{len(cases)} cases simulated in {wall:.2f} s", file=sys.stderr)
pickle.dump(out, open(sys.argv[2], "wb"))
"""


def cases(data: Path) -> list[tuple]:
    amazon = data / "gnn_benchmark_npz" / "amazon_cs.npz"
    graphs = [("cora", 8, None), ("cora", 8, "leafspine:leaves=4,spines=2,hosts=2,gbps=100,latency_us=2"),
              ("reddit-like:scale=0.01", 16, None),
              ("reddit-like:scale=0.01", 16, "leafspine:leaves=4,spines=2,hosts=4,gbps=100,latency_us=2")]
    if amazon.exists():
        graphs.append((str(amazon), 8, None))
    return [(g, w, topo, s, b, o, mem, impaired, verify) for g, w, topo in graphs for s, b, o in STRATEGIES
            for mem in ((100_000, 1_000_000) if s == "switchgnn" else (100_000, None))
            for impaired in ("", "quieter" if g.startswith("reddit") else "full") for verify in (False, True)]


def dump(src: Path, todo: list[tuple], path: Path) -> dict:
    env = dict(os.environ, PYTHONPATH=str(src), NETWEAVE_NO_PROGRESS="1")
    head = f"PLAN = {PLAN!r}\nRESULT = {RESULT!r}\nIMPAIRED = {IMPAIRED!r}\nQUIETER = {QUIETER!r}\n"
    if subprocess.run([sys.executable, "-c", head + DUMP, repr(todo), str(path)], env=env).returncode:
        sys.exit(f"simulating the cases on {src} failed (above)")
    with open(path, "rb") as f:  # our own file, written by the line above
        return pickle.load(f)


def same(a, b) -> bool:
    """Exactly equal: arrays element by element (NaN equal to NaN) with the same shape and dtype."""
    if isinstance(a, np.ndarray) or isinstance(b, np.ndarray):
        return (isinstance(a, np.ndarray) and isinstance(b, np.ndarray) and a.shape == b.shape
                and a.dtype == b.dtype and np.array_equal(a, b, equal_nan=a.dtype.kind == "f"))
    return a == b


def differences(old: dict, new: dict) -> list[str]:
    out = []
    for key, (s_old, r_old, p_old) in old.items():
        s_new, r_new, p_new = new[key]
        if r_old is None or r_new is None:  # refused: the same error
            if s_old != s_new:
                out.append(f"{key}: {s_old!r} -> {s_new!r}")
            continue
        plan = [f for f in PLAN if not same(p_old[f], p_new[f])]
        result = [f for f in RESULT if not same(r_old[f], r_new[f])]
        summary = [k for k in set(s_old) | set(s_new) if s_old.get(k) != s_new.get(k)]
        if plan or result or summary:
            out.append(f"{key}: plan {plan} result {result} summary {summary}")
    return out


def commit(rev: str) -> str:
    return subprocess.run(["git", "-C", str(HERE.parent), "rev-parse", rev], check=True, capture_output=True,
                          text=True).stdout.strip()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("rev")
    ap.add_argument("--data", type=Path, default=HERE.parent.parent / "shared" / "data")
    ap.add_argument("--baseline", type=Path, help="keep REV's results here (reused when made at the same commit)")
    args = ap.parse_args()
    todo, sha = cases(args.data), commit(args.rev)
    old = None
    if args.baseline and args.baseline.exists():
        with open(args.baseline, "rb") as f:  # written by this script
            saved = pickle.load(f)
        if saved["commit"] == sha and saved["cases"] == todo:
            old = saved["results"]
    with tempfile.TemporaryDirectory(prefix="netweave-same-") as tmp:
        if old is None:
            tree = Path(tmp) / "tree"
            subprocess.run(["git", "-C", str(HERE.parent), "worktree", "add", "--detach", "-q", str(tree), sha],
                           check=True)
            try:
                old = dump(tree / "src", todo, Path(tmp) / "old.pkl")
            finally:
                subprocess.run(["git", "-C", str(HERE.parent), "worktree", "remove", "--force", str(tree)], check=True)
            if args.baseline:
                with open(args.baseline, "wb") as f:
                    pickle.dump({"commit": sha, "cases": todo, "results": old}, f)
        new = dump(HERE.parent / "src", todo, Path(tmp) / "new.pkl")
    diffs = differences(old, new)
    fields = len(RESULT) + len(PLAN) + max(len(s) for s, r, _ in old.values() if r is not None)
    print(f"{len(todo)} cases against {args.rev} ({sha[:7]}): {len(diffs)} differ "
          f"(compared exactly: the JSON summary, {len(RESULT)} result and {len(PLAN)} plan fields; ~{fields} per case)")
    for d in diffs:
        print("  " + d)
    sys.exit(1 if diffs else 0)


if __name__ == "__main__":
    main()
