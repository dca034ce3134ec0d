"""The aggregation tree and wiring of a streaming run (issue 31): which switch adds whose sums,
child aggregators' partial sums as members of their parents, the switch at the PS adding the
roots' sums of one precision, every switch's :class:`~.stream_xdp.StreamSwitch` settings, the
groups the PS host sums itself, and the streams every worker receives. Shared by the launcher
(:mod:`.run`) and the step model (:mod:`.model`)."""

from __future__ import annotations

from ...errors import NetweaveError
from ..net.multicast import group_address
from ..net.ports import AGGREGATION, RESULTS
from .plan import DEFAULT_MEMORY, PSEUDO, Group, TrainingPlan
from .stream_xdp import StreamSwitch

RESULTS_GROUP = group_address(2)  # the streaming aggregation's complete sums, from the switches to every worker


CHILD = 2000  # a child aggregator's member id at its parent in a streaming tree: CHILD + 4 agg_id + precision code


def child_member(agg_id: int, precision: str) -> int:
    """The member id of aggregator ``agg_id``'s partial sums of ``precision`` at its parent (one per
    precision: a switch that sums fp8 and fp16 workers sends two partial streams up)."""
    from ...dataplane.packet import PRECISION_CODE

    return CHILD + 4 * agg_id + PRECISION_CODE[precision]


def stream_tree(plan: TrainingPlan, cluster) -> dict[int, Group]:
    """The aggregation tree of a streaming run: the plan's aggregators, their children's partial
    sums as members per precision (:func:`child_member`), and — where the plan has several
    aggregators whose sums would each come down, and the switch at the PS (the distribution root)
    can aggregate — that switch on top, adding their sums of each precision, so that one stream per
    precision comes down instead of one per aggregator and precision. PAHInA adds them at its PS
    (§IV-C); adding them in the switch in front of it is netweave's (sums of one precision add
    exactly, the workers' q limit counting every worker of that precision)."""
    groups = {a: Group(g.agg_id, g.switch, {w: p for w, p in g.workers.items() if w < PSEUDO}, g.parent)
              for a, g in plan.groups.items()}
    top_switch = cluster.neighbours(plan.ps)[0]
    roots = [g for g in groups.values() if g.parent is None and g.switch is not None]
    if len(roots) > 1 and plan.topology.node(top_switch).ina:
        top = next((g for g in roots if g.switch == top_switch), None)
        top = top or Group(max(groups) + 1, top_switch, {})
        groups[top.agg_id] = top
        for g in roots:
            if g is not top:
                groups[g.agg_id] = Group(g.agg_id, g.switch, g.workers, top.agg_id)
    for g in list(groups.values()):  # each child's partial sums, one member per precision
        if g.parent is not None:
            for p in set(under(groups, g).values()):
                groups[g.parent].workers[child_member(g.agg_id, p)] = p
    return groups


def under(groups: dict[int, Group], g: Group) -> dict[int, str]:
    """The workers whose values ``g``'s sums add (its own and its children's), with their wire precision."""
    out = {w: p for w, p in g.workers.items() if w < PSEUDO}
    for child in groups.values():
        if child.parent == g.agg_id:
            out |= under(groups, child)
    return out


def stream_plan(plan: TrainingPlan, cluster):
    """The streaming run's wiring: per switch its :class:`~.stream_xdp.StreamSwitch` (every switch
    runs the program: aggregators aggregate, all forward RESULTs along the distribution tree, the
    parameter multicast's tree from the PS), the groups the PS host aggregates itself (no INA for
    them), every worker's own stream and the streams every worker receives."""
    from ..net.multicast import multicast_tree
    from .stream_client import StreamSpec

    tree = multicast_tree(cluster, plan.ps, list(plan.hosts.values()))
    groups = stream_tree(plan, cluster)
    by_switch = {g.switch: g for g in groups.values() if g.switch is not None}
    roots = [g for g in groups.values() if g.parent is None]

    def root_of(g):
        return g if g.parent is None else root_of(groups[g.parent])

    streams = tuple(StreamSpec(r.agg_id, p, sum(q == p for q in under(groups, r).values()),
                               cluster.address[r.switch or plan.ps])
                    for r in roots for p in sorted(set(under(groups, r).values()), key=["fp8", "fp16", "fp32"].index))
    own = {w: next(i for i, s in enumerate(streams) if s.agg_id == root_of(groups[plan.group_of(w).agg_id]).agg_id
                   and s.precision == plan.wire(w)) for w in plan.hosts}
    switches = {}
    for node in cluster.switches:
        g = by_switch.get(node)
        hop = cluster.next_hop[node, plan.ps]
        parent = groups[g.parent] if g is not None and g.parent is not None else None
        switches[node] = StreamSwitch(
            agg_id=g.agg_id if g else 0, port=AGGREGATION, results_port=RESULTS, group=RESULTS_GROUP,
            address=cluster.address[node], members=dict(g.workers) if g else {},
            memory_bytes=plan.topology.node(node).aggregator_memory or DEFAULT_MEMORY,
            parent=(parent.agg_id, child_member(g.agg_id, "fp8") - 1) if parent else None,
            parent_address=cluster.address[parent.switch] if parent else None,
            up=None if hop == plan.ps else cluster.interface[node, hop],
            down=tuple(cluster.interface[node, d] for d in tree.get(node, (None, []))[1]))
    at_ps = [g for g in groups.values() if g.switch is None]
    return switches, at_ps, streams, own


def check_memory(switches: dict, size: int) -> None:
    """A step's chunks must fit each aggregator's memory at once (the workers keep no window)."""
    from .blockfp import chunks

    for name, s in switches.items():
        need = sum(chunks(size, p) for p in set(s.members.values()))
        if s.agg_id and need > s.max_keys:
            raise NetweaveError(f"switch {name}: streaming a step of this model needs {need:,} keys in flight, its "
                                f"aggregator memory holds {s.max_keys:,}; give it more memory (aggregator_memory "
                                "in the topology) or use --mode ps")
