"""The graphs the testbed's GNN benches train and plan on (issue 32), and where the real ones are:
``$NETWEAVE_SHARED_DATA`` (an empty value counts as unset), else ``../shared/data`` beside the
checkout. A module of the benches, not of netweave: each bench imports it from its own folder."""
from __future__ import annotations

import os
import tempfile
from pathlib import Path

SHARED = Path(os.environ.get("NETWEAVE_SHARED_DATA") or Path(__file__).resolve().parents[2] / "shared" / "data")
AMAZON_CS = f"{SHARED}/gnn_benchmark_npz/amazon_cs.npz"
DATASETS = {"amazon_cs": AMAZON_CS, "reddit-like": "reddit-like:scale=0.02"}


def forward_plans(spec: str, workers: int, memory: int, hidden: int) -> list[dict] | None:
    """The plan arrays of a 2-layer GCN's two forward exchanges (``h W`` on the wire, paper blocks,
    seed 0) as the testbed's switch is loaded with them; ``None`` where ``spec`` is a file that is
    not here (the bench says so and goes on)."""
    from netweave.testbed.gnn.job import prepare_gnn_job
    from netweave.testbed.gnn.plans import load_plans

    if spec.endswith(".npz") and not os.path.exists(spec):
        return None
    with tempfile.TemporaryDirectory() as d:
        prepare_gnn_job(spec, workers, memory, d, hidden=hidden, layers=2, seed=0, blocking="paper",
                        transform_first=True)
        return load_plans(os.path.join(d, "plans.npz"))[:2]


def each_plans(names: list[str], workers: int, memory: int, hidden: int, columns: int):
    """``(name, forward_plans)`` for each dataset of ``names`` (a key of :data:`DATASETS` or a spec);
    one whose file is not here is a row of the bench's table of ``columns`` saying so."""
    for name in names:
        spec = DATASETS.get(name, name)
        plans = forward_plans(spec, workers, memory, hidden)
        if plans is None:
            print(f"| {name} | (not here: {spec}) |" + " |" * (columns - 2), flush=True)
            continue
        yield name, plans


def run_bench(main, name: str) -> None:
    """``main()`` of bench ``name`` as netweave's commands end: a bad dataset or setting one line on
    stderr and exit 2, Ctrl-C exit 130 (the tables benches write their output only at the end)."""
    import sys

    from netweave.errors import NetweaveError

    try:
        main()
    except KeyboardInterrupt:
        print(f"{name}: interrupted; nothing written", file=sys.stderr)
        sys.exit(130)
    except NetweaveError as e:
        print(f"{name}: error: {e}", file=sys.stderr)
        sys.exit(2)
