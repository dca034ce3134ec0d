"""What a training step on the testbed should take, from the bytes each link carries (issue 31):
the route model's prediction that the benchmark holds against every network-bound measurement.

Per scheme and step, the bytes on every directed link, as frames (payload, netweave's header,
UDP, IPv4 and Ethernet: what the shaped veth counts), from the run's own placement:

* ``stream`` (:mod:`.stream_worker`): every worker's chunks up its path to its aggregator, each
  child aggregator's partial sums to its parent, every root's complete sums to the switch at the
  PS, and every stream's sums once down each edge of the distribution tree — except the sums of
  workers the PS aggregates itself (no INA for them), which its userspace agent sends to every
  worker by unicast, one copy each;
* ``ring``: gloo's ring all-reduce of fp32 gradients (:func:`netweave.route.allreduce.link_bytes`)
  in TCP segments of the MTU;
* ``ps`` (pahina.txt §IV-C as published): the gradients up to their aggregators in the paper's
  containers, the sums on to the PS, the fp32 parameters down the PS's multicast tree.

A step is then the compute (a measured machine constant: the workers' median compute per step)
plus the busiest link's bytes at its shaped rate — up and down overlap in ``stream`` and ``ring``
— or, for ``ps``, plus the busiest link up and then the busiest link down (its phases are serial).
A streaming step's transfer starts with its first bucket, during the backward pass (DDP's
overlap; :func:`predict_step_s`), so there the measured constants are the slowest worker's time to
its first bucket, its compute and its update.
The UDP senders keep to :data:`PACING` of the rate they are given, so ``stream``'s busiest link is
busy at that share of its rate (:func:`stream_rates`); the PS path's planned rates are eq. 2's.
There is no other constant and nothing fitted per scheme.
"""

from __future__ import annotations

from ...topology.paths import shortest_path
from ..net.ports import IPV4_HEADER, MTU, UDP_HEADER
from .blockfp import values_per_packet
from .plan import TrainingPlan
from .streampacket import stream_bytes
from .streamtree import stream_tree, under

PACING = 0.9  # UDP senders keep to 90 % of the rate they are given: headers and HTB's bursts take the rest
ETHERNET = 14  # bytes a veth frame adds to an IP packet (what HTB shapes)
FRAME = ETHERNET + IPV4_HEADER + UDP_HEADER  # per datagram
TCP_FRAME = ETHERNET + IPV4_HEADER + 32  # per TCP segment (20 bytes of header and 12 of timestamps)


