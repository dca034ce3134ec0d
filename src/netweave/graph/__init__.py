"""Graphs: the CSR ``Graph`` value, dataset loaders and generators."""

from .datasets import BUNDLED, FORMATS, GENERATORS, load_dataset
from .generators import erdos_renyi, ring, rmat, star
from .graph import Graph, from_edges
from .saved import load_graph
from .presets import preset_graph

__all__ = ["Graph", "from_edges", "load_graph", "load_dataset", "rmat", "erdos_renyi", "star",
           "ring", "preset_graph", "BUNDLED", "FORMATS", "GENERATORS"]
