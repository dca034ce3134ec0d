"""Data-parallel training through in-network gradient aggregation on the testbed (pahina.txt §IV,
§VI-B): the control planes' placement (:mod:`.plan`: PAHInA, ATP, GRID, ARO, ECMP, the PS, gloo's
ring), the XDP aggregator (:mod:`.xdp`) and its switch agent (:mod:`.agent`), the endpoints
(:mod:`.endpoints`), the gradients' fixed point (:mod:`.gradients`), the roles (:mod:`.ps`,
:mod:`.worker`, :mod:`.ring`, sharing :mod:`.steps` and :mod:`.control`), the models and data, and
a whole run (:mod:`.run`). It uses :mod:`netweave.testbed.net` and never :mod:`netweave.testbed.gnn`.
"""

from .plan import SCHEMES, TrainingPlan, plan_training
from .run import TestbedRun, TrainRun, train

__all__ = ["SCHEMES", "TrainingPlan", "plan_training", "TestbedRun", "TrainRun", "train"]
