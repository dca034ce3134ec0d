"""GCN training through the emulated SwitchGNN switch (testbed/gnn_switch.py, gnn_training.py):
4 workers on cora follow single-process training, through the switch's aggregation (several
blocks, forwarded destinations) and peer to peer; nothing is left behind (needs root and
iproute2, torch and PyG: skipped otherwise)."""

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from netweave.testbed.net import netns

pytest.importorskip("torch")
pytest.importorskip("torch_geometric")
missing = netns.missing_requirements()
needs_root = pytest.mark.skipif(bool(missing), reason="the testbed needs " + "; ".join(missing))


def _left_behind() -> list[str]:
    from netweave.testbed.net.cluster import new_prefix

    return netns.namespaces(new_prefix() + "-")


@needs_root
@pytest.mark.slow
def test_ina_through_the_switch_follows_single_process():
    from netweave.testbed.gnn import train_gnn_on_testbed

    r = train_gnn_on_testbed("cora", workers=4, exchange="ina", memory_bytes=200_000, gbps=1.0, epochs=2,
                             timeout_s=120, dataplane="user", transform_first=False)  # 1,433 values a row: blocks
    assert r.planned[0]["blocks"] > 1 and r.planned[0]["forwarded_destinations"] > 0
    assert r.switch["blocks"] >= 2 * r.planned[0]["blocks"]  # layer 0 forward, twice (an epoch and the evaluation)
    assert r.switch["sums"] > 0 and r.switch["copies"] > 0 and r.switch["aggregated_edges"] > 0
    # the agent's aggregation cost: its thread's CPU time, at most the wall time the same code took
    assert 0 < r.switch["aggregate_s"] <= r.switch["aggregate_wall_s"] + 1e-3
    assert r.max_logit_diff < 1e-5
    assert len(r.epochs) == 2 and all(e["exchange_bytes"] > 0 for e in r.epochs)
    np.testing.assert_allclose([e["loss"] for e in r.epochs], r.single_losses, atol=1e-5)
    assert r.veth["up_bytes"] >= sum(e["exchange_bytes"] for e in r.epochs)  # the wire carries at least the messages
    for e in r.epochs:  # the links' share that names the bound is of the time outside the passes (accounting.py)
        assert 0 < e["compute_s"] < e["epoch_s"]
        assert e["accounting_busiest_link_busy_exchanging"] > e["accounting_busiest_link_busy"] > 0
        assert 0 < e["straggler_s"] < e["epoch_s"]  # four workers never begin an exchange at one instant
    assert not _left_behind()


@needs_root
@pytest.mark.slow
@pytest.mark.parametrize("transform_first", [True, False], ids=["hW", "h"])
def test_p2p_follows_single_process_and_sends_each_row_once_per_worker(transform_first):
    from netweave.testbed.gnn import train_gnn_on_testbed

    r = train_gnn_on_testbed("cora", workers=4, exchange="p2p", memory_bytes=200_000, gbps=1.0, epochs=2,
                             timeout_s=120, transform_first=transform_first)
    assert r.max_logit_diff < 1e-4
    rows = r.planned[-1]["p2p_rows"]
    # an epoch: with h W on the wire, each layer forward and backward (16 and 7 floats: cora's 7 classes);
    # else layer 0 forward (1433 floats), layer 1 forward and backward (16 floats); ids and headers on top
    widths = [16, 16, 7, 7] if transform_first else [1433, 16, 16]
    assert [p["dim"] for p in r.planned[:2]] == ([16, 7] if transform_first else [1433, 16])
    payload = rows * 4 * sum(widths)
    assert payload <= r.epochs[1]["exchange_bytes"] <= payload + rows * 4 * len(widths) + len(widths) * 12 * 40
    assert r.switch["exchanges"] == 0 and r.switch["grad_steps"] == 2
    assert not _left_behind()


def test_switch_shards_by_default_one_for_each_cpu_the_workers_leave():
    from netweave.testbed.gnn.launch import auto_switch_cpus
    from netweave.testbed.gnn.tables import MAX_SHARDS

    assert auto_switch_cpus(2, 8) == 2 and auto_switch_cpus(8, 8) == 2  # no CPU to spare: two shards still
    assert auto_switch_cpus(1, 8) == 1  # one CPU: one shard
    assert auto_switch_cpus(16, 8) == 8 and auto_switch_cpus(12, 8) == 4 and auto_switch_cpus(9, 4) == 5
    assert auto_switch_cpus(64, 8) == MAX_SHARDS
    assert auto_switch_cpus(16, 8, pinned=False) == 1  # unpinned, the switch takes locks and no shards


