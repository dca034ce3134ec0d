"""Benchmark: data-parallel training through the emulated bridge tree, per aggregation scheme,
measured against the route model's prediction (issue 18, part 4; PAHInA §VI-B, Figures 4–8), with
PAHInA's data path as published (``--mode ps``: sums to the PS, which steps and multicasts the
parameters). The streaming data path of issue 31 has its own benchmark: ``bench_stream.py``.

Cluster: ``tree:leaves=2,hosts=4,gbps=25,host_gbps=10-25,seed=0,memory=128MB`` — the PS on the root
switch, two leaf switches of four hosts, host links drawn from 10–25 Gb/s as in the paper's testbed,
switch memory for a whole ResNet-18 step of keys in flight (43,650 of 2,112 B: 92 MB) — at
``--scale`` of those rates (this machine moves a few Gb/s in all). For 2/4/6/8 workers (two fp8,
the rest fp16, §VI-B; gloo's ring is fp32) every scheme trains in the same invocation:

* ``pahina``, ``atp``, ``grid`` — their control plane places the aggregators, the XDP programs
  aggregate; ``ps`` — the PS sums every gradient (no INA); ``ring`` — gloo's ring all-reduce.
* LeNet-5 on scikit-learn's digits (epochs) and ResNet-18 on CIFAR-shaped synthetic inputs
  (a few steps per epoch: each step moves 45 MB per worker).

Per scheme: median step time (steps after the first epoch), throughput, upload time and gradient
sending rate, INA efficiency (share of gradient bytes that did not reach the PS), PS aggregation
time, final test accuracy; and the model's prediction for the same placement
(:meth:`netweave.testbed.plan.TrainingPlan.predict`, the §VI-A training-time model of
``netweave route --algorithm pahina|atp|grid|ps``) before and after calibrating its constants on
these measurements:

* ``compute_s`` — the measured median compute time per step (the slowest worker's);
* ``ps_gbps`` — bytes reaching the PS over the PS's measured aggregation time (all schemes);
* ``k_upload`` — measured upload = k × the model's upload, least squares over all INA and PS runs
  of one model (the shaped veth links, the kernel's forwarding and the endpoints' CPU are what the
  model's nominal rates leave out);
* ``k_parameters`` — the parameters' multicast, which the paper's model leaves out (netweave's
  term): fp32 parameters over the slowest link from the PS to a worker, times k.

Writes ``benchmarks/results/testbed.json`` (``--out``) and prints Markdown tables. Needs root, clang, libbpf,
torch and scikit-learn.
Usage: sudo python benchmarks/bench_testbed.py [--workers 2 4 6 8] [--models lenet5 resnet18]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
from pathlib import Path

from netweave.route.pahina import TrainingModel
from netweave.testbed.agg import TrainRun, train
from netweave.topology import load_topology_spec

HERE = Path(__file__).resolve().parent
TOPOLOGY = "tree:leaves=2,hosts=4,gbps=25,host_gbps=10-25,seed=0,memory=128MB"  # a ResNet-18 step in flight fits
SCHEMES = ("pahina", "grid", "atp", "ps", "ring")
# model -> (data, global batch, epochs, steps per epoch (None: all), scale, evaluated samples)
SETTINGS = {"lenet5": ("digits", 96, 3, None, 0.01, None), "resnet18": ("cifar-synthetic", 24, 2, 3, 0.05, 128)}
CONTAINER_BYTES = 8  # the model's fp32 megabytes × 2: the wire's containers are twice each float's width


def precisions(workers: int, scheme: str) -> list[str]:
    return ["fp32"] * workers if scheme == "ring" else (["fp8"] * 2 + ["fp16"] * (workers - 2))[:workers]


def measure(model: str, workers: int, scheme: str) -> dict:
    data, batch, epochs, steps, scale, evaluated = SETTINGS[model]
    r = train(TrainRun(topology=load_topology_spec(TOPOLOGY), precisions=tuple(precisions(workers, scheme)),
                       routing=scheme, epochs=epochs, scale=scale, batch=batch, model=model, data=data, steps=steps,
                       eval_samples=evaluated, timeout_s=300, lr=0.05 if model == "lenet5" else 0.002, mode="ps"))
    steady = r.epochs[1:] or r.epochs
    per_step = [s for e in steady for s in e["step_s"]]
    count = sum(e["steps"] for e in steady)

    def mean(key):
        return sum(e.get(key, 0.0) for e in steady) / count

    row = {"model": model, "workers": workers, "scheme": scheme, "scale": scale, "batch": batch,
           "parameters": r.summary["parameters"], "step_s": statistics.median(per_step),
           "samples_per_s": batch / statistics.median(per_step), "compute_s": mean("compute_s"),
           "upload_s": mean("upload_s"), "parameters_s": mean("parameters_s"),
           "ps_aggregation_s": mean("ps_aggregation_s"), "gradient_bytes": mean("gradient_bytes"),
           "bytes_at_ps": mean("bytes_at_ps"), "final_test_acc": r.epochs[-1]["test_acc"],
           "final_loss": r.epochs[-1]["loss"], "aggregators": r.plan.summary()["aggregators"]}
    row["ina_efficiency"] = 1 - row["bytes_at_ps"] / row["gradient_bytes"] if scheme != "ring" else None
    row["gradient_rate_gbps"] = row["gradient_bytes"] * 8 / max(row["upload_s"], 1e-9) / 1e9
    if scheme != "ring":
        nominal = TrainingModel(model_mb=row["parameters"] * CONTAINER_BYTES / 1e6, compute_s=0.0, ps_gbps=1e9,
                                global_batch=batch, iterations=1)
        row["predicted_upload_s"] = r.plan.predict(nominal).upload_time_s
        row["predicted_ina_efficiency"] = r.plan.predict(nominal).ina_efficiency
    return row


def predicted_parameters_s(row: dict) -> float:
    """The parameters' multicast time the model leaves out (netweave's term, not the paper's): the
    fp32 parameters over the slowest link of the tree from the PS to the workers, at the run's scale."""
    from netweave.testbed.agg.plan import multicast_gbps, place_workers
    from netweave.topology import load_topology_spec

    topo = load_topology_spec(TOPOLOGY)
    ps, hosts = place_workers(topo, row["workers"])
    return row["parameters"] * 4 * 8 / (multicast_gbps(topo, ps, hosts, row["scale"]) * 1e9)


