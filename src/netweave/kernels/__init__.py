"""MGG (mgg.txt): the multi-GPU workload layout, the reference aggregation, the analytical model and
the cross-iteration tuner. The GPU kernels (Triton) are not built yet."""

from .layout import Config, GPUWork, Layout, mgg_layout, shard_embeddings
from .model import Hardware, feasible, launch, smem, wpw
from .reference import aggregate
from .tuner import TuneResult, tune

__all__ = ["Config", "GPUWork", "Layout", "mgg_layout", "shard_embeddings", "Hardware", "feasible", "launch",
           "smem", "wpw", "aggregate", "TuneResult", "tune"]
