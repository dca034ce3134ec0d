"""The streaming aggregation alone, on vectors it makes up: the reference check and the data-plane
benchmark of issue 31 (no model, no optimizer).

:func:`probe_on_testbed` brings up a cluster and a run's aggregators (:func:`~.run.start_stream`),
and one probe role per worker (``python -m netweave.testbed.agg.stream_probe CONFIG``, a
:class:`StreamProbeConfig`), which aggregates :func:`vector` of every step through its
:class:`~.stream_client.StreamClient` and writes every step's complete sums, as they came, with
their exponents and the mean, to ``OUT/worker<w>.npz``. A test then holds them against
:mod:`.blockfp`'s numpy aggregation of the same vectors at the same exponents, bit for bit, and
the XDP data plane against the userspace one.
"""

from __future__ import annotations

import json
import os
import sys
import time
from dataclasses import dataclass

import numpy as np

from ..net.role import RoleConfig
from .stream_client import StreamClient, StreamEndpoint


@dataclass(frozen=True, kw_only=True)
class StreamProbeConfig(RoleConfig):
    """A probe role: its endpoint, the vectors' ``size``, ``steps`` and ``seed``, and ``out`` (a directory)."""

    endpoint: StreamEndpoint
    size: int
    steps: int
    seed: int
    out: str


def vector(seed: int, wor_id: int, step: int, size: int) -> np.ndarray:
    """Worker ``wor_id``'s float32 values at ``step``: normal, with a magnitude that jumps by up to
    2^±4 between steps (so that some chunks clip and go a second round) and a few large outliers."""
    rng = np.random.default_rng([seed, wor_id, step])
    g = rng.standard_normal(size) * 2.0 ** int(rng.integers(-4, 5))
    g[rng.integers(0, size, max(1, size // 5000))] *= 64
    return g.astype(np.float32)


def probe(config: StreamProbeConfig) -> dict:
    e = config.endpoint
    client = StreamClient(e, config.size)
    client.first_exponents(np.max([np.abs(vector(config.seed, w, 0, config.size)) for w in range(1, e.workers + 1)],
                                  axis=0))
    record: dict[str, list] = {"means": []}
    t0 = time.perf_counter()
    for step in range(config.steps):
        client.begin(step)
        client.flat[:] = vector(config.seed, e.wor_id, step, config.size)
        record["means"].append(client.finish())
        for s in range(len(e.streams)):
            record.setdefault(f"u{s}", []).append(client.sums.u[s].copy())
            record.setdefault(f"e{s}", []).append(client.sums.exponent[s].copy())
    seconds = time.perf_counter() - t0
    client.close()
    np.savez(os.path.join(config.out, f"worker{e.wor_id}.npz"), **{k: np.stack(v) for k, v in record.items()})
    return {"done": True, "seconds": seconds, "resent": client.resent, "retried": client.retried}


def probe_on_testbed(topology, precisions: list[str], out: str, *, routing: str = "pahina", dataplane: str = "xdp",
                     size: int = 20_000, steps: int = 4, seed: int = 0, scale: float = 0.1, impairment=None,
                     timeout_s: float = 60.0) -> dict:
    """Run the probe on ``topology`` with one worker per precision (see the module docstring);
    returns the agents' reports, the first worker's line and the BPF programs' run time (if
    ``kernel.bpf_stats_enabled``)."""
    from ..net.accounting import bpf_run_time
    from ..net.cluster import plan_cluster
    from ..net.lifecycle import Testbed
    from ..net.supervisor import Supervisor
    from .plan import plan_training
    from .run import REASONS, start_stream

    plan = plan_training(topology, list(precisions), routing, scale, seed, 100.0)
    os.makedirs(out, exist_ok=True)
    os.chmod(out, 0o755)
    with Testbed(plan_cluster(topology, scale=scale, routes=plan.routes or None, impairment=impairment)) as p, \
            Supervisor(timeout_s, REASONS) as supervisor:
        first, agents = start_stream(plan, p, supervisor, size, dataplane, scale, timeout_s, lambda w, endpoint: (
            "netweave.testbed.agg.stream_probe",
            StreamProbeConfig(endpoint=endpoint, size=size, steps=steps, seed=seed, out=out)))
        workers = [r for r in supervisor.roles if r.name.startswith("worker")]
        supervisor.wait(workers, timeout_s * steps)
        bpf = bpf_run_time()  # while the agents still hold their programs (loaded for this run: from zero)
        return {"agents": {name: supervisor.finish(role) for name, role in agents.items()},
                "worker": json.loads(workers[0].stdout.strip().splitlines()[-1]), "plan": plan, "bpf": bpf}


def main() -> None:
    print(json.dumps(probe(StreamProbeConfig.from_json(sys.argv[1]))), flush=True)


if __name__ == "__main__":
    main()
