"""The ``netweave`` command's shared vocabulary: the choices of its options (enums) and the help
texts and options that several sub-commands repeat. Imports only typer: ``netweave --help`` stays fast."""

from __future__ import annotations

from enum import Enum
from pathlib import Path

import typer

JsonOpt = typer.Option(False, "--json", help="Print one JSON object on stdout.")
ProcessesOpt = typer.Option(None, "--processes", min=1, help="Local processes for the cases (default: all cores; 1: in this process).")
WorkersAliasOpt = typer.Option(None, "--workers", min=1, hidden=True, help="The old name of --processes.")
RayOpt = typer.Option(None, "--ray", help="Run the cases on Ray: auto, local or HOST:PORT / ray://HOST:PORT (needs the ray extra).")
DATASET_HELP = "Dataset spec: cora, planetoid:DIR:NAME, npz:FILE, snap:FILE|GLOB, musae:DIR, rmat:n=…,m=…, reddit-like:scale=… (see `netweave datasets`)."
TOPOLOGY_HELP = "Topology YAML file or builder spec: dgx1[:gpus=K], dgx1x2, pcie8, star:n=…, leafspine:leaves=…,spines=…,hosts=…, fattree:k=…, random:switches=…,degree=…,hosts=…"
COST_MODEL_HELP = ("Cost model of the exchange: alpha-beta (default: per-stage overhead, link latency, achieved "
                   "bandwidth; calibrated on gloo/TCP) or dgcl (the paper's §5.1, bandwidth only). It picks SPST or P2P.")
TRANSPORT_HELP = ("Whose constants the alpha-beta model uses: gloo (CPU, TCP; measured here) or nccl (GPU, NVLink/PCIe; "
                  "NCCL's latency figures). Default: nccl when the topology's workers are GPUs, else gloo.")
PARTITIONER_HELP = "Partitioner when no --parts-file is given (metis32: the system's 32-bit METIS, half the memory on large graphs, other parts)."
FeatureDimOpt = typer.Option(None, "--feature-dim", help="Float32 values per embedding (default: the dataset's, else 128).")
PartsFileOpt = typer.Option(None, "--parts-file", help="A partition .npz (from `netweave partition --out`) with one part per worker.")
GAMR_START_HELP = "GAMR start vertex (default: highest degree)."


class Method(str, Enum):
    metis = "metis"
    metis32 = "metis32"
    random = "random"
    range = "range"
    hierarchical = "hierarchical"


MethodOpt = typer.Option(Method.metis, "--method", help=PARTITIONER_HELP)


class Planner(str, Enum):
    p2p = "p2p"
    spst = "spst"


class CostModelName(str, Enum):  # netweave.plan.cost.COST_MODELS (a test keeps them equal)
    alpha_beta = "alpha-beta"
    dgcl = "dgcl"


class TransportName(str, Enum):  # netweave.plan.transport.TRANSPORTS (a test keeps them equal)
    gloo = "gloo"
    nccl = "nccl"


class Model(str, Enum):
    gcn = "gcn"
    sage = "sage"
    gin = "gin"


class Comm(str, Enum):
    p2p = "p2p"
    spst = "spst"
    allreduce = "allreduce"


class Strategy(str, Enum):
    host = "host"
    straw = "straw"
    switchgnn = "switchgnn"


Blocking = Enum("Blocking", {name: name for name in ("auto", "paper", "multilevel", "destination", "hybrid", "single",
                                                        "multicast")},
                type=str)


class Order(str, Enum):
    random = "random"
    gamr = "gamr"


class Algorithm(str, Enum):
    aro = "aro"
    ecmp = "ecmp"
    grid = "grid"
    aggtree = "aggtree"
    ps = "ps"
    pahina = "pahina"
    atp = "atp"


def renamed(value, old_value, option: str, old: str):
    """An option's value given by its name or by its old, hidden one (both: they must agree)."""
    if value is not None and old_value is not None and value != old_value:
        from ..errors import NetweaveError

        raise NetweaveError(f"{option} {value} and {old} {old_value} disagree; {old} is the old name of {option}: give one")
    return value if value is not None else old_value


def path_str(path: Path | None) -> str | None:
    """A path option as the ``str`` a scenario field holds."""
    return None if path is None else str(path)