def test_the_wait_for_the_last_worker_is_summed_per_worker_and_averaged():
    from netweave.testbed.gnn.launch import straggler_s

    # two exchanges begun last by worker 1 at 0.2 and 1.5 s: worker 0 waited 0.2 + 0.5, worker 2 0.1 + 0.3
    assert straggler_s([[0.0, 1.0], [0.2, 1.5], [0.1, 1.2]]) == pytest.approx((0.7 + 0.0 + 0.4) / 3)
    assert straggler_s([[5.0], [5.0]]) == 0.0  # together: no wait
    assert straggler_s([]) == straggler_s([[], []]) == straggler_s([[0.0, 1.0], [0.5]]) == 0.0  # no times, or torn


def test_the_summary_takes_medians_after_the_first_epoch_and_the_most_frequent_bound():
    from netweave.testbed.gnn.launch import GnnTestbedRun

    def epoch(i, bound):
        return {"epoch": i, "epoch_s": 10.0 * i, "exchange_s": float(i), "straggler_s": 0.1 * i, "compute_s": 2.0 * i,
                "exchange_bytes": 100 * i, "exchange_received_bytes": 90 * i, "accounting_bound": bound}

    run = GnnTestbedRun("ina", epochs=[epoch(1, "cpu"), epoch(2, "network"), epoch(3, "cpu"), epoch(7, "network")])
    s = run.summary()
    assert (s["median_epoch_s"], s["median_exchange_s"], s["median_compute_s"]) == (30.0, 3.0, 6.0)  # epochs 2-4
    assert s["median_straggler_s"] == pytest.approx(0.3)
    assert (s["median_exchange_bytes"], s["median_exchange_received_bytes"]) == (300.0, 270.0)
    assert s["bound"] == "network"  # two of the three later epochs; the first (set-up) is left out
    one = GnnTestbedRun("p2p", epochs=[{"epoch": 1, "epoch_s": 4.0, "exchange_s": 1.0, "exchange_bytes": 8}]).summary()
    assert one["median_epoch_s"] == 4.0 and one["median_straggler_s"] is None and one["bound"] is None


def test_bad_input_is_one_line():
    for args, words in ((["cora", "--exchange", "bogus"], "use ina or p2p"),
                        (["cora", "--memory", "12QB"], "is not a size"),
                        (["cora", "--workers", "1"], "at least 2"),
                        (["cora", "--background", "1.5"], "fraction of the link rate"),
                        (["cora", "--switch-buffer-kb", "-4"], "a switch port's queue"),
                        (["cora", "--congestion-control", "--ecn-kb", "0"], "marking threshold"),
                        (["cora", "--switch-cpus", "99"], "this machine's CPUs"),
                        (["cora", "--switch-cpus", "-1"], "this machine's CPUs"),
                        (["cora", "--switch-cpus", "2", "--no-pin-switch"], "CPUs of their own"),
                        (["cora", "--column-slices", "-1"], "give 1 (whole rows) to 16")):
        done = subprocess.run([sys.executable, "-m", "netweave", "testbed", "gnn", *args], capture_output=True,
                              text=True, timeout=120)
        assert done.returncode == 2, done.stderr
        assert done.stderr.strip().startswith("netweave: error:") and words in done.stderr
        assert len(done.stderr.strip().splitlines()) == 1


@needs_root
@pytest.mark.slow
@pytest.mark.parametrize("overlap,transform_first,memory,cpus", [(False, False, 200_000, 1), (True, False, 200_000, 1),
                                                               (False, True, 8_000, 1), (False, True, 8_000, 2)],
                         ids=["blocks", "overlapped", "hW-blocks", "hW-sharded"])
