"""The embedding exchange: ``plan`` (DGCL's SPST or P2P, costed) and ``train`` (real training that executes a plan)."""

from __future__ import annotations

from pathlib import Path
from typing import Optional

import typer

from ..errors import NetweaveError
from ..outputs import check_output_file
from ..report.console import emit_json, finish, out, table
from .app import app
from .examples import EXAMPLES
from .options import (COST_MODEL_HELP, DATASET_HELP, TOPOLOGY_HELP, TRANSPORT_HELP, Comm, CostModelName, FeatureDimOpt,
                      JsonOpt, Method, MethodOpt, Model, PartsFileOpt, path_str, Planner, TransportName)


# -- plan ----------------------------------------------------------------------------------------


@app.command(epilog=EXAMPLES["plan"])
def plan(
    dataset: Optional[str] = typer.Argument(None, help=DATASET_HELP),
    topology: Optional[str] = typer.Option(None, "--topology", help=TOPOLOGY_HELP),
    planner: Planner = typer.Option(Planner.spst, "--planner", help="spst (DGCL Alg. 1) or p2p (direct, one stage)."),
    parts_file: Optional[Path] = PartsFileOpt,
    parts: Optional[int] = typer.Option(None, "--parts", "-k", help="Parts; must equal the topology's workers (the default)."),
    method: Method = MethodOpt,
    feature_dim: Optional[int] = FeatureDimOpt,
    seed: int = typer.Option(0, "--seed", help="Seed of the partitioner and of SPST's vertex order."),
    cost_model: Optional[CostModelName] = typer.Option(None, "--cost-model", help=COST_MODEL_HELP + " Both are reported."),
    transport: Optional[TransportName] = typer.Option(None, "--transport", help=TRANSPORT_HELP),
    out_file: Optional[Path] = typer.Option(None, "--out", help="Write the plan (.npz, one row per hop)."),
    validate: Optional[Path] = typer.Option(None, "--validate", help="Check a saved plan (against DATASET and --topology when given)."),
    as_json: bool = JsonOpt,
):
    """Plan the graph allgather (DGCL) and predict its time next to P2P on the same inputs."""
    from ..plan.cost import DEFAULT_COST_MODEL
    from ..scenarios import ExchangeScenario, PlanCheck

    check_output_file(out_file, "--out")
    if validate is not None:
        result = PlanCheck(plan_file=str(validate), dataset=dataset, topology=topology).run().summary()
        return emit_json(result) if as_json else out.print(table(f"{validate}: valid", result))
    if dataset is None or topology is None:
        raise NetweaveError("plan needs DATASET and --topology (or --validate PLAN.npz)")
    r = ExchangeScenario(dataset=dataset, topology=topology, planner=planner.value, method=method.value,
                         cost_model=cost_model.value if cost_model else DEFAULT_COST_MODEL,
                         transport=transport.value if transport else None, feature_dim=feature_dim,
                         parts=parts, parts_file=path_str(parts_file), seed=seed).run()
    result = r.summary()
    if finish(result, r.plan, out_file, as_json, f"{planner.value} plan of {dataset} on {r.topology_name}",
              hidden=("bytes_per_link", "bytes_per_hop", "transport_source", "transport_constants",
                      "bytes_per_link_class", "p2p_bytes_per_link_class")):
        return
    out.print(table(f"transport {r.transport.name}: {r.transport.source}", result["transport_constants"]))
    p2p = result["p2p_bytes_per_link_class"] or {}
    out.print(table("bytes per link class (all stages)",
                    [(c, b, p2p.get(c)) for c, b in result["bytes_per_link_class"].items()] +
                    [(c, 0, b) for c, b in p2p.items() if c not in result["bytes_per_link_class"]],
                    ("link class", planner.value, "p2p")))
    busiest = sorted(result["bytes_per_hop"].items(), key=lambda kv: -kv[1])[:8]
    out.print(table("busiest physical hops (bytes over all stages)", busiest, ("hop", "bytes")))


# -- train ---------------------------------------------------------------------------------------


@app.command(epilog=EXAMPLES["train"])
def train(
    dataset: str = typer.Argument("cora", help=DATASET_HELP),
    workers: int = typer.Option(1, "--workers", "-n", help="Processes (one per partition); 1 trains without communication."),
    model: Model = typer.Option(Model.gcn, "--model", help="gcn, sage (mean) or gin, from PyG layers."),
    comm: Comm = typer.Option(Comm.spst, "--comm", help="spst (DGCL plan), p2p (direct, one stage) or allreduce (PyG-SPMD baseline: all-reduce N x D per layer)."),
    topology: Optional[str] = typer.Option(None, "--topology", help="Planned-for topology (default star:n=WORKERS). " + TOPOLOGY_HELP),
    epochs: int = typer.Option(200, "--epochs"),
    hidden: Optional[int] = typer.Option(None, "--hidden", help="Hidden width (default: the model's recipe, gcn 16, sage/gin 64)."),
    layers: int = typer.Option(2, "--layers"),
    lr: Optional[float] = typer.Option(None, "--lr", help="Adam learning rate (default: the recipe's, 0.01)."),
    weight_decay: Optional[float] = typer.Option(None, "--weight-decay", help="L2 coefficient (default: the recipe's, 5e-4; gcn on the first layer only, as Kipf & Welling)."),
    dropout: Optional[float] = typer.Option(None, "--dropout", help="Dropout before every layer, keyed by vertex id (default: the recipe's, 0.5)."),
    normalize_features: bool = typer.Option(True, "--normalize-features/--raw-features", help="Row-normalise the input features as PyG's NormalizeFeatures (the standard recipe)."),
    cost_model: Optional[CostModelName] = typer.Option(None, "--cost-model", help=COST_MODEL_HELP),
    seed: int = typer.Option(0, "--seed", help="Seed of the model, dropout, partitioner and planner."),
    method: Method = MethodOpt,
    parts_file: Optional[Path] = PartsFileOpt,
    plan_file: Optional[Path] = typer.Option(None, "--plan-file", help="A plan .npz (from `netweave plan --out`) for that partition."),
    timeout: float = typer.Option(120.0, "--timeout", help="Seconds to wait for the rendezvous and for any peer."),
    device: str = typer.Option("cpu", "--device", help="cpu (gloo) or cuda (NCCL, one GPU per rank)."),
    dump_logits: Optional[Path] = typer.Option(None, "--dump-logits", help="Write the final (N, C) logits as .npy."),
    as_json: bool = JsonOpt,
):
    """Train a GNN on the full graph across WORKERS processes that exchange embeddings by a plan."""
    from ..scenarios import TrainScenario

    report = TrainScenario(
        dataset=dataset, workers=workers, model=model.value, comm=comm.value, topology=topology, epochs=epochs,
        hidden=hidden, layers=layers, lr=lr, weight_decay=weight_decay, dropout=dropout, seed=seed,
        method=method.value, parts_file=path_str(parts_file), plan_file=path_str(plan_file), timeout_s=timeout, device=device,
        dump_logits=path_str(dump_logits), normalize_features=normalize_features,
        **({"cost_model": cost_model.value} if cost_model else {})).run()
    if report is None:  # a torchrun rank other than 0
        return
    if as_json:
        return emit_json(report.summary())
    out.print(table(f"{report.model} on {dataset}, {report.workers} worker(s), {report.comm}", *report.epoch_rows()))
    out.print(table("summary", {k: v for k, v in report.summary().items() if k != "epochs"}))

