"""The emulated cluster as a scenario: topology (+ a routing plan's paths) → namespaces, shaped
links and pinned routes (:mod:`netweave.testbed`). What ``netweave testbed up`` runs."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, kw_only=True)
class ClusterScenario:
    """``topology`` (spec or YAML) with every link rate × ``scale``; ``routes_file``: a routes JSON
    whose per-worker paths are pinned (default: shortest paths)."""

    topology: str
    scale: float = 0.01
    routes_file: str | None = None

    def plan(self):
        """The :class:`~netweave.testbed.ClusterPlan` (pure: nothing is created)."""
        from ..route.plan import read_routes_tasks
        from ..testbed import plan_cluster
        from ..topology import load_topology_spec

        topo = load_topology_spec(self.topology)
        routes = None if self.routes_file is None else read_routes_tasks(self.routes_file)
        return plan_cluster(topo, self.scale, routes)

    def up(self) -> "ClusterResult":
        """Create the cluster and leave it for ``netweave testbed down``."""
        from ..testbed.lifecycle import create

        plan = self.plan()
        create(plan, keep=True)
        return ClusterResult(scenario=self, plan=plan)


@dataclass(frozen=True, kw_only=True, eq=False)
class ClusterResult:
    """A cluster that exists: its plan (names, addresses, shaping, routes)."""

    scenario: ClusterScenario
    plan: object

    @property
    def prefix(self) -> str:
        return self.plan.prefix

    def summary(self) -> dict:
        p = self.plan
        return {"prefix": p.prefix, "topology": p.topology.name, "scale": p.scale, "namespaces": len(p.namespace),
                "links": len(p.topology.links), "pinned_flows": len(p.flows),
                "addresses": dict(sorted(p.address.items())), "down": "netweave testbed down"}