def test_ina_through_the_kernel_data_plane_follows_single_process(overlap, transform_first, memory, cpus):
    """The switch as tc-BPF (gnn/bpf/gnn_switch.bpf.c): several blocks (overlapped: two in
    flight), forwarded destinations (copies), sums down as they complete; logits within 1e-5 of
    single-process training. With h W on the wire (16 and 7 values a row, every layer forward and
    backward) in a switch of 8 KB, so that each layer still takes several blocks. The overlapped
    run's switch is not pinned to one CPU (``pin_switch=False``), the others' are; the sharded
    run's aggregators are spread over two CPUs."""
    from netweave.testbed.gnn import train_gnn_on_testbed
    from netweave.testbed.gnn.kswitch import TIMED

    backlog = Path("/proc/sys/net/core/netdev_max_backlog").read_text()
    r = train_gnn_on_testbed("cora", workers=4, exchange="ina", memory_bytes=memory, gbps=1.0, epochs=2,
                             timeout_s=60, dataplane="xdp", overlap=overlap, transform_first=transform_first,
                             pin_switch=not overlap, switch_cpus=cpus)
    # pinned: the data plane ran on the last CPU (RPS on the switch's ports); the input queue is put back
    mine = os.sched_getaffinity(0)
    assert r.switch_cpu == (None if overlap else max(mine)) and r.switch_cpus == cpus
    assert r.shard_cpus == (None if overlap else sorted(mine)[-cpus:])  # the highest this process may use
    free = set(mine) - set(sorted(mine)[-cpus:])
    assert r.host_cpus == (sorted(free) if not overlap and len(free) >= 4 else None)  # the hosts apart from the switch
    assert r.worker_cpus == [r.host_cpus or sorted(mine)] * 4  # as each worker saw its own, through ip netns exec
    assert (r.switch["kernel_sharded"] > 0) == (cpus > 1)
    assert Path("/proc/sys/net/core/netdev_max_backlog").read_text() == backlog
    assert [p["dim"] for p in r.planned[:2]] == ([16, 7] if transform_first else [1433, 16])
    assert r.dataplane == "xdp" and r.planned[0]["blocks"] > 1 and r.planned[0]["overlap"] == overlap and r.planned[0]["forwarded_destinations"] > 0
    assert r.switch["kernel_sums"] > 0 and r.switch["kernel_copies"] > 0 and r.switch["kernel_aggregated"] > 0
    assert r.switch["kernel_bad"] == 0 and r.switch["kernel_saturated"] == 0 and r.switch["exchanges"] == 0
    parts = [r.switch[f"kernel_{k}"] for k in TIMED]
    assert all(p > 0 for p in parts) and r.switch["kernel_cleared"] > 0
    if r.switch.get("bpf_run_time_ns"):  # the parts of a run are inside the kernel's run time
        assert sum(parts) < r.switch["bpf_run_time_ns"]
    busiest = r.switch["kernel_busiest_cpu_ns"]  # one CPU's parts, read per CPU
    assert 0 < busiest <= sum(parts)
    if not overlap:  # pinned: one CPU did it all, or each of two shards some of it
        assert (busiest == sum(parts)) == (cpus == 1)
    assert r.max_logit_diff <= 1e-5
    np.testing.assert_allclose([e["loss"] for e in r.epochs], r.single_losses, atol=1e-5)
    assert all(e["exchange_bytes"] > 0 for e in r.epochs)
    assert not _left_behind()


@needs_root
@pytest.mark.slow
@pytest.mark.parametrize("slices,loss,dataplane", [(2, 0.0, "xdp"), (4, 0.05, "xdp"), (2, 0.0, "user")],
                         ids=["kernel", "kernel-loss", "agent"])
def test_column_slices_follow_single_process(slices, loss, dataplane):
    """Rows of layer 0 (16 values) in 2 or 4 column slices, every unit's first slice before any
    unit's second (testbed/gnn/slices.py); layer 1's 7 values whole. Through the kernel data plane,
    also under 5 % loss per link (the pulls name sliced cells), and through the userspace agent."""
    from netweave.testbed.gnn import train_gnn_on_testbed

    r = train_gnn_on_testbed("cora", workers=4, exchange="ina", memory_bytes=200_000, gbps=1.0, epochs=2,
                             timeout_s=60, dataplane=dataplane, loss=loss, retransmit_s=0.05, switch_cpus=1,
                             column_slices=slices)
    assert [(p["dim"], p["slices"], p["blocks"]) for p in r.planned[:2]] == [(16, slices, 1), (7, 1, 1)]
    assert r.planned[0]["units"] == slices * r.planned[1]["units"]  # every unit once a slice
    if dataplane == "user":
        assert r.switch["sums"] > 0 and r.switch["bypassed_destinations"] == 0
    else:
        assert r.switch["kernel_sums"] > 0 and r.switch["kernel_bad"] == 0 and r.switch["kernel_saturated"] == 0
    if loss:
        assert sum(t["pulls"] for t in r.transport) > 0 and r.switch["kernel_resends"] > 0
    assert r.max_logit_diff <= 1e-5
    np.testing.assert_allclose([e["loss"] for e in r.epochs], r.single_losses, atol=1e-5)
    assert not _left_behind()


