"""Distributed full-graph GNN training that executes DGCL-style plans (needs the ``train`` extra).

``train(TrainConfig(...))`` is ``netweave train`` from Python; importing this package does not
import torch (the modules that run on a rank do).
"""

from .job import COMMS, TrainConfig, TrainJob, prepare_job
from .launcher import train

__all__ = ["TrainConfig", "TrainJob", "prepare_job", "train", "COMMS"]
