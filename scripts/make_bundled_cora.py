"""Regenerate ``src/netweave/graph/data/cora.npz`` from the Planetoid files.

Usage: python scripts/make_bundled_cora.py ../shared/data/planetoid
"""

import sys
from pathlib import Path

import numpy as np

from netweave.graph.planetoid import load_planetoid

graph = load_planetoid(sys.argv[1], "cora")
graph = graph.with_(indices=graph.indices.astype(np.int32), labels=graph.labels.astype(np.int8))
graph.save(Path(__file__).resolve().parents[1] / "src/netweave/graph/data/cora.npz")
