"""Training through the testbed: 2 fp32 workers aggregated in XDP (or by the PS) follow the
single-process run of the same model, data and seed, epoch by epoch (needs root, clang, torch and
scikit-learn: skipped otherwise)."""

import shutil

import numpy as np
import pytest

from netweave.testbed.net import netns

torch = pytest.importorskip("torch")
pytest.importorskip("sklearn", reason="the testbed's digits come from scikit-learn (the test extra)")
missing = netns.missing_requirements("clang")
pytestmark = pytest.mark.skipif(bool(missing) or shutil.which("clang") is None,
                                reason="the testbed needs " + ("; ".join(missing) or "clang"))


def train_on_testbed(precisions: list[str], topology: str | None = None, **settings):
    """One run of :func:`netweave.testbed.agg.train` on ``topology`` (default ``star:n=WORKERS+1``)."""
    from netweave.testbed.agg import TrainRun, train
    from netweave.topology import load_topology_spec

    topo = load_topology_spec(topology or f"star:n={len(precisions) + 1}")
    return train(TrainRun(topology=topo, precisions=tuple(precisions), **settings))


def single_process(epochs: int, batch: int = 64, lr: float = 0.05, seed: int = 0) -> list[float]:
    """Plain PyTorch: the whole batch in one process, the training loss after every epoch."""
    from netweave.testbed.agg.data import digits
    from netweave.testbed.agg.models import lenet5

    torch.manual_seed(seed)
    x, y, _, _ = digits(seed)
    model = lenet5()
    opt = torch.optim.SGD(model.parameters(), lr=lr, momentum=0.9)
    losses = []
    for _ in range(epochs):
        for s in range(len(x) // batch):
            b = slice(s * batch, (s + 1) * batch)
            opt.zero_grad()
            torch.nn.functional.cross_entropy(model(torch.from_numpy(x[b])), torch.from_numpy(y[b])).backward()
            opt.step()
        with torch.no_grad():
            losses.append(float(torch.nn.functional.cross_entropy(model(torch.from_numpy(x)), torch.from_numpy(y))))
    return losses


@pytest.mark.slow
@pytest.mark.parametrize("routing, mode", [("pahina", "stream"), ("pahina", "ps"), ("ps", "ps")])
def test_two_fp32_workers_follow_the_single_process_run(routing, mode):
    """fp32 on the wire: the PS's fixed point resolves 2^-25, the streaming block floating point
    2^-26 of a chunk's largest value (and a chunk whose value would not fit goes again, exactly)."""
    r = train_on_testbed(["fp32", "fp32"], routing=routing, mode=mode, epochs=2, timeout_s=60)
    assert np.allclose([e["loss"] for e in r.epochs], single_process(2), atol=1e-4)
    steps = r.summary["steps"]
    if mode == "stream":  # every chunk (512 fp32 values) summed by the switch's XDP program, once a round
        retried = sum(e["chunks_retried"] for e in r.epochs)
        assert r.agent["counters"]["results"] == steps * -(-r.summary["parameters"] // 512) + retried
        assert r.agent["counters"]["mismatched"] == 0 and r.agent["counters"]["unknown"] == 0
        per_epoch = steps // 2  # every rank's timing per step of each epoch; a bucket goes before the compute ends
        assert sorted(r.timing) == [0, 1] and all(len(t["first_s"]) == per_epoch for t in r.timing[1])
        assert len(r.slowest("first_s")) == steps
        assert all(0 < f <= c for f, c in zip(r.slowest("first_s"), r.slowest("compute_s")))
    elif routing == "pahina":  # every gradient chunk was aggregated by the switch, once per step
        assert r.agent["counters"]["results"] == steps * -(-r.summary["parameters"] // 256)
    else:
        assert r.agent is None and r.epochs[-1]["collector"]["raw"] == 2 * steps * -(-r.summary["parameters"] // 256)


@pytest.mark.slow
def test_a_killed_worker_ends_the_run_at_once_with_one_line(tmp_path):
    """SIGKILL to one worker mid-run: `testbed train` stops within seconds (far inside its 60 s
    timeout), says which worker died in one line, and leaves no namespace or process behind."""
    import os
    import signal
    import subprocess
    import sys
    import time

    from netweave.testbed.net.cluster import new_prefix

    cli = subprocess.Popen([sys.executable, "-m", "netweave", "testbed", "train", "--precisions", "fp32:2",
                            "--epochs", "50"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    prefix = new_prefix(cli.pid)
    line = cli.stdout.readline()  # the first epoch finished: every process is up
    assert line.startswith("epoch 1"), cli.stderr.read()
    victim = netns.pids_in(f"{prefix}-n3")  # H2: node 3 of star:n=3 (S0, H0, H1, H2)
    assert victim
    t0 = time.monotonic()
    os.kill(victim[0], signal.SIGKILL)
    out, err = cli.communicate(timeout=60)
    stopped_s = time.monotonic() - t0
    lines = err.strip().splitlines()
    assert cli.returncode == 2 and len(lines) == 1, err
    assert lines[0].startswith("netweave: error: worker 2 (H2) died (signal 9)")
    assert stopped_s < 15 and not netns.namespaces(prefix + "-")


@pytest.mark.slow
def test_four_fp32_workers_aggregated_at_two_leaves_of_a_tree_follow_the_single_process_run():
    """ATP on the bridge tree: each leaf switch's XDP program sums its two workers, the PS adds the
    two leaves' results, the parameters come back by multicast; the loss is plain PyTorch's."""
    r = train_on_testbed(["fp32"] * 4, routing="atp", mode="ps", epochs=1, timeout_s=60,
                         topology="tree:leaves=2,hosts=2")
    assert sorted(r.agents) == ["L0", "L1"]
    assert np.allclose([e["loss"] for e in r.epochs], single_process(1), atol=1e-4)
    chunks = -(-r.summary["parameters"] // 256)
    for report in r.agents.values():
        assert report["counters"]["results"] >= r.summary["steps"] * chunks
    assert r.epochs[-1]["collector"]["results"] == 2 * r.summary["steps"] * chunks  # four streams in, two out
    assert r.multicast and all(report for report in r.multicast.values())  # every switch of the tree forwarded


@pytest.mark.slow
@pytest.mark.parametrize("dataplane", ["xdp", "user"])
def test_aro_aggregates_in_two_levels_and_follows_the_single_process_run(dataplane):
    """ARO on the bridge tree: each leaf's data plane (XDP, or the userspace reference) sums its two
    workers and sends the sum on as DATA of the root's aggregator, which sums the leaves for the
    PS; the loss is plain PyTorch's."""
    r = train_on_testbed(["fp32"] * 4, routing="aro", dataplane=dataplane, mode="ps", epochs=1, timeout_s=60,
                         topology="tree:leaves=2,hosts=2")
    assert sorted(r.agents) == ["L0", "L1", "R0"]
    assert np.allclose([e["loss"] for e in r.epochs], single_process(1), atol=1e-4)
    chunks = -(-r.summary["parameters"] // 256)
    # every level summed every chunk (more than once only where a NACK had a key aggregated afresh)
    assert all(a["counters"]["results"] >= r.summary["steps"] * chunks for a in r.agents.values())
    assert r.epochs[-1]["collector"]["results"] == r.summary["steps"] * chunks  # one sum per chunk at the PS
    assert r.epochs[-1]["collector"]["raw"] == 0


@pytest.mark.slow
@pytest.mark.parametrize("dataplane", ["xdp", "user"])
def test_streaming_through_two_levels_follows_the_single_process_run(dataplane):
    """ARO's two-level tree, streaming: each leaf sums its two workers and sends the partial sum up
    as DATA of the root's aggregator, whose complete sums come down to all four workers (the root's
    devmap broadcast, then each leaf's); the loss is plain PyTorch's, and the data planes agree."""
    r = train_on_testbed(["fp32"] * 4, routing="aro", dataplane=dataplane, epochs=1, timeout_s=60,
                         topology="tree:leaves=2,hosts=2")
    assert np.allclose([e["loss"] for e in r.epochs], single_process(1), atol=1e-4)
    chunks = r.summary["steps"] * -(-r.summary["parameters"] // 512) + r.epochs[-1]["chunks_retried"]
    counters = {name: a["counters"] for name, a in r.agents.items()}
    assert counters["R0"]["results"] == chunks and counters["R0"]["accepted"] == 2 * chunks
    assert counters["L0"]["partials"] == counters["L1"]["partials"] == chunks
    if dataplane == "xdp":  # every switch forwarded the root's sums down the tree
        assert counters["L0"]["forwarded"] >= chunks and counters["L1"]["forwarded"] >= chunks


@pytest.mark.slow
def test_the_gloo_ring_baseline_follows_the_single_process_run():
    """--routing ring: no PS, gloo's all-reduce of fp32 gradients over the emulated links (float
    sums in another order than one process's: equal to 1e-3)."""
    r = train_on_testbed(["fp32"] * 2, routing="ring", epochs=1, timeout_s=60)
    assert r.agents == {} and r.plan.groups == {} and r.timing == {}  # no streaming workers: no per-step timing
    assert np.allclose([e["loss"] for e in r.epochs], single_process(1), atol=1e-3)
    assert r.epochs[0]["steps"] == r.summary["steps"] and r.epochs[0]["gradient_bytes"] > 0


def test_a_gradient_that_is_not_finite_is_the_loss_diverging():
    import torch

    from netweave.testbed.agg.steps import Diverged, flat_gradient

    model = torch.nn.Linear(3, 2)
    model(torch.ones(1, 3)).sum().backward()
    assert flat_gradient(model, 0).shape == (8,)
    model.weight.grad[0, 1] = float("nan")
    with pytest.raises(Diverged, match="at step 7 has 1 NaN or infinite values"):
        flat_gradient(model, 7)


@pytest.mark.slow
@pytest.mark.parametrize("routing, precisions", [("pahina", "fp8:2"), ("ring", "fp32:2")])
def test_a_diverging_run_ends_in_one_line_that_says_so(routing, precisions):
    """--lr 1e9: the gradients become NaN within a few steps; an fp8 worker once died of an internal
    ValueError in its cast (issue 29), the ring's rank 0 as "the PS failed"."""
    import subprocess
    import sys

    done = subprocess.run([sys.executable, "-m", "netweave", "testbed", "train", "--precisions", precisions,
                           "--routing", routing, "--epochs", "2", "--steps", "20", "--lr", "1e9"],
                          capture_output=True, text=True, timeout=300)
    lines = done.stderr.strip().splitlines()
    assert done.returncode == 2 and len(lines) == 1, done.stderr
    assert lines[0].startswith("netweave: error: the loss diverged: worker ") and lines[0].endswith("(lower --lr)")
