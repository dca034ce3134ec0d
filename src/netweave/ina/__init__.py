"""SwitchGNN planning (switchgnn.txt): the boundary relation, multicast ordering (GAMR), the
time-slot model, multi-level blocks, the traffic of the host-based and strawman strategies, and the
``InaPlan`` the switch simulator (:mod:`netweave.sim`) runs."""

from .blocks import Blocks, multilevel_blocks
from .boundary import BoundaryRelation, boundary_relation
from .gamr import gamr_order
from .orders import ORDERS, block_orders, dependency_order
from .plan import STRATEGIES, InaPlan, ina_plan
from .strategies import AGGREGATOR_BYTES, Traffic, host_traffic, interleave, random_orders, straw_traffic
from .timeslot import TimeslotResult, graph_timeslot, lindley, timeslot_model

__all__ = ["Blocks", "multilevel_blocks", "BoundaryRelation", "boundary_relation", "gamr_order", "ORDERS",
           "block_orders", "dependency_order", "STRATEGIES", "InaPlan", "ina_plan", "AGGREGATOR_BYTES", "Traffic",
           "host_traffic", "straw_traffic", "interleave", "random_orders", "TimeslotResult",
           "timeslot_model", "graph_timeslot", "lindley"]
