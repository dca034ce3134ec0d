"""Aggregation tasks and training jobs (aro.txt §III-B; the jobs YAML of docs/formats.md).

A *task* is a set of workers sending aggregatable gradients to one PS; a *job* is one or more tasks
(a model sharded over several PSs) with a weight ``β`` (its model size, for MJMT fairness).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np

from .._files import read_yaml
from ..errors import NetweaveError
from ..topology import Topology


PRECISIONS = ("fp8", "fp16", "fp32")


@dataclass(frozen=True)
class Task:
    """``workers`` (host names) send to ``ps`` (a host name); ``precisions`` gives each worker's
    gradient precision (aligned with ``workers``; empty: all fp32)."""

    name: str
    ps: str
    workers: tuple[str, ...]
    precisions: tuple[str, ...] = ()

    def precision_of(self) -> dict[str, str]:
        return dict(zip(self.workers, self.precisions or ("fp32",) * len(self.workers)))


@dataclass(frozen=True)
class Job:
    name: str
    tasks: tuple[Task, ...]
    weight: float = 1.0


def check_jobs(jobs: list[Job], topo: Topology) -> None:
    """Every worker and PS is a host of ``topo``; a task has workers and does not include its PS."""
    if not jobs or not any(j.tasks for j in jobs):
        raise NetweaveError("no aggregation task: give --workers W or a jobs file with tasks")
    for job in jobs:
        if not np.isfinite(job.weight):
            raise NetweaveError(f"job {job.name}: weight {job.weight} must be a finite positive number")
        if job.weight <= 0:
            raise NetweaveError(f"job {job.name}: weight {job.weight} must be positive")
        for task in job.tasks:
            for name in (task.ps, *task.workers):
                node = topo.node(name)  # unknown names raise with a suggestion
                if node.kind != "host":
                    raise NetweaveError(f"task {task.name}: {name} is a {node.kind}, not a host")
            if not task.workers:
                raise NetweaveError(f"task {task.name} has no workers")
            if task.ps in task.workers:
                raise NetweaveError(f"task {task.name}: the PS {task.ps} is also listed as a worker")
            if len(set(task.workers)) != len(task.workers):
                raise NetweaveError(f"task {task.name} lists a worker twice")


JOB_KEYS = ("name", "weight", "tasks")
TASK_KEYS = ("ps", "workers", "precision", "worker_precision")


def _name(value, where: str) -> str:
    """A node or job name: a string (or a plain integer, as YAML reads ``7``), never a list or mapping."""
    if isinstance(value, bool) or not isinstance(value, (str, int)):
        raise NetweaveError(f"{where} must be a name, got {value!r}")
    return str(value)


def _unknown_key(entry: dict, allowed: tuple[str, ...], where: str) -> None:
    unknown = sorted(str(k) for k in set(entry) - set(allowed))
    if unknown:
        raise NetweaveError(f"{where}: unknown key {unknown[0]!r}; allowed keys: {', '.join(allowed)}")


def load_jobs(path: str | Path) -> list[Job]:
    """Read a Jobs YAML file (``jobs: [{name, weight, tasks: [{ps, workers, precision, worker_precision}]}]``).

    Every field is type-checked (a name is a string, ``weight`` a number, ``workers`` a list of names,
    precisions ``fp8``/``fp16``/``fp32``) and unknown keys are refused, each with one line naming the
    file, the job and the field."""
    data = read_yaml(path)
    if not isinstance(data, dict) or not isinstance(data.get("jobs"), list):
        raise NetweaveError(f"{path}: expected a mapping with a 'jobs' list")
    _unknown_key(data, ("jobs",), f"{path}")
    jobs = []
    for j, entry in enumerate(data["jobs"]):
        if not isinstance(entry, dict) or not isinstance(entry.get("tasks"), list):
            raise NetweaveError(f"{path}: job {j} needs a 'tasks' list")
        _unknown_key(entry, JOB_KEYS, f"{path}: job {j}")
        name = _name(entry.get("name", f"J{j}"), f"{path}: job {j}: name")
        weight = entry.get("weight", 1.0)
        if isinstance(weight, bool) or not isinstance(weight, (int, float)):
            raise NetweaveError(f"{path}: job {name}: weight must be a number (the job's model size, e.g. 1.0), "
                                f"got {weight!r}")
        tasks = []
        for t, task in enumerate(entry["tasks"]):
            if not isinstance(task, dict) or "ps" not in task or not isinstance(task.get("workers"), list):
                raise NetweaveError(f"{path}: job {name} task {t} needs 'ps' and a 'workers' list")
            where = f"{path}: job {name} task {t}"
            _unknown_key(task, TASK_KEYS, where)
            ps = _name(task["ps"], f"{where}: ps")
            workers = tuple(_name(w, f"{where}: workers[{i}]") for i, w in enumerate(task["workers"]))
            default = _name(task.get("precision", "fp32"), f"{where}: precision")
            per_raw = task.get("worker_precision") or {}
            if not isinstance(per_raw, dict):
                raise NetweaveError(f"{where}: worker_precision must map workers to precisions, e.g. {{W1: fp8}}")
            per = {_name(k, f"{where}: worker_precision key"): _name(v, f"{where}: worker_precision[{k}]")
                   for k, v in per_raw.items()}
            stray = sorted(set(per) - set(workers))
            if stray:
                raise NetweaveError(f"{where}: worker_precision names {stray[0]!r}, which is not one of its workers")
            precisions = tuple(per.get(w, default) for w in workers)
            bad = sorted(set(precisions) - set(PRECISIONS))
            if bad:
                raise NetweaveError(f"{where}: unknown precision {bad[0]!r}; use {', '.join(PRECISIONS)}")
            has = "precision" in task or bool(per)
            tasks.append(Task(f"{name}.T{t}", ps, workers, precisions if has else ()))
        jobs.append(Job(name, tuple(tasks), float(weight)))
    return jobs


def random_job(topo: Topology, workers: int, ps: str | None = None, seed: int = 0,
               mix: dict[str, float] | None = None) -> list[Job]:
    """One job with one task: ``workers`` hosts drawn at random (seeded) and a PS — ``ps``, or the
    first host under an INA switch (the paper puts the PS under an INA leaf), or the first host.
    ``mix`` (e.g. ``{"fp8": 5, "fp16": 3, "fp32": 2}``) gives the workers precisions in that ratio."""
    if workers < 1:
        raise NetweaveError(f"--workers {workers} must be at least 1")
    hosts = [n.name for n in topo.nodes if n.kind == "host"]
    if not hosts:
        kinds = {f"{n.kind.upper()}s" if n.kind == "gpu" else f"{n.kind}s" for n in topo.nodes if n.is_worker}
        raise NetweaveError(
            f"topology '{topo.name}' has no hosts (its workers are {', '.join(sorted(kinds)) or 'none'}); "
            "route needs hosts joined by switches: use star, leafspine, fattree, random "
            "or a YAML topology with host and switch nodes")
    if ps is None:
        ps = next((h for h in hosts if any(topo.nodes[nb].ina for nb, _ in topo.adjacency[topo.index[h]])), hosts[0])
    topo.node(ps)
    others = [h for h in hosts if h != ps]
    if not 1 <= workers <= len(others):
        raise NetweaveError(f"--workers {workers}: the topology has {len(others)} hosts besides the PS")
    rng = np.random.default_rng(seed)
    chosen = rng.choice(len(others), size=workers, replace=False)
    names = tuple(others[i] for i in sorted(chosen))
    return [Job("J0", (Task("J0.T0", ps, names, precision_mix(mix, workers, rng) if mix else ()),))]


def parse_precision_mix(raw: str, where: str = "--precisions") -> dict[str, float]:
    """``fp8:5,fp16:3,fp32:2`` -> ``{"fp8": 5.0, "fp16": 3.0, "fp32": 2.0}`` (checked by :func:`precision_mix`)."""
    try:
        mix = {k.strip(): float(v) for k, v in (part.split(":") for part in str(raw).split(",") if part.strip())}
    except ValueError:
        raise NetweaveError(f"{where} {raw!r}: write it like fp8:5,fp16:3,fp32:2") from None
    check_precision_mix(mix, where)
    return mix


def check_precision_mix(mix: dict[str, float], where: str = "--precisions") -> None:
    """Known precisions, finite non-negative weights, at least one of them positive."""
    bad = sorted(set(mix) - set(PRECISIONS))
    if bad:
        raise NetweaveError(f"{where}: unknown precision {bad[0]!r}; use {', '.join(PRECISIONS)}, e.g. fp8:5,fp16:3,fp32:2")
    if any(not np.isfinite(v) or v < 0 for v in mix.values()):
        raise NetweaveError(f"{where}: weights must be finite and non-negative, e.g. fp8:5,fp16:3,fp32:2")
    if sum(mix.values()) <= 0:
        raise NetweaveError(f"{where}: every weight is 0; give at least one precision a positive weight, e.g. fp8:1")


def precision_mix(mix: dict[str, float], n: int, rng: np.random.Generator) -> tuple[str, ...]:
    """``n`` precisions in the ratio ``mix`` (largest remainders), shuffled."""
    check_precision_mix(mix)
    keys = list(mix)
    share = np.array([mix[k] for k in keys], dtype=float) / sum(mix.values()) * n
    count = np.floor(share).astype(int)
    count[np.argsort(-(share - count), kind="stable")[: n - count.sum()]] += 1
    return tuple(rng.permutation(np.repeat(keys, count)).tolist())
