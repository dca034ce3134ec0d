"""Topologies: nodes and full-duplex links, YAML, builders and paths."""

from .builders import dgx1, dgx1x2, fat_tree, leaf_spine, pcie8, random_regular, star, vary_switch_links
from .paths import (all_shortest_paths, bottleneck_gbps, clos_tiers, hop_distances, path_links,
                    shortest_path, updown_paths, widest_path, widest_shortest_path)
from .spec import BUILDERS, load_topology_spec
from .topology import NODE_KINDS, WORKER_KINDS, Link, Node, Topology
from .yaml_io import load_topology, save_topology, topology_from_dict, topology_to_dict

__all__ = ["Topology", "Node", "Link", "NODE_KINDS", "WORKER_KINDS", "load_topology", "save_topology",
           "topology_from_dict", "topology_to_dict", "load_topology_spec", "BUILDERS", "dgx1", "dgx1x2",
           "pcie8", "star", "leaf_spine", "fat_tree", "random_regular", "vary_switch_links", "all_shortest_paths",
           "shortest_path", "widest_path", "widest_shortest_path", "bottleneck_gbps", "path_links",
           "hop_distances", "clos_tiers", "updown_paths"]
