"""Benchmark: in-network aggregation against the ring all-reduce users run without it, on the
testbed, network-bound (issue 31). Needs root, clang, libbpf, torch and scikit-learn.

Cluster: PAHInA §VI-B's bridge tree ``tree:leaves=2,hosts=4,gbps=25,host_gbps=10-25,seed=0,
memory=128MB`` at ``--scale`` of its rates, chosen so that the links, not this machine's two cores,
bound the steps (every epoch reports what bound it: :mod:`netweave.testbed.net.accounting`; rows of
CPU-bound epochs are marked). For 2, 4, 6 and 8 workers (two fp8, the rest fp16, §VI-B; the ring
is fp32), every scheme in the same invocation:

* ``pahina``, ``atp``, ``grid`` — their control plane places the aggregators; the XDP programs
  stream every chunk's sum down to the workers as it completes (``--mode stream``, netweave's);
* ``pahina-ps`` — PAHInA's data path as published (``--mode ps``);
* ``ps`` — a plain PS, no INA; ``ring`` — gloo's ring all-reduce of fp32 gradients.

Per row: the median step (steps after the first epoch), compute, the busiest link's share and
the CPUs' share, the final test accuracy, and the route model's prediction
(:func:`netweave.testbed.agg.model.predict_step_s`: the measured compute plus the busiest link's
bytes at its rate — for streaming, the slowest worker's time to its first bucket plus the paced
transfer, its compute and its update; no constant fitted per scheme) with its error; the physical bound of the
stream and the ring (their busiest link alone).

Writes ``benchmarks/results/stream.json`` (``--out``) and ``stream.png`` (``--plot``: step time vs
workers per scheme with the bounds drawn), and prints Markdown tables.
Usage: sudo python benchmarks/bench_stream.py [--models lenet5 resnet18] [--workers 2 4 6 8]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
from pathlib import Path

HERE = Path(__file__).resolve().parent
TOPOLOGY = "tree:leaves=2,hosts=4,gbps=25,host_gbps=10-25,seed=0,memory=128MB"
SCHEMES = ("pahina", "atp", "grid", "pahina-ps", "ps", "ring")
# model -> (data, global batch, epochs, steps per epoch (None: all), scale, evaluated samples, lr)
SETTINGS = {"lenet5": ("digits", 96, 3, None, 0.002, None, 0.05),
            "resnet18": ("cifar-synthetic", 24, 2, 3, 0.004, 128, 0.002)}


def precisions(workers: int, scheme: str) -> list[str]:
    return ["fp32"] * workers if scheme == "ring" else (["fp8"] * 2 + ["fp16"] * (workers - 2))[:workers]


def measure(model: str, workers: int, scheme: str, scale: float | None = None) -> dict:
    from netweave.testbed.agg import TrainRun, train
    from netweave.testbed.agg.model import predict_step_s
    from netweave.testbed.net.cluster import plan_cluster
    from netweave.topology import load_topology_spec

    data, batch, epochs, steps, default_scale, evaluated, lr = SETTINGS[model]
    scale = scale or default_scale
    routing, mode = ("pahina", "ps") if scheme == "pahina-ps" else (scheme, "stream")
    topo = load_topology_spec(TOPOLOGY)
    r = train(TrainRun(topology=topo, precisions=tuple(precisions(workers, scheme)), routing=routing, mode=mode,
                       epochs=epochs, scale=scale, batch=batch, model=model, data=data, steps=steps,
                       eval_samples=evaluated, timeout_s=600, lr=lr))
    late = slice(1, None) if len(r.epochs) > 1 else slice(None)  # the steady epochs: after the first
    steady = r.epochs[late]
    per_step = [s for e in steady for s in e["step_s"]]
    count = sum(e["steps"] for e in steady)
    compute = sum(e["compute_s"] for e in steady) / count
    cluster = plan_cluster(topo, scale=scale, routes=r.plan.routes or None, prefix="nwtx")
    slowest = {k: statistics.median(r.slowest(k, late)) if r.timing else None
               for k in ("first_s", "compute_s", "update_s")}
    predicted = predict_step_s(r.plan, cluster, r.summary["parameters"], scale, mode,
                               slowest["compute_s"] or compute, slowest["first_s"], slowest["update_s"] or 0.0)
    step = statistics.median(per_step)
    return {"model": model, "workers": workers, "scheme": scheme, "scale": scale, "batch": batch,
            "parameters": r.summary["parameters"], "step_s": step, "compute_s": compute,
            "slowest_first_s": slowest["first_s"], "slowest_compute_s": slowest["compute_s"],
            "slowest_update_s": slowest["update_s"],
            "samples_per_s": batch / step, "bound": [e.get("bound") for e in steady],
            "busiest_link": steady[-1].get("busiest_link"), "link_busy": statistics.median(
                e.get("busiest_link_busy", 0) for e in steady), "link_busy_exchanging": statistics.median(
                e.get("busiest_link_busy_exchanging", 0) for e in steady),
            "cpu_busy": statistics.median(e.get("cpu_busy", 0) for e in steady),
            "data_plane_ns_per_packet": steady[-1].get("data_plane_ns_per_packet"),
            "final_test_acc": r.epochs[-1]["test_acc"], "final_loss": r.epochs[-1]["loss"],
            "predicted_step_s": predicted["step_s"], "network_bound_s": predicted["network_s"],
            "predicted_busiest_link": predicted["busiest_link"],
            "prediction_error": predicted["step_s"] / step - 1,
            "chunks_retried": sum(e.get("chunks_retried", 0) for e in steady),
            "chunks_resent": sum(e.get("chunks_resent", 0) for e in steady),
            "recoveries": sum(e.get("recoveries", 0) for e in steady),
            "results_early": sum(e.get("results_early", 0) for e in steady), "steps": count,
            "step_s_all": per_step}


def verdict(row: dict) -> str:
    """What bound a row: the accounting's rule applied to its steady epochs' medians (a mode of the
    epochs' verdicts ties at two epochs)."""
    from netweave.testbed.net.accounting import bound

    return bound(row.get("link_busy_exchanging", 0.0), row.get("cpu_busy", 0.0))


def slowest(row: dict) -> str:
    """The streaming model's two measured constants of a row (ms), "–" for other schemes."""
    if row.get("slowest_first_s") is None:
        return "–"
    return f"{1e3 * row['slowest_first_s']:.0f} / {1e3 * row['slowest_compute_s']:.0f}"


def table(rows: list[dict]) -> None:
    print("| model | workers | scheme | scale | step (ms) | vs ring | bound (ms) | compute (ms) | slowest first bucket / "
          "compute (ms) | busiest link busy | exchanging | CPUs busy | bound by | model (ms) | error | test acc. |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    ring = {(r["model"], r["workers"]): r["step_s"] for r in rows if r["scheme"] == "ring"}
    for r in rows:
        vs = ring.get((r["model"], r["workers"]))
        bound = verdict(r)
        print(f"| {r['model']} | {r['workers']} | {r['scheme']} | {r['scale']:g} | {1e3 * r['step_s']:.0f} | "
              f"{r['step_s'] / vs:.2f}× | {1e3 * r['network_bound_s']:.0f} | {1e3 * r['compute_s']:.0f} | "
              f"{slowest(r)} | "
              f"{100 * r['link_busy']:.0f} % | {100 * r.get('link_busy_exchanging', 0):.0f} % | "
              f"{100 * r['cpu_busy']:.0f} % | {bound} | "
              f"{1e3 * r['predicted_step_s']:.0f} | {100 * r['prediction_error']:+.0f} % | {r['final_test_acc']:.3f} |"
              if vs else f"| {r['model']} | {r['workers']} | {r['scheme']} | … |")


def plot(rows: list[dict], path: Path) -> None:
    """Per model: median step vs workers per scheme (solid), the model's prediction (x), and the
    physical bounds of the streaming INA and the ring (dashed: their busiest link alone)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    models = sorted({r["model"] for r in rows}, key=list(SETTINGS).index)
    fig, axes = plt.subplots(1, len(models), figsize=(8.5 * len(models), 4.8), squeeze=False)
    colours = dict(zip(SCHEMES, ("tab:red", "tab:green", "tab:orange", "tab:purple", "tab:blue", "black")))
    for ax, model in zip(axes[0], models):
        for scheme in SCHEMES:
            mine = sorted((r for r in rows if r["model"] == model and r["scheme"] == scheme), key=lambda r: r["workers"])
            if not mine:
                continue
            w = [r["workers"] for r in mine]
            ax.plot(w, [1e3 * r["step_s"] for r in mine], "-", color=colours[scheme], label=f"{scheme}")
            for r in mine:  # filled: network-bound (its steady epochs' medians); hollow: not
                bound = verdict(r) == "network"
                ax.plot(r["workers"], 1e3 * r["step_s"], "o", color=colours[scheme],
                        markerfacecolor=colours[scheme] if bound else "white")
            ax.plot(w, [1e3 * r["predicted_step_s"] for r in mine], "x", color=colours[scheme], alpha=0.7)
            if scheme in ("pahina", "ring"):
                ax.plot(w, [1e3 * r["network_bound_s"] for r in mine], "--", marker="_", markersize=16,
                        color=colours[scheme], alpha=0.6, label=f"{scheme}: physical bound (busiest link)")
        scale = next(r["scale"] for r in rows if r["model"] == model)
        ax.set(title=f"{model} at {scale:g} of the tree's rates", xlabel="workers", ylabel="median step (ms, log)",
               yscale="log")
        ax.set_xticks(sorted({r["workers"] for r in rows if r["model"] == model}))
        ax.grid(alpha=0.3)
        ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1.0))
    fig.suptitle("Streaming in-network aggregation vs gloo's ring on the emulated §VI-B tree\n"
                 "(o: measured median step, filled where network-bound; x: the route model's prediction)", fontsize=9)
    fig.tight_layout()
    fig.savefig(path, dpi=110)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--workers", type=int, nargs="+", default=[2, 4, 6, 8])
    ap.add_argument("--models", nargs="+", default=list(SETTINGS), choices=list(SETTINGS))
    ap.add_argument("--schemes", nargs="+", default=list(SCHEMES), choices=list(SCHEMES))
    ap.add_argument("--scale", type=float, default=None, help="Override the models' scales.")
    ap.add_argument("--out", default=str(HERE / "results" / "stream.json"))
    ap.add_argument("--plot", default=str(HERE / "results" / "stream.png"))
    ap.add_argument("--replot", metavar="JSON", nargs="+",
                    help="Redraw the tables and the plot from saved results (several: merged into --out).")
    args = ap.parse_args()
    if args.replot:
        saved = [json.loads(Path(p).read_text()) for p in args.replot]
        rows = [r for one in saved for r in one["rows"]]
        metas = [m for one in saved for m in (one["meta"] if isinstance(one["meta"], list) else [one["meta"]])]
        if len(args.replot) > 1:
            Path(args.out).write_text(json.dumps({"meta": metas, "rows": rows}, indent=1))
    else:
        load_before = os.getloadavg()[0]
        rows = []
        for model in args.models:
            for n in args.workers:
                for scheme in args.schemes:
                    rows.append(measure(model, n, scheme, args.scale))
                    print(json.dumps(rows[-1]), flush=True)
        metas = [{"machine": f"{platform.machine()}, {os.cpu_count()} cores, kernel {platform.release()}",
                  "command": "sudo python benchmarks/bench_stream.py --models " + " ".join(args.models)
                             + " --workers " + " ".join(map(str, args.workers)),
                  "load_1min_before": load_before, "load_1min": os.getloadavg()[0], "topology": TOPOLOGY}]
        Path(args.out).parent.mkdir(parents=True, exist_ok=True)
        Path(args.out).write_text(json.dumps({"meta": metas[0], "rows": rows}, indent=1))
    for meta in metas:
        print(f"\n{meta['command']} — {meta['machine']}, load {meta.get('load_1min_before', meta['load_1min']):.1f} "
              f"before, {meta['load_1min']:.1f} after, {meta['topology']}")
    print()
    table(rows)
    plot(rows, Path(args.plot))


if __name__ == "__main__":
    main()
