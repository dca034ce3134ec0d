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

A case's parameters are the fields of the kind's scenario (:mod:`netweave.scenarios.fields`):
``exchange`` → :class:`~netweave.scenarios.ExchangeScenario`, ``partition`` →
:class:`~netweave.scenarios.PartitionScenario`, ``ina`` → :class:`~netweave.scenarios.InaScenario`
(plus the simulator's options), ``route`` → :class:`~netweave.scenarios.RouteScenario`, and
``precision`` → the same with PAHInA and §VI's precision mix by default.

Results are appended to ``OUT/results.jsonl`` as each case finishes. An interrupted sweep resumes
by skipping the cases already there (:mod:`netweave.cases`, which also explains ``--ray``).
"""

from __future__ import annotations

import itertools
import math
from pathlib import Path

from ._files import read_yaml
from .cases import run_cases
from .errors import NetweaveError
from .outputs import output_dir
from .scenarios.fields import KINDS


CONFIG_KEYS = ("name", "kind", "grid", "fixed")


def load_config(path: str | Path) -> dict:
    """The sweep file ``path``, checked: the keys :data:`CONFIG_KEYS` only, a known kind, a grid of
    non-empty lists, ``fixed`` a mapping (each case's fields are checked by :func:`sweep`)."""
    data = read_yaml(path)
    if isinstance(data, dict):
        unknown = sorted(str(k) for k in set(data) - set(CONFIG_KEYS))
        if unknown:
            raise NetweaveError(f"{path}: unknown key {unknown[0]!r}; a sweep file has {', '.join(CONFIG_KEYS[:-1])} "
                                f"and {CONFIG_KEYS[-1]} (a case's parameters go in grid or fixed)")
    if not isinstance(data, dict) or data.get("kind") not in KINDS or not isinstance(data.get("grid"), dict):
        raise NetweaveError(f"{path}: needs 'kind' ({', '.join(KINDS)}) and a 'grid' mapping of lists")
    for key, values in data["grid"].items():
        if not isinstance(values, list) or not values:
            raise NetweaveError(f"{path}: grid.{key} must be a non-empty list")
    if not isinstance(data.get("fixed", {}), dict):
        raise NetweaveError(f"{path}: 'fixed' must be a mapping")
    return data


MAX_CASES = 100_000  # a sweep's grid is counted before it is built: a few kB of YAML could name 10⁹ cases


def cases(config: dict) -> list[dict]:
    """Every combination of the grid's values, each with the ``fixed`` fields; refused above
    :data:`MAX_CASES` before any is built."""
    keys = sorted(config["grid"])
    count = math.prod(len(config["grid"][k]) for k in keys)
    if count > MAX_CASES:
        sizes = " × ".join(str(len(config["grid"][k])) for k in keys)
        raise NetweaveError(f"the sweep's grid has {count:,} cases ({sizes}); at most {MAX_CASES:,} run in one sweep: "
                            "split it into several sweep files or move values to 'fixed'")
    fixed = config.get("fixed", {})
    return [dict(fixed, **dict(zip(keys, combo))) for combo in itertools.product(*(config["grid"][k] for k in keys))]


def run_case(kind: str, params: dict) -> dict:
    """One case (runs in a worker process or a Ray task): its scenario's ``summary()``."""
    from .scenarios.fields import scenario_from

    return {k: v for k, v in scenario_from(kind, params).run().summary().items() if k != "tasks"}


def sweep(config: dict, out_dir: str | Path, workers: int | None = None, ray: str | None = None,
          on_result=None) -> list[dict]:
    """Run the cases not yet in ``OUT/results.jsonl``; returns every row (old and new) in grid order.

    Every case's scenario is built first, so that a bad field fails before anything runs or is written."""
    from .scenarios.fields import scenario_from

    for params in cases(config):
        scenario_from(config["kind"], params)
    with output_dir(out_dir) as out:  # removed again if the sweep fails before its first result
        return run_cases(run_case, (config["kind"],), cases(config), out / "results.jsonl", workers, ray,
                         on_result, f"sweep {config.get('name', config['kind'])}")
