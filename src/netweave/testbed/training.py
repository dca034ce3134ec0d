"""Data-parallel training through the testbed: the PS and worker processes (PAHInA §VI-B's setting).

Each step:

1. the PS sends the step and its fixed-point exponent to every worker over TCP and multicasts the
   parameters (float32) through the switches (:mod:`.multicast`, the kernel's multicast
   forwarding: one copy per link, as the paper's PS); each worker answers on TCP with the chunks
   it missed, which the PS then sends it over TCP (reliable);
2. each worker computes the gradient of its shard of the batch, casts it to its precision,
   encodes it (:mod:`.gradients`) and sends it as DATA packets toward the PS, through the INA
   switch whose XDP program aggregates each precision (or straight to the PS when there is no
   INA: routing ``ps``); it answers NACKs from a thread;
3. the PS collects every precision's sum (:class:`~.endpoints.Collector`), normalises them into the
   mean gradient and takes an SGD-with-momentum step.

``python -m netweave.testbed.training ps|worker|ring CONFIG`` runs one role in its namespace; the PS
(or ring rank 0) prints one JSON line per epoch and a final one. :mod:`.run` starts them all.
``ring`` is the baseline without a PS: gloo's all-reduce of fp32 gradients among the workers.
"""

from __future__ import annotations

import json
import os
import socket
import struct
import sys
import threading
import time

import numpy as np

HEADER = struct.Struct("!IiI")  # step, exponent, number of float32 parameters (0: the run is over)
COMPUTE = struct.Struct("!d")  # a worker's compute seconds for the step, after its gradient is sent
COUNT = struct.Struct("!I")  # how many parameter chunks a worker missed (then their indices, u32 each)
MULTICAST_BYTES = 2972  # one parameter datagram fills the testbed's 3000-byte MTU (less IPv4 and UDP headers)


def receive_parameters(ctrl: socket.socket, receiver, step: int, size: int, timeout_s: float) -> np.ndarray:
    """The worker's side of a step's parameters: the multicast chunks that come within
    ``timeout_s``, then the missed ones asked for and read over TCP (``ctrl``)."""
    from .multicast import chunk_rows, floats_per_chunk

    flat, missing = receiver.receive(step, size, timeout_s)
    ctrl.sendall(COUNT.pack(missing.size) + missing.astype(">u4").tobytes())
    if missing.size:
        per = floats_per_chunk(MULTICAST_BYTES)
        rows = chunk_rows(flat, per)
        rows[missing] = np.frombuffer(_recv_exact(ctrl, 4 * per * missing.size), dtype="<f4").reshape(-1, per)
        flat = rows.reshape(-1)[:size]
    return flat


def send_missed(conn: socket.socket, flat: np.ndarray) -> int:
    """The PS's side: read which chunks a worker missed and send them over TCP; returns how many."""
    from .multicast import chunk_rows, floats_per_chunk

    count = COUNT.unpack(_recv_exact(conn, COUNT.size))[0]
    if count:
        missing = np.frombuffer(_recv_exact(conn, 4 * count), dtype=">u4").astype(np.int64)
        conn.sendall(chunk_rows(flat, floats_per_chunk(MULTICAST_BYTES))[missing].tobytes())
    return count


def setup(config: dict):
    """The role's data and model: ``(x, y, x_test, y_test, model)`` from ``config["data"]`` and
    ``config["model"]``, the model initialised from ``config["seed"]`` (the same on every process)."""
    import torch

    from .datasets import load
    from .models import build

    torch.manual_seed(config["seed"])
    x, y, xt, yt = load(config.get("data", "digits"), config["seed"])
    return x, y, xt, yt, build(config.get("model", "lenet5"), x.shape[1])


def steps_per_epoch(config: dict, samples: int) -> int:
    """Whole global batches per epoch, at most ``config["steps"]`` when given (throughput runs)."""
    steps = samples // config["batch"]
    return min(steps, config["steps"]) if config.get("steps") else steps


def flat_parameters(model) -> np.ndarray:
    import torch

    return torch.cat([p.detach().reshape(-1) for p in model.parameters()]).numpy().astype(np.float32)


def _per_parameter(model, flat: np.ndarray):
    """``(parameter, its part of flat reshaped like it)``, in ``model.parameters()`` order."""
    offset = 0
    for p in model.parameters():
        yield p, flat[offset:offset + p.numel()].reshape(p.shape)
        offset += p.numel()