def _fit(measured: list[float], predicted: list[float]) -> float:
    """k minimising Σ (measured − k · predicted)²."""
    return sum(m * p for m, p in zip(measured, predicted)) / sum(p * p for p in predicted)


def calibrate(rows: list[dict]) -> dict:
    """Per model, from the PS-based runs: ``compute_s`` (measured medians), ``ps_gbps`` (bytes
    reaching the PS over the PS's aggregation time), the upload efficiency ``k_upload`` (measured
    upload = k × the route model's) and ``k_parameters`` for the parameter multicast (measured =
    k × :func:`predicted_parameters_s`); then every row's calibrated prediction of its step time,
    with and without the parameter term the paper's model does not have."""
    out = {}
    for model in sorted({r["model"] for r in rows}):
        mine = [r for r in rows if r["model"] == model and r["scheme"] != "ring"]
        for r in mine:
            r["predicted_parameters_s"] = predicted_parameters_s(r)
        k_up = _fit([r["upload_s"] for r in mine], [r["predicted_upload_s"] for r in mine])
        k_par = _fit([r["parameters_s"] for r in mine], [r["predicted_parameters_s"] for r in mine])
        ps_gbps = sum(r["bytes_at_ps"] for r in mine) * 8 / 1e9 / max(sum(r["ps_aggregation_s"] for r in mine), 1e-9)
        out[model] = {"k_upload": k_up, "k_parameters": k_par, "ps_gbps": ps_gbps,
                      "compute_s": {w: statistics.median(r["compute_s"] for r in mine if r["workers"] == w)
                                    for w in sorted({r["workers"] for r in mine})}}
        for r in mine:
            compute = out[model]["compute_s"][r["workers"]]
            model_only = compute + k_up * r["predicted_upload_s"] + r["bytes_at_ps"] * 8 / 1e9 / ps_gbps
            r["predicted_model_step_s"] = model_only
            r["predicted_step_s"] = model_only + k_par * r["predicted_parameters_s"]
            r["prediction_error"] = r["predicted_step_s"] / r["step_s"] - 1
    return out


