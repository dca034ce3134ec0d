"""The kernel data plane of the SwitchGNN switch (gnn/bpf/gnn_switch.bpf.c) against the userspace
agent (gnn/switch.py): the same rows through both give the same sums, bit for bit; under 5 % loss
per link (and duplication, reordering: tc-BPF impairments) every exchange still completes with the
exact sums (switchgnn.txt §3.4: timeouts, pulls, bypass). Needs root, clang and libbpf."""

import json
import os
import shutil
import sys

import numpy as np
import pytest

from netweave.testbed.net import netns

missing = netns.missing_requirements("clang")
needs_root = pytest.mark.skipif(bool(missing) or shutil.which("clang") is None,
                                reason="the kernel data plane needs " + "; ".join(missing or ["clang"]))
MEMORY = 200_000


def _probe_run(directory, workers=4, loss=0.0, duplicate=0.0, reorder=0.0, overlap=False, rounds=1, memory=MEMORY,
               shards=1, pin=False, then=None):
    """The agent with the kernel data plane (``pin``: on the last CPU, its aggregators added into
    without locks), then ``then(cluster, switch)`` if given, then a probe per worker."""
    from netweave.testbed.gnn.launch import _ports
    from netweave.testbed.gnn.probe import ProbeConfig
    from netweave.testbed.gnn.switch import SwitchConfig
    from netweave.testbed.net.cluster import plan_cluster
    from netweave.testbed.net.impair import Impairment
    from netweave.testbed.net.lifecycle import Testbed
    from netweave.testbed.net.ports import GNN_DATA, GNN_DOWN, GNN_SWITCH
    from netweave.testbed.net.steering import switch_cpus
    from netweave.testbed.net.supervisor import Supervisor, last_line
    from netweave.topology import load_topology_spec

    topo = load_topology_spec(f"star:n={workers},gbps=1")
    with Testbed(plan_cluster(topo, 1.0, impairment=Impairment(loss, duplicate, reorder))) as cluster, \
            Supervisor(90) as sup:
        sw = cluster.switches[0]
        agent = sup.start("the switch agent", cluster.namespace[sw], "netweave.testbed.gnn.switch",
                          SwitchConfig(address=cluster.address[sw], port=GNN_SWITCH, workers=workers,
                                       memory_bytes=memory, plans=f"{directory}/plans.npz", timeout_s=60,
                                       dataplane="xdp", ports=_ports(cluster, sw), data_port=GNN_DATA,
                                       worker_port=GNN_DOWN, overlap=overlap,
                                       switch_cpus=tuple(switch_cpus(shards)) if pin or shards > 1 else (),
                                       switch_shards=shards),
                          ready=True)
        if then is not None:
            then(cluster, sw)
        probes = [sup.start(f"probe {r}", cluster.namespace[h], "netweave.testbed.gnn.probe",
                            ProbeConfig(rank=r, address=cluster.address[h], switch=(cluster.address[sw], GNN_SWITCH),
                                        directory=directory, memory_bytes=memory, overlap=overlap, rounds=rounds,
                                        out=f"{directory}/probe{r}.npz", timeout_s=60, switch_shards=shards))
                  for r, h in enumerate(cluster.hosts)]
        sup.wait([agent, *probes], 240)
    results = [json.loads(last_line(p.stdout)) for p in probes]
    outs = [dict(np.load(f"{directory}/probe{r}.npz", allow_pickle=False)) for r in range(workers)]
    return json.loads(last_line(agent.stdout)), results, outs


