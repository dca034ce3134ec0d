"""Data-parallel training through the testbed: the PS and worker processes (PAHInA §VI-B's setting).

Each step:

1. the PS sends the parameters (float32) and the step's fixed-point exponent to every worker over
   TCP (reliable; the paper's PS multicasts them);
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

MODELS = ("lenet5",)
HEADER = struct.Struct("!IiI")  # step, exponent, number of float32 parameters (then the parameters)


def lenet5():
    """LeNet-5 for 32x32 single-channel images, 10 classes (LeCun et al. 1998, ReLU and max pooling)."""
    import torch.nn as nn

    return nn.Sequential(nn.Conv2d(1, 6, 5), nn.ReLU(), nn.MaxPool2d(2), nn.Conv2d(6, 16, 5), nn.ReLU(),
                         nn.MaxPool2d(2), nn.Flatten(), nn.Linear(16 * 5 * 5, 120), nn.ReLU(),
                         nn.Linear(120, 84), nn.ReLU(), nn.Linear(84, 10))


def digits(seed: int = 0):
    """scikit-learn's bundled handwritten digits (1,797 images of 8x8), upsampled to 32x32 and
    split 80/20 with ``seed``: ``(x_train, y_train, x_test, y_test)`` as float32/int64 arrays."""
    from sklearn.datasets import load_digits

    d = load_digits()
    x = np.kron(d.images.astype(np.float32) / 16.0, np.ones((4, 4), np.float32))[:, None]  # (N, 1, 32, 32)
    order = np.random.default_rng(seed).permutation(len(x))
    cut = int(0.8 * len(x))
    train, test = order[:cut], order[cut:]
    return x[train], d.target[train].astype(np.int64), x[test], d.target[test].astype(np.int64)


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

    with torch.no_grad():
        loss = float(torch.nn.functional.cross_entropy(model(torch.from_numpy(x)), torch.from_numpy(y)))
        return loss, float((model(torch.from_numpy(xt)).argmax(1).numpy() == yt).mean())


def flat_gradient(model) -> np.ndarray:
    import torch

    return torch.cat([p.grad.reshape(-1) for p in model.parameters()]).numpy().astype(np.float32)


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
    """One worker: connect to the PS, then for every step receive parameters, send the gradient."""
    import torch

    from .endpoints import WorkerSender
    from .gradients import encode

    torch.manual_seed(config["seed"])
    torch.set_num_threads(1)
    rank, n = config["rank"], config["workers"]
    x, y, _, _ = digits(config["seed"])
    model = lenet5()
    loss_fn = torch.nn.CrossEntropyLoss()
    udp = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    udp.bind((config["address"], config["port"]))
    sender = WorkerSender(udp, config["wor_id"], config["precision"], config["agg_id"], tuple(config["target"]))
    serving = threading.Thread(target=sender.serve, args=(1e9, 1e9), daemon=True)  # NACKs, for the whole run
    ctrl = _connect(tuple(config["ps_control"]), config["timeout_s"])
    ctrl.sendall(struct.pack("!I", rank))
    serving.start()
    batch = config["batch"]
    while True:
        step, exponent, count = HEADER.unpack(_recv_exact(ctrl, HEADER.size))
        if count == 0:
            break  # the PS is done
        load_parameters(model, np.frombuffer(_recv_exact(ctrl, 4 * count), dtype=np.float32).copy())
        part = shard(step, rank, n, batch, len(x))
        model.zero_grad()
        loss_fn(model(torch.from_numpy(x[part])), torch.from_numpy(y[part])).backward()
        values, _ = encode(flat_gradient(model), config["precision"], exponent)
        sender.send(step, values)


def ps(config: dict) -> None:
    """The PS: serve parameters, collect and normalise the aggregated gradients, update; one JSON
    line per epoch on stdout (loss, accuracy, times, bytes)."""
    import torch

    from .endpoints import SO_RCVBUFFORCE, Collector
    from .gradients import decode_mean, step_exponent
    from .xdp import MAX_SLOTS

    torch.manual_seed(config["seed"])
    x, y, xt, yt = digits(config["seed"])
    model = lenet5()
    opt = torch.optim.SGD(model.parameters(), lr=config["lr"], momentum=config["momentum"])
    workers = {int(w): p for w, p in config["precisions"].items()}
    n = len(workers)
    udp = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    udp.bind((config["address"], config["port"]))
    udp.setsockopt(socket.SOL_SOCKET, SO_RCVBUFFORCE, 32 << 20)  # a step's packets fit
    collector = Collector(udp, workers, {int(w): tuple(a) for w, a in config["worker_addresses"].items()},
                          agg_id=config["agg_id"], switch=tuple(config["switch"]) if config.get("switch") else None)
    server = socket.create_server((config["address"], config["control_port"]))
    server.settimeout(config["timeout_s"])
    conns = {}
    while len(conns) < n:
        conn, _ = server.accept()
        conns[struct.unpack("!I", _recv_exact(conn, 4))[0]] = conn
    steps_per_epoch = len(x) // config["batch"]
    chunks = -(-flat_parameters(model).size // MAX_SLOTS)
    exponent, step = step_exponent(1.0, n), 0
    precisions = sorted(set(workers.values()))
    for epoch in range(config["epochs"]):
        t0, comm_s = time.perf_counter(), 0.0
        for _ in range(steps_per_epoch):
            flat = flat_parameters(model)
            message = HEADER.pack(step, exponent, flat.size) + flat.tobytes()
            for conn in conns.values():
                conn.sendall(message)
            c0 = time.perf_counter()
            keys = [(step, t, p) for t in range(chunks) for p in precisions]
            got = collector.collect(keys, retry_s=config["retry_s"], timeout_s=config["timeout_s"])
            comm_s += time.perf_counter() - c0
            sums = {p: np.concatenate([got[step, t, p][0] for t in range(chunks)]) for p in precisions}
            mean = decode_mean(sums, exponent, n)
            set_gradient(model, mean)
            opt.step()
            exponent = step_exponent(4 * float(np.abs(mean).max(initial=0.0)), n)  # next step's, with headroom
            step += 1
        loss, acc = evaluate(model, x, y, xt, yt)
        seconds = time.perf_counter() - t0
        print(json.dumps({"epoch": epoch + 1, "loss": loss, "test_acc": acc, "epoch_s": seconds,
                          "comm_s": comm_s, "samples_per_s": steps_per_epoch * config["batch"] / seconds,
                          "gradient_bytes": n * chunks * MAX_SLOTS * 4 * steps_per_epoch,
                          "collector": dict(collector.counters)}), flush=True)
    for conn in conns.values():
        conn.sendall(HEADER.pack(step, 0, 0))
        conn.close()
    print(json.dumps({"done": True, "parameters": flat_parameters(model).size, "steps": step}), flush=True)


def ring(config: dict) -> None:
    """The baseline users run today: every worker holds the model, gloo's ring all-reduce sums the
    fp32 gradients over the emulated links, every worker steps; rank 0 prints the epoch lines."""
    import datetime

    import torch
    import torch.distributed as dist

    torch.manual_seed(config["seed"])
    torch.set_num_threads(1)
    rank, n = config["rank"], config["workers"]
    os.environ["GLOO_SOCKET_IFNAME"] = config["interface"]  # the uplink (identity address), not the loopback
    dist.init_process_group("gloo", init_method=f"tcp://{config['master']}:{config['control_port']}", rank=rank,
                            world_size=n, timeout=datetime.timedelta(seconds=config["timeout_s"]))
    x, y, xt, yt = digits(config["seed"])
    model = lenet5()
    opt = torch.optim.SGD(model.parameters(), lr=config["lr"], momentum=config["momentum"])
    batch, steps_per_epoch = config["batch"], len(x) // config["batch"]
    for epoch in range(config["epochs"]):
        t0, comm_s = time.perf_counter(), 0.0
        for s in range(steps_per_epoch):
            part = shard(s, rank, n, batch, len(x))
            opt.zero_grad()
            torch.nn.functional.cross_entropy(model(torch.from_numpy(x[part])), torch.from_numpy(y[part])).backward()
            flat = torch.from_numpy(flat_gradient(model))
            c0 = time.perf_counter()
            dist.all_reduce(flat)
            comm_s += time.perf_counter() - c0
            flat /= n
            set_gradient(model, flat.numpy())
            opt.step()
        seconds = time.perf_counter() - t0
        if rank == 0:
            loss, acc = evaluate(model, x, y, xt, yt)
            print(json.dumps({"epoch": epoch + 1, "loss": loss, "test_acc": acc, "epoch_s": seconds, "comm_s": comm_s,
                              "samples_per_s": steps_per_epoch * batch / seconds,
                              "gradient_bytes": n * flat_parameters(model).size * 4 * steps_per_epoch}), flush=True)
    dist.barrier()
    if rank == 0:
        print(json.dumps({"done": True, "parameters": flat_parameters(model).size, "steps": steps_per_epoch * config["epochs"]}),
              flush=True)
    dist.destroy_process_group()


def main() -> None:
    role, config = sys.argv[1], json.loads(sys.argv[2])
    {"ps": ps, "worker": worker, "ring": ring}[role](config)


if __name__ == "__main__":
    main()
