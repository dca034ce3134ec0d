"""The one home of the defaults every entry point shares (ns-3's helper layer keeps them, not the models).

* ``FEATURE_DIM``: float32 values per embedding when the dataset has no features (and the width
  the papers' experiments use). Bytes always follow from a width by :func:`feature_bytes`.
* ``PRECISION_MIX``: the workers' precisions of PAHInA §VI (fp8 : fp16 : fp32 = 5 : 3 : 2).
* ``SWITCH_MEMORY_BYTES``: aggregator memory of a switch whose topology entry names no
  ``aggregator_memory`` (SwitchGNN §6 uses 10–100 MB).
"""

from __future__ import annotations

from ..errors import NetweaveError
from ..ina.strategies import SWITCH_MEMORY_BYTES  # noqa: F401 (re-exported: ina_plan's default is the same value)
from ..units import BYTES_PER_VALUE, feature_bytes  # noqa: F401 (re-exported: the defaults' one home)

FEATURE_DIM = 128
PRECISION_MIX: dict[str, float] = {"fp8": 5.0, "fp16": 3.0, "fp32": 2.0}


def feature_dim(requested: int | None, graph=None, where: str = "--feature-dim") -> int:
    """The embedding width: ``requested``, else the graph's feature width, else :data:`FEATURE_DIM`."""
    dim = requested if requested is not None else ((graph.feature_dim if graph is not None else 0) or FEATURE_DIM)
    if dim < 1:
        raise NetweaveError(f"{where} {dim} must be positive")
    return int(dim)
