"""Typed scenarios: the one place where netweave's layers are wired (ns-3's helpers over its models).

Each scenario is a frozen, keyword-only dataclass whose ``run()`` wires the data flow (dataset →
partition → plan → simulation or run) once and returns a typed result with ``summary()`` (a JSON-able dict, units in key
names). ``cli``, ``compare``, ``repro`` and ``sweep`` parse, build a scenario, run it and render.
"""

from .distributed import DistributedScenario
from .defaults import FEATURE_DIM, PRECISION_MIX, SWITCH_MEMORY_BYTES, feature_bytes, feature_dim
from .exchange import ExchangeResult, ExchangeScenario, PlanCheck, PlanCheckResult
from .ina import InaResult, InaScenario, TimeslotResult, TimeslotScenario
from .partition import PartitionResult, PartitionScenario
from .route import RouteCheck, RouteCheckResult, RouteScenario
from .testbed import (ClusterScenario, TestbedGnnResult, TestbedGnnScenario, TestbedTrainResult,
                      TestbedTrainScenario)
from .train import TrainScenario

__all__ = ["ExchangeScenario", "ExchangeResult", "PlanCheck", "PlanCheckResult", "RouteScenario", "RouteCheck",
           "RouteCheckResult", "InaScenario", "InaResult", "TimeslotScenario", "TimeslotResult", "PartitionScenario",
           "PartitionResult", "TrainScenario", "DistributedScenario", "ClusterScenario", "TestbedTrainScenario",
           "TestbedTrainResult", "TestbedGnnScenario", "TestbedGnnResult", "FEATURE_DIM", "PRECISION_MIX",
           "SWITCH_MEMORY_BYTES", "feature_bytes", "feature_dim"]