def table(rows: list[dict]) -> None:
    print("| model | workers | scheme | step (ms) | samples/s | compute (ms) | upload (ms) | parameters (ms) | "
          "gradient rate (Gb/s) | INA eff. (model) | PS agg. (ms) | model's step (ms) | + parameters (ms) | error | test acc. |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    for r in rows:
        ina = "–" if r["ina_efficiency"] is None else f"{100 * r['ina_efficiency']:.0f} % ({100 * r['predicted_ina_efficiency']:.0f} %)"
        pred = (f"{1e3 * r['predicted_model_step_s']:.0f} | {1e3 * r['predicted_step_s']:.0f} | "
                f"{100 * r['prediction_error']:+.0f} %") if "predicted_step_s" in r else "– | – | –"
        print(f"| {r['model']} | {r['workers']} | {r['scheme']} | {1e3 * r['step_s']:.0f} | {r['samples_per_s']:,.0f} | "
              f"{1e3 * r['compute_s']:.0f} | {1e3 * r['upload_s']:.0f} | {1e3 * r['parameters_s']:.0f} | "
              f"{r['gradient_rate_gbps']:.2f} | {ina} | {1e3 * r['ps_aggregation_s']:.1f} | {pred} | "
              f"{r['final_test_acc']:.3f} |")


def plot(rows: list[dict], path: Path) -> None:
    """Per model (one column): step time vs workers per scheme, measured (solid) and the calibrated
    model's prediction (dashed); below, the INA efficiency measured vs the model's (PAHInA Figs. 4, 7)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    models = sorted({r["model"] for r in rows}, key=list(SETTINGS).index)
    fig, axes = plt.subplots(2, len(models), figsize=(6 * len(models), 7.5), squeeze=False)
    colours = dict(zip(SCHEMES, ("tab:red", "tab:green", "tab:orange", "tab:blue", "tab:gray")))
    for col, model in enumerate(models):
        top, bottom = axes[0, col], axes[1, col]
        for scheme in SCHEMES:
            mine = sorted((r for r in rows if r["model"] == model and r["scheme"] == scheme), key=lambda r: r["workers"])
            if not mine:
                continue
            w = [r["workers"] for r in mine]
            top.plot(w, [1e3 * r["step_s"] for r in mine], "o-", color=colours[scheme], label=f"{scheme} measured")
            if scheme != "ring":
                top.plot(w, [1e3 * r["predicted_step_s"] for r in mine], "x--", color=colours[scheme], alpha=0.7,
                         label=f"{scheme} model (calibrated)")
                bottom.plot(w, [100 * r["ina_efficiency"] for r in mine], "o-", color=colours[scheme],
                            label=f"{scheme} measured")
                bottom.plot(w, [100 * r["predicted_ina_efficiency"] for r in mine], "x--", color=colours[scheme],
                            alpha=0.7, label=f"{scheme} model")
        top.set(title=f"{model}: step time (median)", xlabel="workers", ylabel="ms per step")
        bottom.set(title=f"{model}: INA efficiency (gradient bytes not reaching the PS)", xlabel="workers",
                   ylabel="%")
        top.legend(fontsize=7, ncol=2)
        bottom.legend(fontsize=7, ncol=2)
        for ax in (top, bottom):
            ax.set_xticks(sorted({r["workers"] for r in rows}))
            ax.grid(alpha=0.3)
    fig.suptitle(f"Training through the emulated bridge tree ({TOPOLOGY})\ntwo fp8 workers, the rest fp16; "
                 "dashed: the route model, calibrated", fontsize=9)
    fig.tight_layout()
    fig.savefig(path, dpi=110)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--workers", type=int, nargs="+", default=[2, 4, 6, 8])
    ap.add_argument("--models", nargs="+", default=list(SETTINGS), choices=list(SETTINGS))
    ap.add_argument("--schemes", nargs="+", default=list(SCHEMES), choices=list(SCHEMES))
    ap.add_argument("--out", default=str(HERE / "results" / "testbed.json"))
    ap.add_argument("--plot", default=None, help="Also draw step time and INA efficiency vs workers into this PNG.")
    ap.add_argument("--recalibrate", nargs="+", metavar="JSON", help="Recompute the calibration and tables from "
                    "saved results (several files: their rows together) instead of measuring.")
    args = ap.parse_args()
    if args.recalibrate:
        saved = [json.loads(Path(f).read_text()) for f in args.recalibrate]
        rows, meta = [r for d in saved for r in d["rows"]], {"sources": [d["meta"] for d in saved]}
    else:
        rows = []
        for model in args.models:
            for n in args.workers:
                for scheme in args.schemes:
                    rows.append(measure(model, n, scheme))
                    print(json.dumps({k: v for k, v in rows[-1].items() if k != "aggregators"}), flush=True)
        meta = {"machine": f"{platform.machine()}, {os.cpu_count()} cores, kernel {platform.release()}",
                "command": "sudo python benchmarks/bench_testbed.py --workers " + " ".join(map(str, args.workers))
                           + " --models " + " ".join(args.models), "load_1min": os.getloadavg()[0],
                "topology": TOPOLOGY}
        print(f"\n{meta['command']} — {meta['machine']}, load {meta['load_1min']:.1f}, {TOPOLOGY}\n")
    calibration = calibrate(rows)
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps({"meta": meta, "calibration": calibration, "rows": rows}, indent=1))
    table(rows)
    print("\ncalibration:", json.dumps(calibration, indent=1))
    if args.plot:
        plot(rows, Path(args.plot))


if __name__ == "__main__":
    main()