def _reference(directory, workers, rounds=1):
    """The userspace agent fed the probes' rows: per worker and exchange {(block, vertex, chunk): row
    chunk}, and the exact sums (float64) per worker and exchange."""
    from netweave.testbed.gnn.plans import load_plans
    from netweave.testbed.gnn.probe import EXCHANGES, probe_rows
    from netweave.testbed.gnn.switch import Switch
    from netweave.testbed.gnn.tables import VALUES
    from netweave.testbed.gnn.wire import DONE, SUMS, UNITS, Message

    plans = load_plans(f"{directory}/plans.npz")
    bounds = [np.load(f"{directory}/worker{r}.npz")["boundary"] for r in range(workers)]
    parts = plans[0]["parts"]

    class Capture:
        def __init__(self):
            self.sums = []

        def queue(self, kind, *arrays, **kw):
            if kind == SUMS:
                self.sums.append((kw["block"], np.array(arrays[0]), np.array(arrays[2])))

    switch = Switch(plans, MEMORY, workers)
    switch.conns = {w: Capture() for w in range(workers)}
    sums, exact = [], []
    i = 0
    for _ in range(rounds):
        for layer, direction in EXCHANGES:
            p, dim = plans[layer], int(plans[layer]["dim"])
            B = int(p["num_blocks"])
            rows = [probe_rows(0, r, i, (bounds[r].size, dim), direction) for r in range(workers)]
            for c in switch.conns.values():
                c.sums.clear()
            for b in range(B):
                for h in range(workers):
                    u0, u1 = p["unit_ptr"][h * B + b], p["unit_ptr"][h * B + b + 1]
                    x = rows[h][np.searchsorted(bounds[h], p["src"][p["unit_lo"][u0:u1]])]
                    switch.on_message(None, Message(UNITS, layer, direction, b, h, x.shape[0], dim, 0, i + 1,
                                                    x.tobytes()))
                for h in range(workers):
                    switch.on_message(None, Message(DONE, layer, direction, b, h, 0, 0, 0, i + 1, b""))
            per = []
            for w in range(workers):
                d = {}
                for block, ids, x in switch.conns[w].sums:
                    for v, row in zip(ids.tolist(), x.reshape(ids.size, dim)):
                        for c in range(-(-dim // VALUES)):
                            chunk = row[c * VALUES:(c + 1) * VALUES]
                            d[block, v, c] = np.pad(chunk, (0, VALUES - chunk.size))
                per.append(d)
            sums.append(per)
            ex = [np.zeros((bounds[r].size, dim)) for r in range(workers)]
            src, dst = p["src"], p["dst"]
            for r in range(workers):
                into = parts[dst] == r
                for h in range(workers):
                    e = into & (parts[src] == h)
                    np.add.at(ex[r], np.searchsorted(bounds[r], dst[e]),
                              rows[h][np.searchsorted(bounds[h], src[e])].astype(np.float64))
            exact.append(ex)
            i += 1
    return sums, exact


def _close(out, exact):
    """float32 results of exact sums: within a float32 rounding or two of the row's scale."""
    np.testing.assert_allclose(out, exact, rtol=1e-6, atol=3e-7 * max(1e-30, float(np.abs(exact).max())))


def _kernel_sums(outs, i, r):
    keys, rows = outs[r][f"sum{i}_key"], outs[r][f"sum{i}_row"]
    return {tuple(k[:3]): row for k, row in zip(keys.tolist(), rows)}


def _sums_named_after_a_contributor(directory, outs, workers):
    """Whether every SUM each worker accepted names as its sender a worker with an edge into its
    vertex (a marked SUM's CNP then slows a contributor, §3.4; checked against the plans' edges):
    a SUM of one row, its row's vertex; a SUM of several rows (held), the vertex of its last row,
    whose completer it names (also when an END flushed it)."""
    from netweave.testbed.gnn.plans import load_plans
    from netweave.testbed.gnn.probe import EXCHANGES

    plans = load_plans(f"{directory}/plans.npz")
    parts = plans[0]["parts"]
    checked = 0
    for i, (layer, _) in enumerate(EXCHANGES):
        p = plans[layer]
        pairs = p["dst"].astype(np.int64) * workers + parts[p["src"]]
        for r in range(workers):
            last = outs[r][f"sum{i}_last"]
            if not np.isin(last[:, 2] * workers + last[:, 1], pairs).all():
                return False
            checked += last.shape[0]
    return checked > 0


def _counted_by_the_tables(directory, overlap, shards, held):
    """Sums, SUM packets, COPY packets and hand-overs to shards of the probes' exchanges without
    loss, as :func:`netweave.testbed.gnn.predict.packets` counts them from the tables (rows of one
    chunk; rows of several go a chunk a packet), and the ENDs of the blocks whose sums are held."""
    from netweave.testbed.gnn.plans import load_plans
    from netweave.testbed.gnn.predict import packets
    from netweave.testbed.gnn.probe import EXCHANGES
    from netweave.testbed.gnn.tables import copy_masks, layer_view, popcount, switch_tables, unit_shards

    plans = load_plans(f"{directory}/plans.npz")
    n = {"sums": 0, "sum_packets": 0, "copies": 0, "handed": 0, "converted": 0, "touched": 0, "aggregated": 0,
         "subsets": 0}
    tables = switch_tables(plans, MEMORY, overlap, shards)
    ends = 0  # ENDs of the blocks whose sums are held: workers × blocks
    for layer, _ in EXCHANGES:
        p = plans[layer]
        v = layer_view(p, MEMORY, overlap)
        masks = copy_masks(p, v)
        if v.chunks == 1:
            ends += int(p["num_workers"]) * int(p["num_blocks"])
            c = packets(p, v, masks, shards=shards, held=held)
            n["sums"] += c["sum_rows"]
            n["sum_packets"] += c["sum_packets"]
            n["copies"] += c["copy_packets"]
            n["handed"] += c["handed"]
        else:
            cells = int((~v.copy).sum()) * v.chunks
            n["sums"] += cells
            n["sum_packets"] += cells
            n["copies"] += sum(bin(int(m)).count("1") for m in masks) * v.chunks
            if shards > 1:  # a chunk a packet, each to its unit's shards
                n["handed"] += int(popcount(unit_shards(p, v, shards)).sum()) * v.chunks
        # the rows (chunks) converted to fixed point: a unit's on each shard that adds it into a cell
        n["converted"] += int(popcount(unit_shards(p, v, shards)).sum()) * v.chunks
        # each destination once a packet (touches.py), with the contributions of its rows there
        touches = tables.touches[tables.layers[layer]["touch_base"]:][:tables.layers[layer]["touches"]]
        n["touched"] += touches.size * v.chunks
        n["aggregated"] += int(touches["cnt"].sum()) * v.chunks
        used = tables.packets[tables.layers[layer]["packet_base"]:][:tables.layers[layer]["packets"]]["used"]
        n["subsets"] += int(popcount(used.ravel()).sum()) * v.chunks  # each made once a packet on its shard
    return n, ends


def _prepare(tmp_path, workers=4, overlap=False):
    from netweave.testbed.gnn.job import prepare_gnn_job

    tmp_path.chmod(0o755)
    job = prepare_gnn_job("cora", workers, MEMORY, str(tmp_path), blocking="paper", overlap=overlap,
                          transform_first=False)  # 1,433 features on the wire: blocks, and rows of 3 chunks
    assert job.planned[0]["blocks"] > 1 and job.planned[0]["forwarded_destinations"] > 0
    return job


@needs_root
@pytest.mark.slow
@pytest.mark.parametrize("overlap,shards", [(False, 1), (True, 1), (True, 2)], ids=["blocks", "overlapped", "sharded"])
def test_kernel_sums_equal_the_userspace_agent_bit_for_bit(tmp_path, overlap, shards):
    """Blocks: the switch unpinned, its entries under their locks, a sum a packet. Overlapped: block
    b + 1 goes up while block b comes down, in the other parity's half of the aggregators (the plan's
    blocks sized to half the memory); the switch pinned to one CPU, which adds without locks and
    holds an owner's sums of one-chunk rows to send several a packet. Sharded: the
    aggregators spread over two CPUs, a unit handed to each that holds one of its destinations (the
    integer sums do not depend on which CPU adds first), each adding without locks."""
    job = _prepare(tmp_path, overlap=overlap)
    assert job.planned[0]["overlap"] == overlap
    switch, results, outs = _probe_run(str(tmp_path), overlap=overlap, shards=shards, pin=overlap)
    ref, exact = _reference(str(tmp_path), 4)
    assert switch["kernel_sums"] > 0 and switch["kernel_bad"] == 0 and switch["kernel_stale"] == 0
    assert (switch["kernel_sharded"] > 0) == (shards > 1)  # units handed to the shards' CPUs
    assert switch["kernel_off_cpu"] == 0
    assert switch["kernel_packed"] > 0  # layer 1's 16-value rows go up to 32 a packet (layer 0's: a chunk a packet)
    if overlap or shards > 1:  # pinned: layer 1's sums held per owner, up to 32 a packet
        assert switch["kernel_sum_packets"] < switch["kernel_sums"]
    else:  # unpinned: a sum a packet
        assert switch["kernel_sum_packets"] == switch["kernel_sums"]
    # the kernel's own counts of sums, SUM packets and COPY packets against the tables' (predict.packets);
    # pinned, each worker's END also sends what each shard holds for its block: up to a packet an owner
    held = overlap or shards > 1
    want, ends = _counted_by_the_tables(str(tmp_path), overlap, shards, held=held)
    assert (switch["kernel_sums"], switch["kernel_copies"]) == (want["sums"], want["copies"])
    assert switch["kernel_sharded"] == want["handed"]  # a packet to each shard that walks one of its units' edges
    assert switch["kernel_converted"] == want["converted"]  # not a packet's other units, walked on other shards
    assert (switch["kernel_touched"], switch["kernel_aggregated"]) == (want["touched"], want["aggregated"])
    assert switch["kernel_subsets"] == want["subsets"] > 0
    assert switch["kernel_touched"] < switch["kernel_aggregated"]  # rows sharing a destination: one addition
    extra = switch["kernel_sum_packets"] - want["sum_packets"]
    assert 0 <= extra <= (4 * ends * shards if held else 0), extra
    total = 0
    for i in range(len(ref)):
        for r in range(4):
            got = _kernel_sums(outs, i, r)
            assert set(got) == set(ref[i][r]), f"exchange {i} worker {r}: other cells summed"
            for k, row in ref[i][r].items():
                assert row.tobytes() == got[k].tobytes(), f"exchange {i} worker {r} cell {k}"
            total += len(got)
            _close(outs[r][f"out{i}"], exact[i][r])
    assert total > 100
    assert all(res["transport"]["pulls"] == 0 for res in results)
    assert _sums_named_after_a_contributor(str(tmp_path), outs, 4)
    # every worker's END of every block, from every shard (behind the units walked there); those of
    # the last block may come after the probe's last exchange, unread
    from netweave.testbed.gnn.plans import load_plans
    from netweave.testbed.gnn.probe import EXCHANGES

    plans = load_plans(f"{tmp_path}/plans.npz")
    blocks = sum(int(plans[layer]["num_blocks"]) for layer, _ in EXCHANGES)
    assert all(res["transport"]["ends"] >= 4 * (blocks - 1) * shards for res in results)
    assert all(res["transport"]["ends_ignored"] == 0 for res in results)  # told the switch's own count


@needs_root
@pytest.mark.slow
@pytest.mark.skipif(len(os.sched_getaffinity(0)) < 2, reason="needs a second CPU to steer the ports to")
def test_a_unit_walked_on_another_cpu_than_the_lockless_ones_is_dropped_and_pulled(tmp_path):
    """The switch pinned to the last CPU adds without locks; its ports' packets steered to another
    CPU instead (as a misconfigured machine might): no unit is added there (two CPUs adding
    without locks would race); each is dropped, counted, and the workers pull every cell from
    their peers (§3.4), so the results stay exact."""
    from netweave.testbed.net.steering import switch_cpus

    other = min(c for c in os.sched_getaffinity(0) if c not in switch_cpus(1))

    def steer_elsewhere(cluster, sw):
        names = [cluster.interface[sw, h] for h in cluster.hosts]
        netns.run(["ip", "netns", "exec", cluster.namespace[sw], sys.executable, "-c",
                   "import sys; from netweave.testbed.net.steering import steer_receive; "
                   "steer_receive(sys.argv[1:-1], int(sys.argv[-1]))", *names, str(other)])

    _prepare(tmp_path)
    switch, results, outs = _probe_run(str(tmp_path), pin=True, then=steer_elsewhere)
    _, exact = _reference(str(tmp_path), 4)
    assert switch["kernel_off_cpu"] > 0 and switch["kernel_aggregated"] == 0 and switch["kernel_sums"] == 0
    assert sum(res["transport"]["pulls"] for res in results) > 0
    for i in range(len(exact)):
        for r in range(4):
            _close(outs[r][f"out{i}"], exact[i][r])


@needs_root
@pytest.mark.slow
@pytest.mark.parametrize("pin,shards", [(False, 1), (True, 1), (True, 2)], ids=["locks", "pinned", "sharded"])
def test_kernel_sums_stay_exact_under_loss_duplication_and_reordering(tmp_path, pin, shards):
    """5 % loss on every link (and 2 % duplication, 2 % reordering): pulls recover every missing
    cell; every SUM that arrives is the agent's bits; every exchange's result is the exact sum.
    Pinned: sums held per owner (several a packet); a lost unit leaves its owners' counts short,
    and each END sends what is held. Sharded: two CPUs hold them, each END goes through both."""
    _prepare(tmp_path, overlap=True)
    switch, results, outs = _probe_run(str(tmp_path), loss=0.05, duplicate=0.02, reorder=0.02, overlap=True, pin=pin,
                                       shards=shards)
    assert (switch["kernel_sum_packets"] < switch["kernel_sums"]) == pin
    assert (switch["kernel_sharded"] > 0) == (shards > 1)
    ref, exact = _reference(str(tmp_path), 4)
    assert sum(res["transport"]["pulls"] for res in results) > 0 and switch["kernel_resends"] > 0
    assert sum(res["transport"]["fast_pulls"] for res in results) > 0 and switch["kernel_ends"] > 0
    assert switch["kernel_duplicates"] > 0 and switch["kernel_bad"] == 0
    for i in range(len(ref)):
        for r in range(4):
            got = _kernel_sums(outs, i, r)
            assert set(got) <= set(ref[i][r])
            for k, row in got.items():
                assert row.tobytes() == ref[i][r][k].tobytes()
            _close(outs[r][f"out{i}"], exact[i][r])


@needs_root
@pytest.mark.slow
def test_what_does_not_fit_the_switch_goes_to_the_host_path(tmp_path):
    """A switch with a quarter of the memory the plan assumed: the destinations that do not fit are
    bypassed (copies to their owner, who sums them); the results stay exact."""
    from netweave.testbed.gnn.plans import load_plans
    from netweave.testbed.gnn.tables import layer_view

    _prepare(tmp_path)
    plans = load_plans(f"{tmp_path}/plans.npz")
    small = layer_view(plans[0], MEMORY // 4)
    bypassed = int((small.copy & ~plans[0]["forward"][plans[0]["dest_v"]]).sum())
    assert bypassed > 0
    switch, results, outs = _probe_run(str(tmp_path), memory=MEMORY // 4)
    _, exact = _reference(str(tmp_path), 4)
    assert switch["kernel_sums"] > 0 and switch["kernel_copies"] > 0 and switch["kernel_bad"] == 0
    for i in range(len(exact)):
        for r in range(4):
            _close(outs[r][f"out{i}"], exact[i][r])

