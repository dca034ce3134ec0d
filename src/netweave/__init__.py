"""netweave: plan, simulate and run the communication of distributed training.

Layers (each a sub-package): ``graph`` (CSR graphs, loaders, generators), ``partition`` (METIS,
random, range, hierarchical; the communication relation), ``topology`` (nodes, links, builders,
YAML, paths). Later layers (planning, in-network aggregation, routing, runtime, kernels) build on
these values. The core needs no torch.
"""

from .errors import NetweaveError

__version__ = "0.1.0"
__all__ = ["NetweaveError", "__version__"]
