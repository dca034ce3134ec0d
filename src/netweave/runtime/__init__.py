"""Distributed full-graph GNN training that executes DGCL-style plans (needs the ``train`` extra).

``netweave.scenarios.TrainScenario(...).run()`` is ``netweave train`` from Python; this package is
what runs on the ranks. Importing it does not import torch (the modules that run on a rank do).
"""

from .job import TrainJob
from .launcher import train

__all__ = ["TrainJob", "train"]  # the report types: netweave.runtime.report (imports torch)
