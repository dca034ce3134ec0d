"""Topology builders, by name, with their spec parameters (``name:key=value,…``)."""

from .clos import fat_tree, leaf_spine
from .gpu_servers import GBPS, dgx1, dgx1x2, pcie8
from .simple import random_regular, star, tree, vary_switch_links

__all__ = ["dgx1", "dgx1x2", "pcie8", "star", "tree", "leaf_spine", "fat_tree", "random_regular", "vary_switch_links", "GBPS"]