def load_parameters(model, flat: np.ndarray) -> None:
    import torch

    with torch.no_grad():
        for p, part in _per_parameter(model, flat):
            p.copy_(torch.from_numpy(part))


def set_gradient(model, flat: np.ndarray) -> None:
    """Every parameter's ``.grad`` from one flat float32 gradient (a copy)."""
    import torch

    for p, part in _per_parameter(model, flat):
        p.grad = torch.from_numpy(part.copy())


def shard(step: int, rank: int, workers: int, batch: int, samples: int) -> slice:
    """The samples of ``rank``'s share of global batch ``step`` (batches cycle over ``samples``)."""
    start = (step % (samples // batch)) * batch
    return slice(start + rank * batch // workers, start + (rank + 1) * batch // workers)


def evaluate(model, x, y, xt, yt) -> tuple[float, float]:
    """``(training loss, test accuracy)`` of ``model``."""
    import torch

    def logits(a):
        return torch.cat([model(torch.from_numpy(a[i:i + 512])) for i in range(0, len(a), 512)])

    with torch.no_grad():
        loss = float(torch.nn.functional.cross_entropy(logits(x), torch.from_numpy(y)))
        return loss, float((logits(xt).argmax(1).numpy() == yt).mean())


def backward_on(model, x, y, part: slice) -> None:
    """Every parameter's ``.grad``: the cross-entropy gradient of ``model`` on samples ``part``."""
    import torch

    model.zero_grad()
    torch.nn.functional.cross_entropy(model(torch.from_numpy(x[part])), torch.from_numpy(y[part])).backward()


def epoch_record(epoch: int, model, data, limit: int | None, seconds: float, steps: int, batch: int, times: dict,
                 step_s: list[float], sent: int, **extra) -> dict:
    """One epoch's line (PS, or ring rank 0): loss and accuracy on ``data`` (the first ``limit``
    samples), times, throughput, the gradient bytes ``sent`` and their rate over ``times["upload_s"]``."""
    x, y, xt, yt = data
    loss, acc = evaluate(model, x[:limit], y[:limit], xt[:limit], yt[:limit])
    return {"epoch": epoch + 1, "loss": loss, "test_acc": acc, "epoch_s": seconds, "steps": steps,
            "samples_per_s": steps * batch / seconds, **times, "step_s": step_s, "gradient_bytes": sent,
            "gradient_rate_gbps": sent * 8 / max(times["upload_s"], 1e-9) / 1e9, **extra}


DIVERGED = 3  # a role's exit status when its gradient is not finite: the loss diverged


class Diverged(Exception):
    """A gradient with NaN or infinite values (the loss diverged): the role ends with :data:`DIVERGED`
    and this one line, which :mod:`.run` reports."""


def flat_gradient(model, step: int) -> np.ndarray:
    """The model's gradient as one float32 vector; :class:`Diverged` when it is not finite (no
    precision can carry it, and a sum with it is meaningless)."""
    import torch

    g = torch.cat([p.grad.reshape(-1) for p in model.parameters()]).numpy().astype(np.float32)
    if not np.isfinite(g).all():
        raise Diverged(f"its gradient at step {step} has {int((~np.isfinite(g)).sum()):,} NaN or infinite values")
    return g


def _recv_exact(conn: socket.socket, n: int) -> bytes:
    chunks, got = [], 0
    while got < n:
        b = conn.recv(min(n - got, 1 << 20))
        if not b:
            raise ConnectionError("the PS closed the connection")
        chunks.append(b)
        got += len(b)
    return b"".join(chunks)


def _connect(address: tuple[str, int], timeout_s: float) -> socket.socket:
    """Connect to the PS, which may still be starting (importing torch): retry until ``timeout_s``."""
    end = time.monotonic() + timeout_s
    while True:
        try:
            return socket.create_connection(address, timeout=timeout_s)
        except ConnectionRefusedError:
            if time.monotonic() > end:
                raise
            time.sleep(0.2)


def worker(config: dict) -> None:
    """One worker: connect to the PS, then for every step receive parameters, compute the gradient
    of its shard, cast it to its ``precision`` (in its group's ``wire`` container: :mod:`.plan`) and
    send it to aggregator ``agg_id``; its compute seconds go back to the PS on the control connection."""
    import torch

    from .endpoints import WorkerSender
    from .gradients import encode, upcast
    from .multicast import ParameterReceiver, receiver_socket

    torch.set_num_threads(1)
    rank, n = config["rank"], config["workers"]
    x, y, _, _, model = setup(config)
    own, wire = config["precision"], config.get("wire", config["precision"])
    udp = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    udp.bind((config["address"], config["port"]))
    sender = WorkerSender(udp, config["wor_id"], wire, config["agg_id"], tuple(config["target"]),
                          rate_bps=config.get("rate_bps"))
    serving = threading.Thread(target=sender.serve, args=(1e9, 1e9), daemon=True)  # NACKs, for the whole run
    group, port = config["multicast"]
    receiver = ParameterReceiver(receiver_socket(group, port, config["interface"]), datagram_bytes=MULTICAST_BYTES)
    ctrl = _connect(tuple(config["ps_control"]), config["timeout_s"])
    ctrl.sendall(struct.pack("!I", rank))
    serving.start()
    batch = config["batch"]
    while True:
        step, exponent, count = HEADER.unpack(_recv_exact(ctrl, HEADER.size))
        if count == 0:
            break  # the PS is done
        load_parameters(model, receive_parameters(ctrl, receiver, step, count, config["multicast_timeout_s"]))
        t0 = time.perf_counter()
        backward_on(model, x, y, shard(step, rank, n, batch, len(x)))
        values, _ = encode(flat_gradient(model, step), own, exponent)
        compute_s = time.perf_counter() - t0
        sender.send(step, values if wire == own else upcast(values, own, wire))
        ctrl.sendall(COMPUTE.pack(compute_s))


def _groups(config: dict) -> dict[int, tuple[tuple[str, int] | None, dict[int, str]]]:
    """``config["groups"]`` as agg_id → (the switch's address or None, {wor_id: wire precision})."""
    return {int(a): (tuple(g["switch"]) if g.get("switch") else None, {int(w): p for w, p in g["workers"].items()})
            for a, g in config["groups"].items()}


def ps(config: dict) -> None:
    """The PS: serve parameters, collect every aggregator's per-precision sums, normalise them
    into the mean gradient (§IV-D), step; one JSON line per epoch on stdout: loss, accuracy, and
    the §VI-A metrics (epoch time, throughput, upload time and gradient sending rate, INA
    efficiency as the share of gradient bytes that did not reach the PS, PS aggregation time)."""
    import torch

    from .batchio import set_receive_buffer
    from .endpoints import Collector, packet_bytes
    from .gradients import decode_mean, step_exponent
    from .multicast import publish, publisher_socket
    from .xdp import MAX_SLOTS

    x, y, xt, yt, model = setup(config)
    opt = torch.optim.SGD(model.parameters(), lr=config["lr"], momentum=config["momentum"])
    groups = _groups(config)
    wires = {int(w): p for w, p in config["wires"].items()}  # every worker's precision on the wire
    n = len(wires)
    udp = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    udp.bind((config["address"], config["port"]))
    set_receive_buffer(udp, 256 << 20)  # a step's packets fit
    collector = Collector(udp, groups, {int(w): tuple(a) for w, a in config["worker_addresses"].items()})
    group = tuple(config["multicast"])
    publisher = publisher_socket(config["address"], config["interface"])
    missed = 0
    server = socket.create_server((config["address"], config["control_port"]))
    server.settimeout(config["timeout_s"])
    conns = {}
    while len(conns) < n:
        conn, _ = server.accept()
        conns[struct.unpack("!I", _recv_exact(conn, 4))[0]] = conn
    steps = steps_per_epoch(config, len(x))
    size = flat_parameters(model).size
    chunks = -(-size // MAX_SLOTS)
    sent_per_step = sum(packet_bytes(p, size) for p in wires.values())
    exponent, step = step_exponent(1.0, n), 0
    limit = config.get("eval_samples")
    for epoch in range(config["epochs"]):
        t0 = time.perf_counter()
        times = dict.fromkeys(("compute_s", "upload_s", "parameters_s", "ps_aggregation_s"), 0.0)
        step_s = []
        bytes_before = collector.counters["bytes"]
        for _ in range(steps):
            s0 = time.perf_counter()
            flat = flat_parameters(model)
            for conn in conns.values():
                conn.sendall(HEADER.pack(step, exponent, flat.size))
            publish(publisher, step, flat, group, MULTICAST_BYTES, rate_bps=config.get("multicast_bps"))
            missed += sum(send_missed(conn, flat) for conn in conns.values())
            s1 = time.perf_counter()
            got = collector.collect(step, chunks, retry_s=config["retry_s"], timeout_s=config["timeout_s"])
            computed = max(COMPUTE.unpack(_recv_exact(conn, COMPUTE.size))[0] for conn in conns.values())
            s2 = time.perf_counter()
            sums: dict[str, np.ndarray] = {}
            for (_, p), (values, _) in got.items():  # one precision, one scale: aggregators add exactly
                sums[p] = sums.get(p, 0) + values[:size].astype(np.int64)
            mean = decode_mean(sums, exponent, n)
            s3 = time.perf_counter()
            set_gradient(model, mean)
            opt.step()
            exponent = step_exponent(4 * float(np.abs(mean).max(initial=0.0)), n)  # next step's, with headroom
            step += 1
            times["parameters_s"] += s1 - s0
            times["compute_s"] += computed
            times["upload_s"] += max(0.0, s2 - s1 - computed)
            times["ps_aggregation_s"] += s3 - s2
            step_s.append(time.perf_counter() - s0)
        seconds = time.perf_counter() - t0
        times["ps_aggregation_s"] += collector.counters.get("aggregate_s", 0.0)
        collector.counters["aggregate_s"] = 0.0
        at_ps = collector.counters["bytes"] - bytes_before
        print(json.dumps(epoch_record(epoch, model, (x, y, xt, yt), limit, seconds, steps, config["batch"], times, step_s,
                                      sent_per_step * steps, bytes_at_ps=at_ps,
                                      ina_efficiency=1 - at_ps / (sent_per_step * steps),
                                      parameter_chunks_resent=missed, collector=dict(collector.counters))), flush=True)
    for conn in conns.values():
        conn.sendall(HEADER.pack(step, 0, 0))
        conn.close()
    print(json.dumps({"done": True, "parameters": size, "steps": step}), flush=True)


def ring(config: dict) -> None:
    """The baseline users run today: every worker holds the model, gloo's ring all-reduce sums the
    fp32 gradients over the emulated links, every worker steps; rank 0 prints the epoch lines."""
    import datetime

    import torch
    import torch.distributed as dist

    torch.set_num_threads(1)
    rank, n = config["rank"], config["workers"]
    os.environ["GLOO_SOCKET_IFNAME"] = config["interface"]  # the uplink (identity address), not the loopback
    dist.init_process_group("gloo", init_method=f"tcp://{config['master']}:{config['control_port']}", rank=rank,
                            world_size=n, timeout=datetime.timedelta(seconds=config["timeout_s"]))
    x, y, xt, yt, model = setup(config)
    opt = torch.optim.SGD(model.parameters(), lr=config["lr"], momentum=config["momentum"])
    batch, steps = config["batch"], steps_per_epoch(config, len(x))
    limit = config.get("eval_samples")
    for epoch in range(config["epochs"]):
        t0 = time.perf_counter()
        times = dict.fromkeys(("compute_s", "upload_s"), 0.0)
        step_s = []
        for s in range(steps):
            c0 = time.perf_counter()
            backward_on(model, x, y, shard(s, rank, n, batch, len(x)))
            flat = torch.from_numpy(flat_gradient(model, epoch * steps + s))
            c1 = time.perf_counter()
            dist.all_reduce(flat)
            times["compute_s"] += c1 - c0
            times["upload_s"] += time.perf_counter() - c1
            flat /= n
            set_gradient(model, flat.numpy())
            opt.step()
            step_s.append(time.perf_counter() - c0)
        seconds = time.perf_counter() - t0
        if rank == 0:  # a ring all-reduce sends 2 (n-1)/n of the gradient per worker; nothing is aggregated in the network
            print(json.dumps(epoch_record(epoch, model, (x, y, xt, yt), limit, seconds, steps, batch, times, step_s,
                                          2 * (n - 1) * flat.numel() * 4 * steps)), flush=True)
    dist.barrier()
    if rank == 0:
        print(json.dumps({"done": True, "parameters": flat_parameters(model).size, "steps": steps * config["epochs"]}),
              flush=True)
    dist.destroy_process_group()


def main() -> None:
    role, config = sys.argv[1], json.loads(sys.argv[2])
    try:
        {"ps": ps, "worker": worker, "ring": ring}[role](config)
    except Diverged as exc:
        print(exc, file=sys.stderr, flush=True)
        sys.exit(DIVERGED)


if __name__ == "__main__":
    main()
