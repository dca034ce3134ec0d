"""SwitchGNN planning: multicast ordering (GAMR) and the time-slot model (switchgnn.txt §3.2)."""

from .gamr import gamr_order
from .timeslot import TimeslotResult, graph_timeslot, lindley, timeslot_model

__all__ = ["gamr_order", "TimeslotResult", "timeslot_model", "graph_timeslot", "lindley"]
