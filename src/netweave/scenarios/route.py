"""Gradient aggregation as a scenario: topology + jobs → routes (ARO, PAHInA or a baseline) → rates.

What ``netweave route``, ``compare``'s routing and precision sections and ``sweep`` (kinds
``route`` and ``precision``) run. Which model a run uses is decided here, once:

* ``pahina`` and ``atp`` always run on PAHInA's precision-aware model (per-worker rates, the §VI-A
  training metrics): :class:`~netweave.route.plan.PrecisionResult`;
* ``grid`` and ``ps`` run on it when a task mixes precisions, else on ARO's model;
* ``aro``, ``ecmp`` and ``aggtree`` run on ARO's model (max-min rates of aggregation flows; they
  refuse a task that mixes precisions): :class:`~netweave.route.plan.RouteResult`.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..errors import NetweaveError

ALGORITHMS = ("aro", "ecmp", "grid", "aggtree", "ps", "pahina", "atp")
PRECISION_AWARE = ("pahina", "atp")


@dataclass(frozen=True, kw_only=True)
class RouteScenario:
    """Route the aggregation of ``jobs_file``'s jobs, or of one task of ``workers`` random workers.

    Attributes:
        topology: topology spec; ps: the random task's PS (default: the first host under an INA switch).
        precisions: precision mix of the random workers (e.g. ``{"fp8": 5, "fp16": 3}``); None: fp32.
        switch_gbps: aggregated-output capacity per precision of INA switches that name none (Gb/s).
        time_limit_s, accelerations: ARO's solver limit and §III-C heuristics (``app``, ``sro``, ``qsr``).
        seed: the random workers, the randomised baselines and PAHInA's last tie-break.
    """

    topology: str
    algorithm: str = "aro"
    jobs_file: str | None = None
    workers: int | None = None
    ps: str | None = None
    precisions: dict[str, float] | None = None
    switch_gbps: float = 100.0
    time_limit_s: float = 60.0
    accelerations: tuple[str, ...] = ()
    seed: int = 0

    def check(self) -> None:
        """Reject an unknown algorithm, both or neither source of jobs, bad numbers, and heuristics
        that do not apply, with one line."""
        if self.algorithm not in ALGORITHMS:
            raise NetweaveError(f"unknown algorithm {self.algorithm!r}; use one of {', '.join(ALGORITHMS)}")
        if (self.jobs_file is None) == (self.workers is None):
            raise NetweaveError("give exactly one of --jobs FILE and --workers W")
        rules = [(self.workers is None or self.workers >= 1, f"--workers {self.workers} must be at least 1"),
                 (self.time_limit_s > 0, f"--time-limit {self.time_limit_s:g} must be positive (seconds)"),
                 (self.switch_gbps > 0, f"--switch-gbps {self.switch_gbps:g} must be positive (Gb/s)")]
        for ok, message in rules:
            if not ok:
                raise NetweaveError(message)
        if self.accelerations:
            from ..route.aro import ACCELERATIONS

            unknown = sorted(set(self.accelerations) - set(ACCELERATIONS))
            if unknown:
                raise NetweaveError(f"unknown acceleration {', '.join(unknown)}; use {', '.join(ACCELERATIONS)}")
            if self.algorithm != "aro":
                raise NetweaveError(f"--accelerate {','.join(self.accelerations)} applies only to --algorithm aro "
                                    f"(ARO's §III-C heuristics), not {self.algorithm}; drop --accelerate or use aro")
        if self.precisions is not None:
            from ..route.jobs import check_precision_mix

            check_precision_mix(self.precisions)

    def run(self):
        """:class:`RouteResult` on ARO's model or :class:`PrecisionResult` on PAHInA's (see module)."""
        from ..route import load_jobs, random_job
        from ..route.plan import route_jobs, route_precision
        from ..topology import load_topology_spec

        self.check()
        topo = load_topology_spec(self.topology)
        jobs = (load_jobs(self.jobs_file) if self.jobs_file is not None
                else random_job(topo, self.workers, self.ps, self.seed, self.precisions))
        mixed = any(len(set(t.precisions)) > 1 for j in jobs for t in j.tasks)
        if self.algorithm in PRECISION_AWARE or (self.algorithm in ("grid", "ps") and mixed):
            return route_precision(topo, jobs, self.algorithm, self.seed, self.switch_gbps)
        return route_jobs(topo, jobs, self.algorithm, self.seed, self.time_limit_s, self.accelerations)


@dataclass(frozen=True, kw_only=True)
class RouteCheck:
    """Evaluate saved routes (``netweave route --evaluate``) on ``topology``: their jobs, or ``jobs_file``'s."""

    topology: str
    routes_file: str
    jobs_file: str | None = None

    def run(self) -> "RouteCheckResult":
        from ..route import evaluate_routes, load_jobs
        from ..route.jobs import check_jobs
        from ..route.plan import load_routes
        from ..topology import load_topology_spec

        topo = load_topology_spec(self.topology)
        routes, jobs = load_routes(self.routes_file)
        if self.jobs_file is not None:
            jobs = load_jobs(self.jobs_file)
        check_jobs(jobs, topo)  # an unknown PS or worker is named, not only its path
        ev = evaluate_routes(topo, jobs, routes)
        return RouteCheckResult(check=self, topology_name=topo.name, rates_gbps=ev.rates_gbps, bottleneck=ev.bottleneck)


@dataclass(frozen=True, kw_only=True, eq=False)
class RouteCheckResult:
    """Each flow's evaluated rate (Gb/s) and its bottleneck link (None: none)."""

    check: RouteCheck
    topology_name: str
    rates_gbps: dict
    bottleneck: dict

    def summary(self) -> dict:
        """The JSON report of ``netweave route --evaluate``."""
        return {"routes": self.check.routes_file, "evaluated_rates_gbps": self.rates_gbps,
                "min_rate_gbps": min(self.rates_gbps.values()),
                "bottleneck": {k: (None if v is None else list(v)) for k, v in self.bottleneck.items()}}
