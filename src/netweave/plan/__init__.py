"""DGCL planning of the graph allgather: logical links, cost model, P2P and SPST plans, validation
and execution tables."""

from .cost import PlanCost, plan_cost
from .links import WorkerLinks, worker_links
from .p2p import p2p_plan
from .plan import GraphCommPlan, load_plan
from .spst import p2p_guard, spst_plan
from .tables import CommTuple, backward_substage_tables, backward_tables, forward_tables
from .validate import plan_problems, validate_plan

PLANNERS = ("p2p", "spst")

__all__ = ["WorkerLinks", "worker_links", "GraphCommPlan", "load_plan", "PlanCost", "plan_cost",
           "p2p_plan", "spst_plan", "p2p_guard", "plan_problems", "validate_plan", "CommTuple", "forward_tables",
           "backward_tables", "backward_substage_tables", "PLANNERS"]