@needs_root
@pytest.mark.slow
def test_kernel_data_plane_under_loss_follows_single_process():
    """5 % loss on every link: the workers pull what is missing (§3.4), most as soon as every
    worker's END came, and the logits stay within 1e-5 of single-process training."""
    from netweave.testbed.gnn import train_gnn_on_testbed

    r = train_gnn_on_testbed("cora", workers=4, exchange="ina", memory_bytes=200_000, gbps=1.0, epochs=1,
                             timeout_s=60, dataplane="xdp", loss=0.05, retransmit_s=0.05, switch_cpus=1)
    assert sum(t["pulls"] for t in r.transport) > 0 and r.switch["kernel_resends"] > 0
    assert sum(t["fast_pulls"] for t in r.transport) > 0 and r.switch["kernel_ends"] > 0  # pulled on END
    assert r.max_logit_diff <= 1e-5
    assert not _left_behind()


@needs_root
@pytest.mark.slow
def test_congestion_control_under_background_traffic_and_loss_follows_single_process():
    """§3.4 on the wire: background TCP flows load the links, the switch's ports ECN-mark at 8 KB
    of queue, the workers answer with CNPs that the kernel switch forwards, senders halve their rate;
    with 5 % loss per link besides, recovered by §3.4's timer alone (no END). The logits stay within
    1e-5 of single-process training."""
    from netweave.testbed.gnn import train_gnn_on_testbed

    r = train_gnn_on_testbed("cora", workers=4, exchange="ina", memory_bytes=200_000, gbps=0.05, epochs=1,
                             timeout_s=60, dataplane="xdp", loss=0.05, retransmit_s=0.05, congestion_control=True,
                             ecn_kb=8, background=0.3, fast_pull=False, switch_cpus=1)
    t = {k: sum(w[k] for w in r.transport)
         for k in ("marked", "cnps_sent", "cnps_received", "rate_cuts", "pulls", "fast_pulls")}
    assert r.switch["ecn_marked"] > 0 and t["marked"] > 0 and t["pulls"] > 0
    assert t["fast_pulls"] == 0 and r.switch["kernel_ends"] == 0
    assert 0 < r.switch["kernel_cnps"] <= t["cnps_sent"] and 0 < t["cnps_received"] <= r.switch["kernel_cnps"]
    assert 0 < t["rate_cuts"] <= t["cnps_received"]
    assert all(w["lowest_rate_kbit"] < 50_000 for w in r.transport if w["rate_cuts"])
    assert len(r.background) == 4 and all(b["flows"] > 0 and b["sent_bytes"] > 0 for b in r.background)
    assert r.max_logit_diff <= 1e-5
    assert not _left_behind()


def test_congestion_control_needs_the_kernel_data_plane():
    done = subprocess.run([sys.executable, "-m", "netweave", "testbed", "gnn", "cora", "--dataplane", "user",
                           "--congestion-control"], capture_output=True, text=True, timeout=120)
    assert done.returncode == 2 and len(done.stderr.strip().splitlines()) == 1
    assert done.stderr.startswith("netweave: error: --congestion-control") and "kernel data plane" in done.stderr


@needs_root
def test_the_cli_names_what_bound_each_epoch():
    """The text report's epoch lines give the compute and the bound the accounting named."""
    from netweave.testbed.net.accounting import bound

    names = {bound(1.0, 0.0), bound(0.0, 1.0), bound(0.0, 0.0, 1.0), bound(0.0, 0.0)}
    done = subprocess.run([sys.executable, "-m", "netweave", "testbed", "gnn", "rmat:n=200,m=800,classes=3,feat=8",
                           "--workers", "2", "--epochs", "2"], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    lines = [line for line in done.stdout.splitlines() if line.startswith("epoch ")]
    assert len(lines) == 2
    for line in lines:
        assert "(compute " in line and line.rsplit(": ", 1)[1] in names, line
    assert not _left_behind()
