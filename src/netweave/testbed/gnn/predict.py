"""The simulator's prediction of a testbed run's exchange (:mod:`netweave.sim`, switchgnn.txt §3.3,
§3.4): the same plans, on the same star at the same link rate, with the message sizes the
testbed's wires carry.

* INA: each layer's :class:`~netweave.ina.plan.InaPlan` as the job made it, its messages
  re-sized to the kernel data plane's packets (a row's float32 values, and per chunk the 28-byte
  header and the 42 bytes of UDP, IPv4 and Ethernet; :mod:`.packet`). That is a header a row, as
  every SUM carries; a UNIT packet of several rows shares one, so what goes up is overstated: 10 %
  for 128-value rows, 2.6x for 10-value rows;
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


from .packet import HB
from .tables import chunks_of

WIRE_HEADERS = 14 + 20 + 8  # Ethernet, IPv4, UDP


def wire_bytes(dim: int) -> int:
    """Bytes on the wire of one row of ``dim`` float32 values through the kernel data plane."""
    return 4 * dim + chunks_of(dim) * (HB + WIRE_HEADERS)


def predict_epoch_exchange_s(job, workers: int, gbps: float, latency_us: float = 1.0) -> dict:
    """``{"ina_s": …, "p2p_s": …, "layers": [...]}``: the simulator's exchange time of one epoch
    (see the module docstring) for ``job`` (:class:`~.job.GnnJob` with its ``plans``)."""
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
    for layer, plan in enumerate(job.plans):
        dim = job.widths[layer]
        ina = simulate(dataclasses.replace(plan, feature_bytes=wire_bytes(dim)), net, config).completion_time_s
        host = ina_plan(rel, "host", 4 * dim + 8, None)
        p2p = simulate(host, net, config).completion_time_s
        times = 1 if layer == 0 and dim == job.dims[0] else 2
        layers.append({"layer": layer, "dim": dim, "ina_s": ina, "p2p_s": p2p, "times_per_epoch": times})
        ina_s += times * ina
        p2p_s += times * p2p
    return {"ina_s": ina_s, "p2p_s": p2p_s, "layers": layers}
