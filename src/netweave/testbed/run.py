"""One training run on the emulated cluster: the cluster up, the switch's agent, the PS and the
workers started in their namespaces, the PS's per-epoch lines collected, everything removed.

The cluster is ``star:n=WORKERS+1`` at ``scale``: host H0 is the PS, H1…HN are the workers, S0 is
the INA switch. ``routing``: ``pahina`` aggregates each precision at S0 (``dataplane`` ``xdp``, in the
kernel, or ``user``, the reference in S0's agent); ``ps`` sends every gradient to the PS, which
sums them itself (no INA); ``ring`` is gloo's ring all-reduce among the workers (fp32, no PS),
what users run today.
"""

from __future__ import annotations

import json
import subprocess
import sys
from dataclasses import dataclass, field

from ..errors import NetweaveError

PORT, CONTROL_PORT = 47000, 47001
ROUTINGS = ("pahina", "ps", "ring")


@dataclass
class TestbedRun:
    """What a run reports: one record per epoch, the PS's summary and the switch agent's counters."""

    __test__ = False

    epochs: list[dict] = field(default_factory=list)
    summary: dict = field(default_factory=dict)
    agent: dict | None = None


def _python(ns: str, module: str, *args: str) -> subprocess.Popen:
    return subprocess.Popen(["ip", "netns", "exec", ns, sys.executable, "-m", module, *args],
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def _follow(ps, procs, workers, run: TestbedRun, on_epoch, timeout_s: float) -> None:
    """Read the lines of the process that reports epochs (the PS, or ring rank 0) as they come; a
    worker that dies, or a reporter that fails, ends the run at once with one line (the others are
    killed by the caller)."""
    import select

    while True:
        for w, proc in zip(workers, procs):
            code = proc.poll()
            if code not in (None, 0):
                how = f"signal {-code}" if code < 0 else f"exit {code}: {(proc.stderr.read().strip().splitlines() or [''])[-1]}"
                raise NetweaveError(f"worker {w} (H{w}) died ({how}); the run was stopped")
        if select.select([ps.stdout], [], [], 0.2)[0]:
            line = ps.stdout.readline()  # the PS writes whole lines and flushes each
            if not line:  # the PS ended
                ps.wait(timeout=timeout_s)
                if ps.returncode or not run.summary:
                    raise NetweaveError(f"the PS failed: {(ps.stderr.read().strip().splitlines() or ['?'])[-1]}")
                for proc in procs:
                    proc.wait(timeout=timeout_s)
                return
            record = json.loads(line)
            if "done" in record:
                run.summary = record
            else:
                run.epochs.append(record)
                if on_epoch:
                    on_epoch(record)


def train_on_testbed(precisions: list[str], routing: str = "pahina", dataplane: str = "xdp", epochs: int = 3,
                     scale: float = 0.1, batch: int = 64, lr: float = 0.05, momentum: float = 0.9, seed: int = 0,
                     timeout_s: float = 60.0, on_epoch=None) -> TestbedRun:
    """Train LeNet-5 on the digits with one worker per entry of ``precisions`` (fp8/fp16/fp32)."""
    from ..topology import load_topology_spec
    from .cluster import plan_cluster
    from .lifecycle import Testbed

    if routing not in ROUTINGS:
        raise NetweaveError(f"--routing {routing!r}: use one of {', '.join(ROUTINGS)}")
    if not precisions or any(p not in ("fp8", "fp16", "fp32") for p in precisions):
        raise NetweaveError("--precisions: give each worker fp8, fp16 or fp32")
    if batch % len(precisions):
        raise NetweaveError(f"--batch {batch} must be a multiple of the {len(precisions)} workers")
    n = len(precisions)
    workers = {w + 1: p for w, p in enumerate(precisions)}
    plan = plan_cluster(load_topology_spec(f"star:n={n + 1}"), scale=scale)
    run = TestbedRun()
    with Testbed(plan) as p:
        ps_addr = (p.address["H0"], PORT)
        switch = (p.address["S0"], PORT)
        addresses = {w: (p.address[f"H{w}"], PORT) for w in workers}
        agent = None
        if routing == "pahina":
            agent = _python(p.namespace["S0"], "netweave.testbed.agent", json.dumps({
                "agg_id": 1, "port": PORT, "workers": workers, "timeout_s": 0.1, "address": switch[0],
                "addresses": {w: a[0] for w, a in addresses.items()}, "dataplane": dataplane, "ps": ps_addr}))
            ready = agent.stdout.readline()
            if not ready:
                raise NetweaveError(f"the switch agent did not start: {agent.stderr.read().strip().splitlines()[-1:]}")
        common = {"seed": seed, "batch": batch, "port": PORT, "agg_id": 1, "timeout_s": timeout_s}
        if routing == "ring":  # no PS: rank 0 (H1) prints the epochs, the other workers are followed
            ranks = [_python(p.namespace[f"H{w}"], "netweave.testbed.training", "ring", json.dumps(common | {
                "rank": w - 1, "workers": n, "master": p.address["H1"], "control_port": CONTROL_PORT,
                "interface": p.interface[f"H{w}", "S0"],
                "epochs": epochs, "lr": lr, "momentum": momentum})) for w in workers]
            leader, followers, follower_ids = ranks[0], ranks[1:], list(workers)[1:]
        else:
            leader = _python(p.namespace["H0"], "netweave.testbed.training", "ps", json.dumps(common | {
                "address": ps_addr[0], "control_port": CONTROL_PORT, "precisions": workers, "epochs": epochs,
                "lr": lr, "momentum": momentum, "retry_s": 0.5, "worker_addresses": addresses,
                "switch": switch if routing == "pahina" else None}))
            target = switch if routing == "pahina" and dataplane == "user" else ps_addr
            followers = [_python(p.namespace[f"H{w}"], "netweave.testbed.training", "worker", json.dumps(common | {
                "rank": w - 1, "workers": n, "wor_id": w, "precision": prec, "address": addresses[w][0],
                "target": target, "ps_control": (ps_addr[0], CONTROL_PORT)})) for w, prec in workers.items()]
            follower_ids = list(workers)
        try:
            _follow(leader, followers, follower_ids, run, on_epoch, timeout_s)
            if agent is not None:
                run.agent = json.loads(agent.communicate(input="", timeout=timeout_s)[0].strip().splitlines()[-1])
        finally:
            for proc in [leader, *followers, *([agent] if agent else [])]:
                if proc.poll() is None:
                    proc.kill()
    return run
