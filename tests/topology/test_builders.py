import pytest

from netweave.errors import NetweaveError
from netweave.topology import (dgx1, dgx1x2, fat_tree, leaf_spine, load_topology_spec, pcie8,
                               random_regular, star)
from netweave.topology.builders.gpu_servers import DGX1_NVLINKS

TABLE1_GBYTES = {"NV2": 48.35, "NV1": 24.22, "PCIe": 11.13, "QPI": 9.56, "IB": 6.37}


def kinds(t):
    out = {}
    for n in t.nodes:
        out[n.kind] = out.get(n.kind, 0) + 1
    return out


def test_dgx1_link_table():
    t = dgx1()
    assert t.workers == [f"G{i}" for i in range(8)]
    nv = {(l.a, l.b): l for l in t.links if l.label in ("NV1", "NV2")}
    assert len(nv) == 16
    for a, b, kind in DGX1_NVLINKS:
        link = nv[(f"G{a}", f"G{b}")]
        assert link.label == kind and link.gbps == pytest.approx(TABLE1_GBYTES[kind] * 8)
    # every GPU has 6 NVLinks (NV2 counts twice), and each quad is fully connected
    for g in range(8):
        lanes = sum(2 if l.label == "NV2" else 1 for (a, b), l in nv.items() if f"G{g}" in (a, b))
        assert lanes == 6
    for quad in ((0, 1, 2, 3), (4, 5, 6, 7)):
        assert all(t.link_between(f"G{a}", f"G{b}") is not None for a in quad for b in quad if a < b)
    for l in t.links:
        if l.label in ("PCIe", "QPI"):
            assert l.gbps == pytest.approx(TABLE1_GBYTES[l.label] * 8)
    assert sum(l.label == "QPI" for l in t.links) == 1 and kinds(t) == {"gpu": 8, "cpu": 2, "pcie": 4}


def test_a_job_on_part_of_a_dgx1_keeps_its_nvlinks_and_pcie_tree():
    quad = load_topology_spec("dgx1:gpus=4")
    assert quad.workers == ["G0", "G1", "G2", "G3"] and quad.name == "dgx1-4gpu"
    assert sum(l.label in ("NV1", "NV2") for l in quad.links) == 6  # the quad is fully connected
    pair = load_topology_spec("dgx1:gpus=2")
    assert pair.links[pair.link_between("G0", "G1")].label == "NV1" and sum(l.label == "PCIe" for l in pair.links) == 6
    with pytest.raises(NetweaveError, match="2 to 8"):
        load_topology_spec("dgx1:gpus=9")


def test_dgx1x2_and_pcie8():
    t = dgx1x2()
    assert len(t.workers) == 16 and t.machines() == [list(range(8)), list(range(8, 16))]
    ib = [l for l in t.links if l.label == "IB"]
    assert len(ib) == 1 and ib[0].gbps == pytest.approx(6.37 * 8)
    p = pcie8()
    assert len(p.workers) == 8 and not any(l.label.startswith("NV") for l in p.links)


def test_fat_tree_k8_counts():
    t = fat_tree(8)
    assert kinds(t) == {"switch": 80, "host": 128}
    assert len(t.links) == 128 + 8 * 16 + 8 * 16  # host links + edge-agg + agg-core
    tiers = {n.tier: 0 for n in t.nodes}
    for n in t.nodes:
        tiers[n.tier] += 1
    assert tiers == {0: 128, 1: 32, 2: 32, 3: 16}
    with pytest.raises(NetweaveError, match="even"):
        fat_tree(5)


def test_leaf_spine_aro_default_and_ina_fraction():
    t = load_topology_spec("leafspine:leaves=24,spines=24,hosts=24,ina=0.2,pipelines=4,seed=1")
    assert kinds(t) == {"switch": 48, "host": 576} and len(t.links) == 576 + 24 * 24
    ina = [n for n in t.nodes if n.ina]
    assert len(ina) == round(0.2 * 48) and all(n.pipelines == 4 for n in ina)
    same = load_topology_spec("leafspine:leaves=24,spines=24,hosts=24,ina=0.2,pipelines=4,seed=1")
    assert [n.name for n in same.nodes if n.ina] == [n.name for n in ina]


def test_default_port_pipelines_are_contiguous_groups():
    t = leaf_spine(leaves=2, spines=4, hosts=4, ina=1.0, pipelines=4)
    ports = [e for _, e in t.adjacency[t.index["L0"]]]
    assert [t.port_pipeline("L0", e) for e in ports] == [0, 0, 1, 1, 2, 2, 3, 3]


def test_star_and_random():
    s = load_topology_spec("star:n=16,gbps=40,memory=4MB")
    assert kinds(s) == {"switch": 1, "host": 16} and s.node("S0").ina
    assert s.node("S0").aggregator_memory == 4_000_000 and all(l.gbps == 40 for l in s.links)
    assert not star(4, ina=False).node("S0").ina
    r = random_regular(switches=10, degree=3, hosts=20, seed=2)
    deg = [sum(1 for v, _ in r.adjacency[r.index[f"R{i}"]] if r.nodes[v].kind == "switch") for i in range(10)]
    assert deg == [3] * 10 and len(r.workers) == 20
    with pytest.raises(NetweaveError, match="even"):
        random_regular(switches=5, degree=3)


@pytest.mark.parametrize("spec, match", [
    ("leafspine:leaves=2", "needs the parameter spines"),
    ("fattree:k=4,ina=2", r"fraction of switches"),
    ("torus:n=4", "unknown topology"),
    ("star:n=4,memory=lots", "not a valid size"),
])
def test_builder_spec_errors(spec, match):
    with pytest.raises(NetweaveError, match=match):
        load_topology_spec(spec)


def test_switch_gbps_draws_the_switch_links_like_pahinas_setting():
    """``switch_gbps=5-20`` is vary_switch_links with the builder's seed (PAHInA §VI-C, as repro runs it)."""
    import numpy as np

    from netweave.errors import NetweaveError
    from netweave.topology import load_topology_spec, vary_switch_links

    spec = load_topology_spec("fattree:k=4,seed=3,gbps=10,switch_gbps=5-20")
    by_hand = vary_switch_links(load_topology_spec("fattree:k=4,seed=3,gbps=10"), 5, 20, np.random.default_rng(3))
    assert [l.gbps for l in spec.links] == [l.gbps for l in by_hand.links]
    hosts = {n.name for n in spec.nodes if n.is_worker}
    between = [l.gbps for l in spec.links if l.a not in hosts and l.b not in hosts]
    assert min(between) >= 5 and max(between) <= 20 and len(set(between)) > 1
    assert all(l.gbps == 10 for l in spec.links if l.a in hosts or l.b in hosts)
    for bad in ("20-5", "0-3", "fast"):
        with pytest.raises(NetweaveError, match="switch_gbps"):
            load_topology_spec(f"fattree:k=4,switch_gbps={bad}")