def stream_frames(precision: str, size: int) -> float:
    """Frame bytes of a stream of ``size`` values at ``precision``."""
    return stream_bytes(precision, size) + FRAME * -(-size // values_per_packet(precision))


def _add(loads: dict, topo, src: str, dst: str, nbytes: float, path: list[str] | None = None) -> None:
    path = path or shortest_path(topo, src, dst, via_workers=True)
    for a, b in zip(path, path[1:]):
        loads[a, b] = loads.get((a, b), 0.0) + nbytes


def _up(plan: TrainingPlan, host: str, target: str) -> list[str] | None:
    """A worker's path to its aggregator ``target`` where the plan pins one (GRID may aggregate
    off the shortest path: up to the switch and back), else None (the shortest path)."""
    path = plan.routes.get("T0", {}).get("paths", {}).get(host) if plan.routes else None
    return path[:path.index(target) + 1] if path and target in path else None


def stream_loads(plan: TrainingPlan, cluster, size: int) -> dict[tuple[str, str], float]:
    """Bytes per directed link of one streaming step (see the module docstring)."""
    from ..net.multicast import multicast_tree

    topo = plan.topology
    groups = stream_tree(plan, cluster)
    loads: dict[tuple[str, str], float] = {}
    for w, h in plan.hosts.items():
        g = plan.group_of(w)
        _add(loads, topo, h, g.switch or plan.ps, stream_frames(plan.wire(w), size), _up(plan, h, g.switch or plan.ps))
    top = cluster.neighbours(plan.ps)[0]
    streams = []
    for g in groups.values():
        precisions = set(under(groups, g).values())
        if g.parent is not None:
            for p in precisions:
                _add(loads, topo, g.switch, groups[g.parent].switch, stream_frames(p, size))
        elif g.switch is None:  # summed at the PS, in userspace: one unicast copy to every worker
            for p in precisions:
                for h in plan.hosts.values():
                    _add(loads, topo, plan.ps, h, stream_frames(p, size))
        else:
            for p in precisions:
                streams.append(p)
                if g.switch != top:
                    _add(loads, topo, g.switch, top, stream_frames(p, size))
    down = sum(stream_frames(p, size) for p in streams)
    for node, (_, below) in multicast_tree(cluster, plan.ps, list(plan.hosts.values())).items():
        for child in below:
            loads[node, child] = loads.get((node, child), 0.0) + down
    return loads


def stream_rates(plan: TrainingPlan, cluster, size: int, scale: float) -> tuple[float, dict[int, float]]:
    """The streaming step's network bound ``T`` (s: the busiest directed link's frames at its shaped
    rate) and each worker's sending rate (bits/s of datagrams): its stream's frames over ``T``, times
    :data:`PACING`. Every worker then finishes at the same time and no link is asked for more than
    its rate — the up links carry the workers' streams, the links between switches the partial sums
    at the rate their members send, the down links every stream's sums as they complete.

    Beyond the paper: eq. 2's rates (:mod:`netweave.route.pahina`) price the PS path, where every
    aggregated stream converges on the PS's link; streaming ends at the switch in front of the PS
    and multicasts the sums down, so those rates would leave the links mostly idle."""
    network, _ = busiest_s(stream_loads(plan, cluster, size), plan.topology, scale)
    return network, {w: PACING * stream_frames(plan.wire(w), size) * 8 / network for w in plan.hosts}


def ring_loads(plan: TrainingPlan, size: int) -> dict[tuple[str, str], float]:
    """Bytes per directed link of one ring all-reduce of ``size`` fp32 values (rank order)."""
    from ...route.allreduce import link_bytes

    segment = MTU - IPV4_HEADER - 32
    payload = link_bytes(plan.topology, [plan.hosts[w] for w in sorted(plan.hosts)], 4.0 * size)
    return {k: v * (1 + TCP_FRAME / segment) for k, v in payload.items()}


def ps_loads(plan: TrainingPlan, cluster, size: int) -> tuple[dict, dict]:
    """Bytes per directed link of one PS-mode step: (the gradients' phase, the parameters' phase)."""
    from ..net.multicast import DATAGRAM_BYTES, floats_per_chunk, multicast_tree
    from .endpoints import packet_bytes
    from .xdp import MAX_SLOTS

    topo = plan.topology
    up: dict[tuple[str, str], float] = {}
    packets = -(-size // MAX_SLOTS)
    for w, h in plan.hosts.items():
        g = plan.group_of(w)
        _add(up, topo, h, g.switch or plan.ps, packet_bytes(plan.wire(w), size) + FRAME * packets,
             _up(plan, h, g.switch or plan.ps))
    for g in plan.groups.values():
        if g.switch is None:
            continue
        target = plan.groups[g.parent].switch if g.parent is not None else plan.ps
        for p in set(g.workers.values()):
            _add(up, topo, g.switch, target, packet_bytes(p, size) + FRAME * packets)
    chunks = -(-size // floats_per_chunk(DATAGRAM_BYTES))
    frames = 4.0 * size + chunks * (20 + FRAME)  # the parameters' datagrams: a 20-byte header each
    down = {(node, child): frames for node, (_, below) in multicast_tree(cluster, plan.ps,
                                                                          list(plan.hosts.values())).items()
            for child in below}
    return up, down


def busiest_s(loads: dict, topo, scale: float) -> tuple[float, str]:
    """The busiest directed link's time at its shaped rate, and which link it is."""
    if not loads:
        return 0.0, ""
    times = {k: v * 8 / (topo.links[topo.link_between(*k)].gbps * scale * 1e9) for k, v in loads.items()}
    (a, b), t = max(times.items(), key=lambda kv: kv[1])
    return t, f"{a}->{b}"


def predict_step_s(plan: TrainingPlan, cluster, size: int, scale: float, mode: str, compute_s: float,
                   first_s: float | None = None, update_s: float = 0.0) -> dict:
    """The predicted step (see the module docstring): ``{"step_s", "network_s", "busiest_link"}``,
    ``network_s`` the physical bound (the busiest link at its full rate; a stream's senders keep to
    :data:`PACING` of it).

    A streaming step (measured machine constants of the slowest worker, s): the senders start with
    the first bucket, ``first_s`` into the step, and pace the step's frames over ``network_s /
    PACING`` — unless the backward pass, ``compute_s``, hands them the last bucket later — then
    every worker applies the mean, ``update_s``::

        step_s = max(first_s + network_s / PACING, compute_s) + update_s

    ``first_s`` None: the buckets go once the compute is done (``compute_s``: no overlap)."""
    topo = plan.topology
    if plan.scheme == "ring":
        network, link = busiest_s(ring_loads(plan, size), topo, scale)
    elif mode == "stream" and plan.scheme != "ps":
        network, link = busiest_s(stream_loads(plan, cluster, size), topo, scale)
        first = compute_s if first_s is None else first_s
        return {"step_s": max(first + network / PACING, compute_s) + update_s, "network_s": network,  # stream_rates
                "busiest_link": link}
    else:
        up, down = ps_loads(plan, cluster, size)
        (t_up, l_up), (t_down, l_down) = busiest_s(up, topo, scale), busiest_s(down, topo, scale)
        network, link = t_up + t_down, f"{l_up} then {l_down}"
    return {"step_s": compute_s + network, "network_s": network, "busiest_link": link}
