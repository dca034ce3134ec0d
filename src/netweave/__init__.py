"""netweave: plan, simulate and run the communication of distributed training.

Layers (each a sub-package): ``graph`` (CSR graphs, loaders, generators), ``partition`` (METIS,
random, range, hierarchical; the communication relation), ``topology`` (nodes, links, builders,
YAML, paths). Later layers (planning, in-network aggregation, routing, runtime, kernels) build on
these values. The core needs no torch.

``netweave.distributed`` (the train extra) runs DGCL's graph allgather for any PyG model on N
ranks; it is imported on first use (``import netweave.distributed`` or ``netweave.distributed``),
so that ``import netweave`` stays free of torch.
"""

from .errors import NetweaveError

__version__ = "0.1.0"
__all__ = ["NetweaveError", "__version__", "distributed"]


def __getattr__(name: str):
    if name == "distributed":  # imports torch: only when asked for
        import importlib

        return importlib.import_module(".distributed", __name__)
    raise AttributeError(f"module 'netweave' has no attribute {name!r}")
