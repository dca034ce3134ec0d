import pytest

from netweave.errors import NetweaveError
from netweave.topology import (all_shortest_paths, bottleneck_gbps, clos_tiers, dgx1, fat_tree,
                               hop_distances, leaf_spine, path_links, shortest_path, topology_from_dict,
                               updown_paths, widest_path, widest_shortest_path)


def test_dgx1_paths_do_not_relay_through_gpus():
    t = dgx1()
    assert widest_shortest_path(t, "G0", "G5") == ["G0", "PX0", "CPU0", "CPU1", "PX2", "G5"]
    assert widest_shortest_path(t, "G0", "G3") == ["G0", "G3"]
    assert shortest_path(t, "G0", "G5", via_workers=True) in (["G0", "G1", "G5"], ["G0", "G4", "G5"])
    assert bottleneck_gbps(t, widest_path(t, "G0", "G5")) == pytest.approx(9.56 * 8)
    assert hop_distances(t, "G0")["G5"] == 5


def test_widest_prefers_bandwidth_over_hops():
    t = topology_from_dict({"nodes": [{"name": n, "kind": k} for n, k in
                                      [("A", "host"), ("B", "host"), ("X", "switch"), ("Y", "switch"), ("Z", "switch")]],
                            "links": [{"a": "A", "b": "X", "gbps": 100}, {"a": "X", "b": "B", "gbps": 10},
                                      {"a": "X", "b": "Y", "gbps": 100}, {"a": "Y", "b": "Z", "gbps": 100},
                                      {"a": "Z", "b": "B", "gbps": 100}]})
    assert shortest_path(t, "A", "B") == ["A", "X", "B"]
    assert widest_path(t, "A", "B") == ["A", "X", "Y", "Z", "B"]
    assert widest_shortest_path(t, "A", "B") == ["A", "X", "B"]
    assert path_links(t, ["A", "X", "Y"]) == [0, 2]


def test_fat_tree_updown_paths():
    t = fat_tree(8)
    cross_pod = updown_paths(t, "H0", "H127")
    assert len(cross_pod) == 16 and all(len(p) == 7 for p in cross_pod)
    tiers = clos_tiers(t)
    for p in cross_pod:
        assert [tiers[v] for v in p] == [0, 1, 2, 3, 2, 1, 0]
    assert len(updown_paths(t, "H0", "H5")) == 4  # same pod, other edge switch
    assert updown_paths(t, "H0", "H1") == [["H0", "E0", "H1"]]


def test_leaf_spine_paths_and_inferred_tiers():
    t = leaf_spine(leaves=3, spines=4, hosts=2)
    assert len(updown_paths(t, "H0", "H5")) == 4
    untiered = topology_from_dict({"nodes": [{"name": n.name, "kind": n.kind} for n in t.nodes],
                                   "links": [{"a": l.a, "b": l.b, "gbps": l.gbps} for l in t.links]})
    assert clos_tiers(untiered)["S0"] == 2 and clos_tiers(untiered)["L1"] == 1
    assert updown_paths(untiered, "H0", "H5") == updown_paths(t, "H0", "H5")


def test_no_path_without_worker_transit():
    t = topology_from_dict({"nodes": [{"name": n, "kind": "gpu"} for n in "ABC"],
                            "links": [{"a": "A", "b": "B", "gbps": 1}, {"a": "B", "b": "C", "gbps": 1}]})
    assert all_shortest_paths(t, "A", "C", via_workers=True) == [["A", "B", "C"]]
    with pytest.raises(NetweaveError, match="avoids transiting"):
        all_shortest_paths(t, "A", "C")
    with pytest.raises(NetweaveError, match="avoids transiting"):
        widest_path(t, "A", "C")
    with pytest.raises(NetweaveError, match="unknown node 'Q'"):
        shortest_path(t, "A", "Q")
