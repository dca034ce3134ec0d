"""An emulated cluster for real training through in-network aggregation (issue 18).

:mod:`.cluster` turns a topology into namespaces, shaped veth links and routes (pure, testable
without root); :mod:`.lifecycle` brings it up and removes it on every exit path; :mod:`.netns`
holds the ``ip``/``tc`` primitives and the requirement checks.
"""

from .cluster import ClusterPlan, Impairment, Shaping, new_prefix, plan_cluster
from .lifecycle import Testbed, down, remove, up

__all__ = ["ClusterPlan", "Impairment", "Shaping", "plan_cluster", "new_prefix", "Testbed", "up", "down", "remove"]
