"""SwitchGNN planning (switchgnn.txt): the boundary relation, multicast ordering (GAMR), the
time-slot model, multi-level blocks, and the traffic of the host-based and strawman strategies."""

from .blocks import Blocks, multilevel_blocks
from .boundary import BoundaryRelation, boundary_relation
from .gamr import gamr_order
from .strategies import AGGREGATOR_BYTES, Traffic, host_traffic, interleave, random_orders, straw_traffic
from .timeslot import TimeslotResult, graph_timeslot, lindley, timeslot_model

__all__ = ["Blocks", "multilevel_blocks", "BoundaryRelation", "boundary_relation", "gamr_order", "AGGREGATOR_BYTES", "Traffic",
           "host_traffic", "straw_traffic", "interleave", "random_orders", "TimeslotResult",
           "timeslot_model", "graph_timeslot", "lindley"]
