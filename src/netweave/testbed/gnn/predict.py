"""The simulator's prediction of a testbed run's exchange (:mod:`netweave.sim`, switchgnn.txt §3.3,
§3.4): the same plans, on the same star at the same link rate, with the message sizes the
testbed's wires carry.

* INA: each layer's :class:`~netweave.ina.plan.InaPlan` as the job made it (in column slices
  where the job sliced the layer, :mod:`.slices`), its messages re-sized to the kernel data
  plane's packets: a row's (or a slice's) float32 values, and per packet the 28-byte
  header and the 42 bytes of UDP, IPv4 and Ethernet (:mod:`.packet`). Given the switch's memory
  (``memory_bytes``), a row's share of those headers is counted from the packets the tables make
  (:func:`packets`: several units a UNIT and COPY packet, several sums a SUM packet on a pinned
  switch, with a 4-byte vertex each), averaged over every row up and down, as the simulator sizes
  a plan's messages alike; without it, a header a row (one row a packet);
* p2p: the plan of the ``host`` strategy (every row once to every worker that needs it, summed at
  the receiver), float32 rows.

An epoch of a ``L``-layer GCN exchanges every layer forward and backward, at the width the job's
exchange carries (``job.widths``), except the first layer's backward when it exchanges the
features themselves (they need no gradient; with ``h W`` on the wire ``W`` needs one); its
prediction is the sum of those exchanges' completion times (the blocks' barriers included, as the
simulator models them).
"""

from __future__ import annotations

import dataclasses

import numpy as np

from .packet import HB
from .tables import (LayerView, chunks_of, packet_shards, plan_packets, popcount, rows_per_packet, sums_owed,
                     unit_shards)

WIRE_HEADERS = 14 + 20 + 8  # Ethernet, IPv4, UDP


def wire_bytes(dim: int) -> int:
    """Bytes on the wire of one row of ``dim`` float32 values through the kernel data plane, a row
    (chunk) a packet."""
    return 4 * dim + chunks_of(dim) * (HB + WIRE_HEADERS)


def packets(p: dict, v: LayerView, masks: np.ndarray, *, shards: int = 1, held: bool = True) -> dict:
    """The rows and packets of one exchange of plan ``p`` (its arrays, :mod:`.plans`; ``v`` its
    :func:`~.tables.layer_view`, ``masks`` its units' :func:`~.tables.copy_masks`) through the kernel
    data plane, where a row is one chunk: ``up_rows``/``up_packets`` (UNIT: :func:`~.tables.unit_packets`
    per sender and block), ``copy_rows``/``copy_packets`` (a UNIT packet to each worker of its copy
    mask), ``sum_rows``/``sum_packets`` (per block, shard and owner ``ceil(owed / per)`` when the
    switch holds sums (``held``: pinned), else a sum a packet; a pinned switch also sends what each
    shard holds at each worker's END of a block, up to a packet an owner and shard more), and
    ``handed``: with ``shards`` > 1, the UNIT packets' hand-overs to the shards, one to each shard
    that walks an edge of one of the packet's units (:func:`~.tables.unit_shards`)."""
    first, rows = plan_packets(p, v, masks)
    fan = popcount(masks[first])  # the workers a packet is copied to
    handed = int(popcount(packet_shards(first, unit_shards(p, v, shards))).sum()) if shards > 1 else 0
    owed = sums_owed(v, int(p["num_blocks"]), shards, int(p["num_workers"])).astype(np.int64)
    return {"up_rows": int(masks.size), "up_packets": int(first.size), "copy_rows": int((fan * rows).sum()),
            "copy_packets": int(fan.sum()), "sum_rows": int(owed.sum()),
            "sum_packets": int(-(-owed // rows_per_packet(v.dim)).sum()) if held else int(owed.sum()),
            "handed": handed}


def packed_wire_bytes(dim: int, counts: dict, held: bool = True) -> float:
    """Bytes on the wire a row, every row up and down alike (:func:`packets`' ``counts``): its values,
    its share of its packet's headers, and a held sum's vertex."""
    rows = counts["up_rows"] + counts["copy_rows"] + counts["sum_rows"]
    pk = counts["up_packets"] + counts["copy_packets"] + counts["sum_packets"]
    vertices = 4 * counts["sum_rows"] if held and rows_per_packet(dim) > 1 else 0  # a sum a packet carries none
    return 4 * dim + ((HB + WIRE_HEADERS) * pk + vertices) / max(1, rows)


def predict_epoch_exchange_s(job, workers: int, gbps: float, latency_us: float = 1.0, *,
                             memory_bytes: int | None = None, overlap: bool = False, shards: int = 1,
                             held: bool = True) -> dict:
    """``{"ina_s": …, "p2p_s": …, "layers": [...]}``: the simulator's exchange time of one epoch
    (see the module docstring) for ``job`` (:class:`~.job.GnnJob` with its ``plans`` and its
    directory's ``plans.npz``); with ``memory_bytes`` (the switch's), the packets' headers shared
    as the kernel data plane shares them (``overlap``: its memory in two halves; ``shards``: its
    CPUs; ``held``: pinned, sums held)."""
    from ...ina import boundary_relation
    from ...ina.plan import ina_plan
    from ...partition import Partition
    from ...sim.network import sim_network
    from ...sim.simulate import SimConfig, simulate
    from ...topology import load_topology_spec

    net = sim_network(load_topology_spec(f"star:n={workers},gbps={gbps:g},latency_us={latency_us:g}"))
    rel = boundary_relation(job.graph, Partition(job.parts, workers, "metis"))
    horizon = 600.0
    config = SimConfig(horizon_s=horizon, bin_us=horizon / 1.5e6 * 1e6)
    layers, ina_s, p2p_s = [], 0.0, 0.0
    arrays = None
    if memory_bytes is not None:
        from .plans import load_plans
        from .tables import copy_masks, layer_view

        arrays = load_plans(f"{job.directory}/plans.npz")
    for layer, plan in enumerate(job.plans):
        width = job.widths[layer]
        dim = width // job.planned[layer].get("slices", 1)  # a row's, or a column slice's (.slices)
        row = wire_bytes(dim)
        if arrays is not None and chunks_of(dim) == 1:
            p = arrays[layer]
            v = layer_view(p, memory_bytes, overlap)
            row = packed_wire_bytes(dim, packets(p, v, copy_masks(p, v), shards=shards, held=held), held)
        ina = simulate(dataclasses.replace(plan, feature_bytes=max(1, round(row))), net, config).completion_time_s
        host = ina_plan(rel, "host", 4 * width + 8, None)
        p2p = simulate(host, net, config).completion_time_s
        times = 1 if layer == 0 and width == job.dims[0] else 2
        layers.append({"layer": layer, "dim": width, "ina_s": ina, "p2p_s": p2p, "times_per_epoch": times,
                       "ina_row_bytes": row})
        ina_s += times * ina
        p2p_s += times * p2p
    return {"ina_s": ina_s, "p2p_s": p2p_s, "layers": layers}
