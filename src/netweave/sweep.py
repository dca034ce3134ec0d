"""``netweave sweep CONFIG.yaml``: a grid of cases run in a local process pool or on a Ray cluster,
collected into one table, resumable.

Config::

    name: ina-memory
    kind: ina            # ina | route | precision
    grid:                # every combination of these values is one case
      dataset: [cora]
      strategy: [host, straw, switchgnn]
      switch_memory: [100KB, 1MB]
      seed: [0, 1]
    fixed: {workers: 8}  # the same for every case

A case's parameters are the keyword arguments of the kind's runner:
- ``ina``: :class:`~netweave.scenarios.InaScenario`;
- ``route``: ``topology``, ``workers``, ``algorithm``, ``seed``;
- ``precision``: the same plus ``precisions``.

Results are appended to ``OUT/results.jsonl`` as each case finishes. An interrupted sweep resumes
by skipping the cases already there (:mod:`netweave.cases`, which also explains ``--ray``).
"""

from __future__ import annotations

import itertools
from pathlib import Path

from ._files import read_yaml
from .cases import run_cases
from .errors import NetweaveError

KINDS = ("ina", "route", "precision")


def load_config(path: str | Path) -> dict:
    data = read_yaml(path)
    if not isinstance(data, dict) or data.get("kind") not in KINDS or not isinstance(data.get("grid"), dict):
        raise NetweaveError(f"{path}: needs 'kind' ({', '.join(KINDS)}) and a 'grid' mapping of lists")
    for key, values in data["grid"].items():
        if not isinstance(values, list) or not values:
            raise NetweaveError(f"{path}: grid.{key} must be a non-empty list")
    if not isinstance(data.get("fixed", {}), dict):
        raise NetweaveError(f"{path}: 'fixed' must be a mapping")
    return data


def cases(config: dict) -> list[dict]:
    keys = sorted(config["grid"])
    fixed = config.get("fixed", {})
    return [dict(fixed, **dict(zip(keys, combo))) for combo in itertools.product(*(config["grid"][k] for k in keys))]


def run_case(kind: str, params: dict) -> dict:
    """One case (runs in a worker process or a Ray task)."""
    if kind == "ina":
        from .scenarios import InaScenario
        from .sim.layer import parse_switch_memory

        p = dict(params)
        if isinstance(p.get("switch_memory"), str):
            p["switch_memory"] = parse_switch_memory(p["switch_memory"], "switch_memory")
        try:
            report = InaScenario(**p).run().summary()
        except TypeError as exc:
            raise NetweaveError(f"bad ina parameter: {exc}") from None
        return report
    from .route.jobs import parse_precision_mix
    from .scenarios import PRECISION_MIX, RouteScenario

    raw = params.get("precisions")
    mix = None if kind == "route" else (parse_precision_mix(raw, "precisions") if raw is not None else PRECISION_MIX)
    missing = [k for k in ("topology", "workers") if k not in params]
    if missing:
        raise NetweaveError(f"a sweep of kind {kind} needs {' and '.join(missing)} in grid or fixed")
    result = RouteScenario(topology=params["topology"], algorithm=params.get("algorithm", "aro" if kind == "route" else "pahina"),
                           workers=int(params["workers"]), ps=params.get("ps"), precisions=mix,
                           seed=int(params.get("seed", 0))).run()
    return {k: v for k, v in result.summary().items() if k != "tasks"}


def sweep(config: dict, out_dir: str | Path, workers: int | None = None, ray: str | None = None,
          on_result=None) -> list[dict]:
    """Run the cases not yet in ``OUT/results.jsonl``; returns every row (old and new) in grid order."""
    return run_cases(run_case, (config["kind"],), cases(config), Path(out_dir) / "results.jsonl", workers, ray,
                     on_result, f"sweep {config.get('name', config['kind'])}")
