"""``netweave aggsvc demo``: workers of mixed precisions send tensors through aggregators and the PS
on loopback, under injected loss, duplication and reordering; the PS's sums are checked exactly."""

from __future__ import annotations

import asyncio
import time

import numpy as np

from ..errors import NetweaveError
from ..route.jobs import precision_mix
from . import fixedpoint
from .packet import MAX_VALUES
from .service import Faults, run_service


SPARE_FILES = 64  # descriptors kept free for the interpreter, its imports and the event loop


def check_sockets(needed: int) -> None:
    """Refuse, in one line, a demo needing more UDP sockets (one per endpoint) than this process may open."""
    import resource

    soft, _ = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft != resource.RLIM_INFINITY and needed + SPARE_FILES > soft:
        raise NetweaveError(f"aggsvc demo needs {needed} UDP sockets (one per worker, aggregator and the PS), more than "
                            f"this process may open (ulimit -n is {soft}); use at most {max(soft - SPARE_FILES - 1, 0)} "
                            "endpoints or raise the limit with ulimit -n")


def demo(workers: int = 8, aggregators: int = 2, epochs: int = 2, tensors: int = 3, values: int = 1000,
         faults: Faults = Faults(), seed: int = 0, mix: dict[str, float] | None = None, timeout_s: float = 0.02) -> dict:
    """Run the service once and compare every result stream with the integer sum of what was sent.

    Workers go round robin to aggregators ``1..aggregators``; every fifth goes straight to the PS.
    """
    if workers < 1 or aggregators < 0 or epochs < 1 or tensors < 1 or not 1 <= values <= MAX_VALUES:
        raise NetweaveError(f"aggsvc demo needs workers, epochs and tensors ≥ 1 and 1..{MAX_VALUES} values per tensor")
    if workers > 0xFFFF or aggregators >= 0xFFFF:
        raise NetweaveError(f"aggsvc demo: --workers {workers} / --aggregators {aggregators} exceed the packet's 16-bit "
                            "wor_id / agg_id (at most 65535 workers)")
    check_sockets(workers + aggregators + 1)
    rng = np.random.default_rng(seed)
    prec = dict(enumerate(precision_mix(mix or {"fp8": 5, "fp16": 3, "fp32": 2}, workers, rng), start=1))
    assignment = {w: (0 if w % 5 == 0 or aggregators == 0 else 1 + (w - 1) % aggregators) for w in prec}
    sent = {w: {(e, t): fixedpoint.encode(rng.normal(0, 0.5, values), prec[w])[0]
                for e in range(epochs) for t in range(tensors)} for w in prec}
    t0 = time.perf_counter()
    out = asyncio.run(run_service(assignment, prec, sent, faults, seed, timeout_s))
    elapsed = time.perf_counter() - t0
    exact = True
    for key, streams in out["streams"].items():
        for (agg, p), got in streams.items():
            members = [w for w in prec if assignment[w] == agg and prec[w] == p]
            want = np.sum([sent[w][key].astype(np.int64) for w in members], axis=0)
            exact &= bool(np.array_equal(got.astype(np.int64), want))
    return {"workers": workers, "aggregators": aggregators, "tensors_per_worker": epochs * tensors,
            "values_per_tensor": values, "loss": faults.loss, "dup": faults.dup, "reorder": faults.reorder,
            "exact": exact, "result_streams": sum(len(s) for s in out["streams"].values()), "elapsed_s": elapsed,
            **{k: v for k, v in out.items() if k not in ("totals", "streams", "counters")}, **out["counters"]}
