"""Routing of gradient aggregation through INA switches in Clos networks: ARO (aro.txt), its
baselines, and an independent evaluator of any routing."""

from .aro import Solution, aro, generate_routes, upper_bound
from .evaluate import Evaluation, evaluate_routes, max_min_rates, task_flows
from .jobs import Job, Task, check_jobs, load_jobs, random_job
from .unfold import Unfolded, unfold_clos

__all__ = ["Solution", "aro", "generate_routes", "upper_bound", "Evaluation", "evaluate_routes", "max_min_rates",
           "task_flows", "Job", "Task", "check_jobs", "load_jobs", "random_job", "Unfolded", "unfold_clos"]
