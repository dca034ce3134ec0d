import numpy as np
import pytest

from netweave.graph import from_edges
from netweave.plan.cost import DGCL_MODEL
from netweave.plan import GraphCommPlan, p2p_plan, plan_cost, worker_links
from netweave.topology import dgx1

from plan_fixtures import relation

FB = 1000  # bytes per embedding
B = lambda gbps: gbps * 1e9 / 8  # noqa: E731  bytes per second


def test_logical_links_map_to_physical_paths(fig6):
    links = worker_links(fig6)
    names = lambda i, j: [links.hop_names[h] for h in links.hops(i, j)]  # noqa: E731
    assert names(0, 1) == ["d1->d2"]  # direct NVLink
    assert names(0, 2) == ["d1->CPU0", "CPU0->CPU1", "CPU1->d3"]  # PCIe-QPI-PCIe, no GPU relay
    assert names(2, 0) == ["d3->CPU1", "CPU1->CPU0", "CPU0->d1"]  # the other direction
    assert links.exists.reshape(4, 4).sum() == 12


def test_figure6_hand_computed(fig6):
    # Figure 6: a, b on d1 needed by d3 and d4; g, h on d2 needed by d4 (d2-d4 has no NVLink).
    # vertices: a=0 b=1 (d1), g=2 h=3 (d2), x=4 (d3), y=5 (d4)
    g = from_edges([0, 1, 0, 1, 2, 3], [4, 4, 5, 5, 5, 5], 6)
    comm = relation(g, [0, 0, 1, 1, 2, 3])
    links = worker_links(fig6)
    cost = plan_cost(p2p_plan(comm, links, FB), links, DGCL_MODEL)
    # P2P, one stage. QPI (40 Gb/s) CPU0->CPU1 carries {a,b}->d3, {a,b}->d4, {g,h}->d4 = 6
    # embeddings; CPU1->CPU0 carries x->d1, y->d1, y->d2 = 3. PCIe d1->CPU0 carries 4 at 80 Gb/s.
    assert cost.total_s == pytest.approx(6 * FB / B(40))
    assert cost.stage_times_s.shape == (1,)
    m = 4
    assert cost.link_bytes[0, 0 * m + 2] == 2 * FB and cost.link_bytes[0, 1 * m + 3] == 2 * FB
    qpi = worker_links(fig6).hop_names.index("CPU1->CPU0")
    assert cost.hop_bytes[0, qpi] == 3 * FB
    # link d1->d3 time is its worst hop: the shared QPI
    assert cost.link_times_s[0, 0 * m + 2] == pytest.approx(6 * FB / B(40))
    # relay plan T_a = T_b: d1-d2-d3-d4 over NVLink, stages 1,2,3 (and nothing else)
    relay = GraphCommPlan.from_hops([1, 1, 2, 2, 3, 3], [0, 0, 1, 1, 2, 2], [1, 1, 2, 2, 3, 3],
                                    [0, 1, 0, 1, 0, 1], comm.parts, FB, links.workers, "hand")
    c = plan_cost(relay, links, DGCL_MODEL)
    assert c.stage_times_s == pytest.approx([2 * FB / B(400)] * 3)
    assert c.total_s == pytest.approx(6 * FB / B(400))


def test_contended_hop_counts_all_links_sharing_it():
    topo = dgx1()
    links = worker_links(topo)
    # G0->G5 and G1->G6 both cross CPU0->CPU1 (QPI) and PX0->CPU0; same stage.
    plan = GraphCommPlan.from_hops([1, 1, 1], [0, 0, 1], [5, 5, 6], [0, 1, 2], np.array([0, 0, 1] + [2] * 5), FB,
                                   links.workers, "hand")
    cost = plan_cost(plan, links, DGCL_MODEL)
    qpi = links.hop_names.index("CPU0->CPU1")
    assert cost.hop_bytes[0, qpi] == 3 * FB
    assert cost.total_s == pytest.approx(3 * FB / B(9.56 * 8))  # QPI slower than 3 on PCIe
    # in separate stages the contention disappears, but the times add up
    split = GraphCommPlan.from_hops([1, 1, 2], [0, 0, 1], [5, 5, 6], [0, 1, 2], plan.parts, FB, links.workers, "hand")
    assert plan_cost(split, links, DGCL_MODEL).total_s == pytest.approx(2 * FB / B(9.56 * 8) + FB / B(9.56 * 8))
