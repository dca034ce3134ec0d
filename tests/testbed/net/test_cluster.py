"""The cluster plan: names, identity addresses, shaping, shortest next hops and pinned flows (no root)."""

import pytest

from netweave.errors import NetweaveError
from netweave.testbed import new_prefix, plan_cluster
from netweave.topology import load_topology_spec

LEAFSPINE = "leafspine:leaves=2,spines=2,hosts=2,gbps=10,latency_us=5"


def test_names_addresses_and_rates():
    plan = plan_cluster(load_topology_spec(LEAFSPINE), scale=0.01, prefix="nwtx")
    assert plan.hosts == ["H0", "H1", "H2", "H3"] and sorted(plan.switches) == ["L0", "L1", "S0", "S1"]
    assert plan.namespace["H0"] == "nwtx-n4" and plan.namespace["L0"] == "nwtx-n0" and len(set(plan.address.values())) == 8
    assert all(plan.address[h].startswith("10.78.") for h in plan.hosts)
    assert all(plan.address[s].startswith("10.79.") for s in plan.switches)
    assert {s.rate_kbit for s in plan.shaping.values()} == {100_000}  # 10 Gb/s x 0.01
    assert all(len(name) <= 15 for name in plan.interface.values())  # IFNAMSIZ
    assert len(plan.link_batch()) == len(plan.topology.links)
    assert new_prefix(36 ** 3) == "nwt1000" and new_prefix(0) == "nwt0"


def test_default_routes_are_shortest_paths_to_every_host():
    topo = load_topology_spec(LEAFSPINE)
    plan = plan_cluster(topo, prefix="nwtx")
    for src in plan.hosts:
        for dst in plan.hosts:
            if src == dst:
                continue
            path, node = [src], src
            while node != dst:
                node = plan.next_hop[node, dst]
                path.append(node)
            assert len(path) == (3 if plan.next_hop[src, dst] == plan.next_hop[dst, src] else 5)


def test_a_routing_plans_paths_are_pinned_both_ways():
    routes = {"T": {"ps": "H0", "paths": {"H3": ["H3", "L1", "S1", "L0", "H0"]}}}
    plan = plan_cluster(load_topology_spec(LEAFSPINE), routes=routes, prefix="nwtx")
    assert plan.flows["H3", "H0"] == ["H3", "L1", "S1", "L0", "H0"] and plan.flows["H0", "H3"][1] == "L0"
    s1 = plan.node_batch("S1")
    h3, h0 = plan.address["H3"], plan.address["H0"]
    # flow 1 of the sorted flows, S1 at position 2 of its path: table 1000 + 64 + 2, entered from L1
    assert f"rule add from {h3} to {h0} iif {plan.interface['S1', 'L1']} lookup 1066 priority 100" in s1
    assert any(line.startswith(f"route add {h0}/32 via {plan.address['L0']} dev {plan.interface['S1', 'L0']}")
               and line.endswith("table 1066") for line in s1)
    assert not any("lookup" in line for line in plan.node_batch("S0"))  # off the path: default routes only
    ups = [line for line in s1 if line.startswith("link set") and "lo" not in line.split()]
    assert ups == [f"link set {plan.interface['S1', peer]} mtu 3000 up" for peer in plan.neighbours("S1")]  # jumbo frames
    assert f"rule add to {h0} lookup 1064 priority 100" in plan.node_batch("H3")


def test_a_path_may_turn_back_through_a_switch_told_apart_by_the_incoming_interface():
    """GRID may aggregate at a switch off the shortest path: H3 → L1 → S1 → L1 → S0 → L0 → H0
    passes L1 twice; each visit has its own rule, matched by where the packet came in."""
    path = ["H3", "L1", "S1", "L1", "S0", "L0", "H0"]
    plan = plan_cluster(load_topology_spec(LEAFSPINE), routes={"T": {"ps": "H0", "paths": {"H3": path}}}, prefix="nwtx")
    l1 = [line for line in plan.node_batch("L1") if "lookup" in line and "from " + plan.address["H3"] in line]
    assert [line.split(" iif ")[1].split()[0] for line in l1] == [plan.interface["L1", "H3"], plan.interface["L1", "S1"]]
    assert "net.ipv4.conf.all.send_redirects=0" in plan.sysctls("L1")


