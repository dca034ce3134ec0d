"""One rank of an isolated graph-allgather timing (run by bench_train_netns.py, one per namespace).

Every rank derives the same partition and plan (METIS and SPST are seeded), then times
``graph_allgather`` of random ``(num_local, D)`` float32 embeddings for each width ``D``: a barrier,
the exchange, and the slowest rank's time (all-reduce MAX), repeated; rank 0 prints one JSON
line with the median per width, the §5.1 prediction for that width and the α–β one at the wire's
speed (calibrated α per stage, link latencies, nominal bandwidth).
Environment: RANK, WORLD_SIZE, MASTER_ADDR, MASTER_PORT (as under torchrun).
Usage: python benchmarks/allgather_rank.py DATASET --comm p2p|spst --topology FILE [--widths 64 256 1024] [--repeats 7]
       [--schedule batch|rounds] [--transport auto|shm|group] [--reference]
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import statistics
import time

import torch
import torch.distributed as dist

from netweave.graph import load_dataset
from netweave.partition import Partition, comm_relation
from netweave.runtime.graph_allgather import graph_allgather
from netweave.plan import worker_links
from netweave.plan.cost import ALPHA_BETA, DGCL_MODEL
from netweave.runtime.job import epoch_comm_s
from netweave.scenarios import TrainScenario
from netweave.topology import load_topology_spec
from netweave.runtime.launcher import init_group
from netweave.runtime.rank_tables import rank_tables, tables_on


# The α–β model at the wire's speed: the calibrated α per stage and link latencies, but the links'
# nominal bandwidth (η = 1), the target of issue 20 goal 3 ("within 1.2 × the α–β prediction").
WIRE_ALPHA_BETA = dataclasses.replace(ALPHA_BETA, name="alpha-beta-wire", bandwidth_efficiency=1.0)


def _gloo_reference(tables, width: int, repeats: int) -> float:
    """The floor: the forward stages' messages as gloo's ``batch_isend_irecv`` of preallocated
    tensors (no row gather, no scatter, no allocation), timed like the allgather (slowest rank)."""
    stages = [[(peer, torch.randn(len(s), width), torch.empty(len(r), width)) for peer, s, r in stage]
              for stage in tables.forward]
    times = []
    for _ in range(repeats + 1):
        dist.barrier()
        t0 = time.perf_counter()
        for stage in stages:
            # Receives first, as graph_allgather posts them (after sends, gloo's receive-ready
            # notices queue behind the data on each peer's one TCP connection).
            ops = [dist.P2POp(dist.irecv, inbox, peer) for peer, _, inbox in stage if len(inbox)]
            ops += [dist.P2POp(dist.isend, out, peer) for peer, out, _ in stage if len(out)]
            if ops:
                for request in dist.batch_isend_irecv(ops):
                    request.wait()
        slowest = torch.tensor([time.perf_counter() - t0], dtype=torch.float64)
        dist.all_reduce(slowest, op=dist.ReduceOp.MAX)
        times.append(float(slowest))
    return statistics.median(times[1:])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("dataset")
    ap.add_argument("--comm", choices=("p2p", "spst"), required=True)
    ap.add_argument("--topology", required=True)
    ap.add_argument("--widths", type=int, nargs="+", default=[64, 256, 1024])
    ap.add_argument("--repeats", type=int, default=7)
    ap.add_argument("--schedule", choices=("batch", "rounds"), default=None,
                    help="graph_allgather's schedule (default: the function's default; older revisions have none).")
    ap.add_argument("--transport", choices=("auto", "shm", "group"), default=None,
                    help="graph_allgather's transport (default: the function's default; older revisions have none).")
    ap.add_argument("--reference", action="store_true",
                    help="Also time gloo's own batch_isend_irecv of exactly the same messages (preallocated, no gathers).")
    args = ap.parse_args()
    rank, world = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
    torch.set_num_threads(1)
    graph = load_dataset(args.dataset)
    # Plans as DGCL makes them (SPST guarded on §5.1), so calibrate_cost.py can rebuild what was measured.
    job, _ = TrainScenario(dataset=args.dataset, workers=world, comm=args.comm, topology=args.topology,
                           cost_model="dgcl").prepare(graph)
    links = worker_links(load_topology_spec(args.topology))
    comm = comm_relation(graph, Partition(job.parts, world, "job"))
    tables = tables_on(rank_tables(job.plan, comm, rank), "cpu")
    init_group(rank, world, "env://", 600.0, "cpu")
    kwargs = {} if args.schedule is None else {"schedule": args.schedule}
    if args.transport is not None:
        kwargs["transport"] = args.transport
    points = []
    for width in args.widths:
        x = torch.randn(tables.num_local, width)
        times = []
        for _ in range(args.repeats + 1):  # the first is a warm-up
            dist.barrier()
            t0 = time.perf_counter()
            graph_allgather(x, tables, **kwargs)
            slowest = torch.tensor([time.perf_counter() - t0], dtype=torch.float64)
            dist.all_reduce(slowest, op=dist.ReduceOp.MAX)
            times.append(float(slowest))
        point = {"width": width, "measured_s": statistics.median(times[1:]),
                 "predicted_s": epoch_comm_s(job.plan, links, DGCL_MODEL, [width]),
                 "predicted_ab_s": epoch_comm_s(job.plan, links, WIRE_ALPHA_BETA, [width])}
        if args.reference:
            point["gloo_s"] = _gloo_reference(tables, width, args.repeats)
        points.append(point)
    dist.destroy_process_group()
    if rank == 0:
        print(json.dumps({"num_stages": job.plan.num_stages, "num_hops": job.plan.num_hops, "points": points}))


if __name__ == "__main__":
    main()