@pytest.mark.parametrize("routes, message", [
    ({"T": {"ps": "H0", "paths": {"H3": ["H3", "S1", "H0"]}}}, "H3–S1 on the path of H3 is not a link"),
    ({"T": {"ps": "H0", "paths": {"H3": ["H3", "L1", "S1", "L1", "S1", "L0", "H0"]}}}, "without taking a link twice"),
    ({"T": {"ps": "H0", "paths": {"H3": ["H3", "L1", "H3", "L1", "S1", "L0", "H0"]}}}, "without taking a link twice"),
    ({"T": {"ps": "H0", "paths": {"H3": ["H2", "L1", "S1", "L0", "H0"]}}}, "must run from H3 to H0"),
])
def test_bad_paths_are_one_line(routes, message):
    with pytest.raises(NetweaveError, match=message):
        plan_cluster(load_topology_spec(LEAFSPINE), routes=routes)


def test_scale_bounds():
    for scale in (0, 1.5, -1):
        with pytest.raises(NetweaveError, match="--scale"):
            plan_cluster(load_topology_spec(LEAFSPINE), scale=scale)


def test_impairments_attach_a_program_beside_a_slow_lane():
    from netweave.testbed import Impairment

    plan = plan_cluster(load_topology_spec("star:n=2"), scale=0.1, impairment=Impairment(loss=0.01, reorder=0.05),
                        prefix="nwtx")
    lines = plan.tc_batch("S0", "/x/impair.o")
    assert "filter add dev e0 egress bpf direct-action obj /x/impair.o sec tc" in lines
    assert any("classid 1:2 htb rate 1000kbit" in line for line in lines)  # at most 1 Mb/s
    assert not any("clsact" in line for line in plan.tc_batch("S0"))
    assert plan.impairment.defines() == {"LOSS_PPM": 10_000, "DUPLICATE_PPM": 0, "REORDER_PPM": 50_000}
    with pytest.raises(NetweaveError, match="--loss 1.5 must be a probability"):
        Impairment(loss=1.5)


def test_no_node_name_reaches_a_command():
    """Namespaces and interfaces are named from the prefix and indices; the topology's node names
    appear in no ``ip``/``tc`` batch line (issue 29: a name once carried a newline into ``ip -batch``)."""
    from netweave.topology import Link, Node, Topology

    names = ["SWzz", "Hzz0", "Hzz1", "Hzz2"]
    topo = Topology("t", [Node(n, "host" if i else "switch") for i, n in enumerate(names)],
                    [Link("SWzz", n, 1.0) for n in names[1:]])
    plan = plan_cluster(topo, prefix="nwtx", routes={"T": {"ps": "Hzz0", "paths": {"Hzz1": ["Hzz1", "SWzz", "Hzz0"]}}})
    lines = plan.link_batch() + [line for n in names for line in plan.node_batch(n) + plan.tc_batch(n)]
    assert sorted(plan.namespace.values()) == [f"nwtx-n{i}" for i in range(4)]
    assert len(lines) > 30 and not any("zz" in line for line in lines)


@pytest.mark.parametrize("tasks, match", [
    ({"T": "H0"}, "task 'T' must be a mapping"),
    ({"T": {"ps": "H0", "paths": ["H3", "L1"]}}, "task 'T' must be a mapping"),
    ({"T": {"ps": "H0"}}, "task 'T' must be a mapping"),
    ({"T": {"ps": ["H0"], "paths": {}}}, "task 'T' must be a mapping"),
    ({"T": {"ps": "H0", "paths": {"H3": "H3 L1 S1 L0 H0"}}}, "the path of 'H3' must be a non-empty list"),
    ({"T": {"ps": "H0", "paths": {"H3": [1, 2]}}}, "the path of 'H3' must be a non-empty list"),
    ({}, "expected a routes JSON"),
    ([], "expected a routes JSON"),
])
def test_routes_files_of_the_wrong_shape_are_one_line(tmp_path, tasks, match):
    import json

    from netweave.scenarios.testbed import ClusterScenario

    path = tmp_path / "routes.json"
    path.write_text(json.dumps({"tasks": tasks} if isinstance(tasks, dict) else tasks))
    with pytest.raises(NetweaveError, match=match) as err:
        ClusterScenario(topology=LEAFSPINE, routes_file=str(path)).plan()
    assert "\n" not in str(err.value) and str(path) in str(err.value)
