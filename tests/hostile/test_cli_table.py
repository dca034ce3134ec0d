"""Bad input over the whole command line, as a table: argv → the exact one error line, exit 2, nothing written.

Issue 17 found that about 180 of 200 bad inputs already gave the promised answer; this table keeps
them that way. Every row runs ``netweave.cli.main(argv)`` in a forked child of this process (the CLI
is imported once, so a row costs milliseconds, not a Python start-up), with its address space capped
by ``RLIMIT_AS`` (a regression that tries to expand something huge fails instead of swapping), in a
fresh empty working directory, with stdout and stderr sent to files and a wall-clock limit after
which the child's process group is killed. A row passes when the child

* exits with status 2,
* printed exactly one line on stderr, the expected ``netweave: error: …`` line, and nothing on stdout,
* and wrote no file: neither in its working directory nor beside the input files.

The input files are built in a temporary folder; ``{d}`` in a row's argv and expected line stands
for that folder, and ``{GB}`` in an expected line for the memory still available (it varies). Rows
are literal: a changed message is a failing row, to be updated on purpose.
"""

from __future__ import annotations

import contextlib
import gc
import gzip
import importlib
import io
import json
import os
import re
import resource
import select
import shlex
import signal
import sys
import time
import traceback
import warnings
import zipfile
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pytest
import typer

import netweave.cli

MEMORY_LIMIT = 3 * 2**30  # address space of a row's child; every bad input must fail far below this
TIMEOUT_S = 30.0  # a row normally takes well under a second; past this its process group is killed
ENV = {"NETWEAVE_NO_PROGRESS": "1", "NO_COLOR": "1", "COLUMNS": "200", "PYTHONDONTWRITEBYTECODE": "1"}
PREFIX = "netweave: error: "


# -- running a row in a forked child ---------------------------------------------------------------

# What the rows import lazily is imported once in this process, so that a forked row finds it loaded
# and takes milliseconds: modules (a missing one only costs time) and a few in-process runs of bad
# input that fail before doing anything (they load typer's and pydantic's validation machinery and
# compile the edge-list reader's numba kernels). torch and PyG, which `train` imports before it checks
# its options, come only before the first `train` row: they double the cost of every later fork.
PRELOAD = ("netweave.graph", "netweave.topology", "netweave.scenarios", "netweave.route.plan", "netweave.sim",
           "netweave.sweep", "netweave.repro", "netweave.compare", "netweave.dataplane.demo")
WARM_UP = (["partition", "ring:n=8", "-k", "two"], ["topology", "show", "nosuch"], ["aggsvc", "demo", "--loss", "-1"],
           ["route", "--topology", "star:n=4", "--workers", "0"], ["ina", "ring:n=16", "-n", "0"],
           ["timeslot", "ring:n=8", "--k", "0"], ["repro", "nosuch"], ["graph", "stats", "snap:warm-up.txt"])
PRELOAD_TRAIN = ("netweave.runtime.models", "netweave.runtime.recipe")
WARM_UP_TRAIN = (["train", "er:n=16,m=32,classes=2", "--epochs", "0"],)
_preloaded: set[str] = set()
_command = None  # netweave's click command, built once here (see _child)


def preload(cwd: Path, train: bool = False) -> None:
    """Import what the rows use (see :data:`PRELOAD`, :data:`WARM_UP`, and with ``train`` the ``*_TRAIN``
    ones), once per process; ``cwd``: an empty folder to run the warm-up in."""
    global _command
    key = "train" if train else "base"
    if key in _preloaded:
        return
    _preloaded.add(key)
    if _command is None:
        _command = typer.main.get_command(netweave.cli.app)
    for name in PRELOAD_TRAIN if train else PRELOAD:
        try:
            importlib.import_module(name)
        except ImportError:
            pass
    (cwd / "warm-up.txt").write_text("0 1\n1 2\n2 x\n")
    here = os.getcwd()
    os.chdir(cwd)
    try:
        for argv in WARM_UP_TRAIN if train else WARM_UP:
            with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()), \
                    warnings.catch_warnings():
                warnings.simplefilter("ignore")
                try:
                    netweave.cli.main(argv)
                except BaseException:  # noqa: BLE001 (the error is the point)
                    pass
    finally:
        os.chdir(here)


@dataclass
class Outcome:
    rc: int
    stdout: str
    stderr: str
    seconds: float


def _child(argv: list[str], cwd: Path, out_path: Path, err_path: Path) -> None:
    """In the forked child: cap memory, redirect fds 1 and 2 to files, run the CLI, exit with its status."""
    code = 1
    try:
        os.setpgid(0, 0)  # its own process group: a timeout kills anything it started too
        resource.setrlimit(resource.RLIMIT_AS, (MEMORY_LIMIT, MEMORY_LIMIT))
        os.chdir(cwd)
        for fd, path in ((1, out_path), (2, err_path)):
            target = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
            os.dup2(target, fd)
            os.close(target)
        null = os.open(os.devnull, os.O_RDONLY)
        os.dup2(null, 0)
        os.close(null)
        # The rich consoles (netweave.report.console.out, netweave.progress.console) look up
        # sys.stdout / sys.stderr when they print, so replacing these is enough.
        sys.stdin = open(0, closefd=False)
        sys.stdout = io.TextIOWrapper(io.FileIO(1, "w", closefd=False), encoding="utf-8",
                                      errors="backslashreplace", line_buffering=True)
        sys.stderr = io.TextIOWrapper(io.FileIO(2, "w", closefd=False), encoding="utf-8",
                                      errors="backslashreplace", line_buffering=True)
        os.environ.update(ENV)
        if _command is not None:
            # typer rebuilds the click command tree on every call (about half of a row's time); the
            # child takes the one built in this process before the fork, the same tree.
            build = typer.main.get_command
            typer.main.get_command = lambda app: _command if app is netweave.cli.app else build(app)
        try:
            netweave.cli.main(list(argv))
            code = 0
        except SystemExit as exc:
            if exc.code is None or isinstance(exc.code, int):
                code = exc.code or 0
            else:
                print(exc.code, file=sys.stderr)
                code = 1
        except BaseException:  # what `python -m netweave` would do: a traceback and status 1
            traceback.print_exc()
            code = 1
    except BaseException:
        traceback.print_exc()
    finally:
        for stream in (sys.stdout, sys.stderr):
            try:
                stream.flush()
            except BaseException:
                pass
        os._exit(code)


def run_cli(argv: list[str], cwd: Path, scratch: Path, timeout: float = TIMEOUT_S) -> Outcome:
    """``netweave ARGV`` in a forked child (see :func:`_child`); fails the test if it runs past ``timeout``."""
    out_path, err_path = scratch / "stdout", scratch / "stderr"
    sys.stdout.flush()
    sys.stderr.flush()
    t0 = time.monotonic()
    gc.freeze()  # the child's collector then leaves the inherited objects (and their pages) alone
    try:
        pid = os.fork()
        if pid == 0:  # pragma: no cover (the child)
            _child(argv, cwd, out_path, err_path)
    finally:
        gc.unfreeze()
    status = None
    try:
        exited = os.pidfd_open(pid)  # readable when the child exits: no polling delay
    except (AttributeError, OSError):
        exited = None
    try:
        while time.monotonic() - t0 < timeout:
            done, code = os.waitpid(pid, os.WNOHANG)
            if done:
                status = code
                break
            if exited is not None:
                select.select([exited], [], [], max(0.0, timeout - (time.monotonic() - t0)))
            else:
                time.sleep(0.005)
    finally:
        if exited is not None:
            os.close(exited)
    if status is None:
        _kill_group(pid)
        os.waitpid(pid, 0)
        pytest.fail(f"netweave {shlex.join(argv)} ran past {timeout} s (killed)")
    seconds = time.monotonic() - t0
    _kill_group(pid)  # anything the row left running
    rc = os.waitstatus_to_exitcode(status)
    read = lambda p: p.read_text(encoding="utf-8", errors="backslashreplace") if p.exists() else ""  # noqa: E731
    return Outcome(rc, read(out_path), read(err_path), seconds)


def _kill_group(pid: int) -> None:
    try:
        os.killpg(pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


def tree(path: Path) -> set[str]:
    """Every file and folder under ``path`` (relative names)."""
    return {str(p.relative_to(path)) for p in path.rglob("*")}


# -- the input files -------------------------------------------------------------------------------

GARBAGE = bytes((i * 97 + 13) % 256 for i in range(512))  # binary, not UTF-8, no structure


def _npz(path: Path, **arrays) -> None:
    np.savez(path, **arrays)


def _truncate(path: Path) -> None:
    data = path.read_bytes()
    path.write_bytes(data[: len(data) // 2])


TOPO_OK_NODES = "  - {name: H0, kind: host}\n  - {name: H1, kind: host}\n  - {name: S0, kind: switch}\n"
TOPO_OK_LINKS = "  - {a: H0, b: S0, gbps: 100}\n  - {a: H1, b: S0, gbps: 100}\n"


def _topo(nodes: str = TOPO_OK_NODES, links: str = TOPO_OK_LINKS, head: str = "") -> str:
    return f"{head}nodes:\n{nodes}links:\n{links}"


TEXT_FILES: dict[str, str | bytes] = {
    # topology YAML
    "t_empty.yaml": "",
    "t_list.yaml": "- a\n- b\n",
    "t_scalar.yaml": "just a string\n",
    "t_no_links.yaml": "nodes:\n" + TOPO_OK_NODES,
    "t_no_nodes.yaml": "links:\n" + TOPO_OK_LINKS,
    "t_nodes_mapping.yaml": "nodes: {H0: host}\nlinks: []\n",
    "t_links_scalar.yaml": "nodes: []\nlinks: 3\n",
    "t_node_scalar.yaml": "nodes:\n  - H0\nlinks: []\n",
    "t_node_unknown_key.yaml": _topo(nodes="  - {name: H0, kind: host, colour: red}\n"),
    "t_node_no_kind.yaml": _topo(nodes="  - {name: H0}\n"),
    "t_node_no_name.yaml": _topo(nodes="  - {kind: host}\n"),
    "t_node_bad_kind.yaml": _topo(nodes=TOPO_OK_NODES + "  - {name: R0, kind: router}\n"),
    "t_dup_names.yaml": _topo(nodes=TOPO_OK_NODES + "  - {name: H0, kind: host}\n"),
    "t_top_unknown_key.yaml": _topo(head="name: x\nversion: 2\n"),
    "t_link_unknown_node.yaml": _topo(links=TOPO_OK_LINKS + "  - {a: H0, b: NOPE, gbps: 100}\n"),
    "t_link_no_gbps.yaml": _topo(links="  - {a: H0, b: S0}\n"),
    "t_link_neg_gbps.yaml": _topo(links="  - {a: H0, b: S0, gbps: -10}\n  - {a: H1, b: S0, gbps: 100}\n"),
    "t_link_zero_gbps.yaml": _topo(links="  - {a: H0, b: S0, gbps: 0}\n  - {a: H1, b: S0, gbps: 100}\n"),
    "t_link_nan_gbps.yaml": _topo(links="  - {a: H0, b: S0, gbps: .nan}\n  - {a: H1, b: S0, gbps: 100}\n"),
    "t_link_inf_gbps.yaml": _topo(links="  - {a: H0, b: S0, gbps: .inf}\n  - {a: H1, b: S0, gbps: 100}\n"),
    "t_link_str_gbps.yaml": _topo(links="  - {a: H0, b: S0, gbps: fast}\n  - {a: H1, b: S0, gbps: 100}\n"),
    "t_link_bool_gbps.yaml": _topo(links="  - {a: H0, b: S0, gbps: true}\n  - {a: H1, b: S0, gbps: 100}\n"),
    "t_link_neg_latency.yaml": _topo(links="  - {a: H0, b: S0, gbps: 100, latency_us: -1}\n  - {a: H1, b: S0, gbps: 100}\n"),
    "t_link_str_latency.yaml": _topo(links="  - {a: H0, b: S0, gbps: 100, latency_us: slow}\n  - {a: H1, b: S0, gbps: 100}\n"),
    "t_link_self.yaml": _topo(links=TOPO_OK_LINKS + "  - {a: S0, b: S0, gbps: 100}\n"),
    "t_link_unknown_key.yaml": _topo(links="  - {a: H0, b: S0, gbps: 100, mtu: 9000}\n  - {a: H1, b: S0, gbps: 100}\n"),
    "t_link_scalar.yaml": _topo(links="  - H0-S0\n"),
    "t_link_bad_pipeline.yaml": _topo(links="  - {a: H0, b: S0, gbps: 100, b_pipeline: 7}\n  - {a: H1, b: S0, gbps: 100}\n"),
    "t_link_str_pipeline.yaml": _topo(links="  - {a: H0, b: S0, gbps: 100, b_pipeline: first}\n  - {a: H1, b: S0, gbps: 100}\n"),
    "t_bad_memory.yaml": _topo(nodes="  - {name: H0, kind: host}\n  - {name: H1, kind: host}\n  - {name: S0, kind: switch, ina: true, aggregator_memory: lots}\n"),
    "t_neg_memory.yaml": _topo(nodes="  - {name: H0, kind: host}\n  - {name: H1, kind: host}\n  - {name: S0, kind: switch, ina: true, aggregator_memory: -5}\n"),
    "t_caps_list.yaml": _topo(nodes="  - {name: H0, kind: host}\n  - {name: H1, kind: host}\n  - {name: S0, kind: switch, ina: true, ina_capacity_gbps: [1, 2]}\n"),
    "t_caps_str.yaml": _topo(nodes="  - {name: H0, kind: host}\n  - {name: H1, kind: host}\n  - {name: S0, kind: switch, ina: true, ina_capacity_gbps: {fp16: lots}}\n"),
    "t_caps_neg.yaml": _topo(nodes="  - {name: H0, kind: host}\n  - {name: H1, kind: host}\n  - {name: S0, kind: switch, ina: true, ina_capacity_gbps: {fp16: -1}}\n"),
    "t_caps_unknown.yaml": _topo(nodes="  - {name: H0, kind: host}\n  - {name: H1, kind: host}\n  - {name: S0, kind: switch, ina: true, ina_capacity_gbps: {fp7: 5}}\n"),
    "t_pipelines_str.yaml": _topo(nodes="  - {name: H0, kind: host}\n  - {name: H1, kind: host}\n  - {name: S0, kind: switch, ina: true, pipelines: many}\n"),
    "t_pipelines_zero.yaml": _topo(nodes="  - {name: H0, kind: host}\n  - {name: H1, kind: host}\n  - {name: S0, kind: switch, ina: true, pipelines: 0}\n"),
    "t_host_ina.yaml": _topo(nodes="  - {name: H0, kind: host, ina: true}\n  - {name: H1, kind: host}\n  - {name: S0, kind: switch}\n"),
    "t_syntax.yaml": "nodes: [\n  {name: H0, kind: host\nlinks: []\n",
    "t_tab.yaml": "nodes:\n\t- {name: H0, kind: host}\nlinks: []\n",
    "t_alias.yaml": "base: &h {kind: host}\nnodes:\n  - {name: H0, <<: *h}\nlinks: []\n",
    "t_binary.yaml": GARBAGE,
    "t_latin1.yaml": b"name: caf\xe9\nnodes: []\nlinks: []\n",
    "t_nul.yaml": "nodes: []\x00\nlinks: []\n",
    "t_tag.yaml": "nodes: !!python/object/apply:os.system ['true']\nlinks: []\n",
    "t_disconnected.yaml": _topo(nodes=TOPO_OK_NODES + "  - {name: H9, kind: host}\n"),
    "t_dup_key.yaml": _topo() + "nodes:\n  - {name: H5, kind: host}\n",
    "t_dup_node_key.yaml": _topo(nodes="  - {name: H0, kind: host, kind: switch}\n"),
    "t_memory_inf.yaml": _topo(nodes="  - {name: H0, kind: host}\n  - {name: H1, kind: host}\n  - {name: S0, kind: switch, ina: true, aggregator_memory: .inf}\n"),
    "t_pipelines_inf.yaml": _topo(nodes="  - {name: H0, kind: host}\n  - {name: H1, kind: host}\n  - {name: S0, kind: switch, ina: true, pipelines: .inf}\n"),
    "topology.txt": "not a topology\n",
    # jobs YAML (route --jobs), on leafspine:leaves=2,spines=1,hosts=2,ina=1 (hosts H0-H3, switches L0 L1 S0)
    "j_empty.yaml": "",
    "j_list.yaml": "- {ps: H0, workers: [H1]}\n",
    "j_no_jobs.yaml": "tasks: []\n",
    "j_jobs_scalar.yaml": "jobs: 3\n",
    "j_jobs_empty.yaml": "jobs: []\n",
    "j_no_tasks.yaml": "jobs:\n  - {name: J0, weight: 1}\n",
    "j_task_no_ps.yaml": "jobs:\n  - {name: J0, tasks: [{workers: [H1, H2]}]}\n",
    "j_task_workers_scalar.yaml": "jobs:\n  - {name: J0, tasks: [{ps: H0, workers: H1}]}\n",
    "j_unknown_host.yaml": "jobs:\n  - {name: J0, tasks: [{ps: H0, workers: [H1, H77]}]}\n",
    "j_unknown_ps.yaml": "jobs:\n  - {name: J0, tasks: [{ps: H99, workers: [H1, H2]}]}\n",
    "j_ps_switch.yaml": "jobs:\n  - {name: J0, tasks: [{ps: L0, workers: [H1, H2]}]}\n",
    "j_worker_switch.yaml": "jobs:\n  - {name: J0, tasks: [{ps: H0, workers: [H1, S0]}]}\n",
    "j_worker_twice.yaml": "jobs:\n  - {name: J0, tasks: [{ps: H0, workers: [H1, H1]}]}\n",
    "j_ps_is_worker.yaml": "jobs:\n  - {name: J0, tasks: [{ps: H0, workers: [H0, H1]}]}\n",
    "j_no_workers.yaml": "jobs:\n  - {name: J0, tasks: [{ps: H0, workers: []}]}\n",
    "j_weight_neg.yaml": "jobs:\n  - {name: J0, weight: -1, tasks: [{ps: H0, workers: [H1, H2]}]}\n",
    "j_weight_zero.yaml": "jobs:\n  - {name: J0, weight: 0, tasks: [{ps: H0, workers: [H1, H2]}]}\n",
    "j_precision_unknown.yaml": "jobs:\n  - {name: J0, tasks: [{ps: H0, workers: [H1, H2], precision: fp7}]}\n",
    "j_syntax.yaml": "jobs: [\n",
    "j_binary.yaml": GARBAGE,
    "j_weight_str.yaml": "jobs:\n  - {name: J0, weight: heavy, tasks: [{ps: H0, workers: [H1, H2]}]}\n",
    "j_weight_nan.yaml": "jobs:\n  - {name: J0, weight: .nan, tasks: [{ps: H0, workers: [H1, H2]}]}\n",
    "j_ps_list.yaml": "jobs:\n  - {name: J0, tasks: [{ps: [H0], workers: [H1, H2]}]}\n",
    "j_worker_mapping.yaml": "jobs:\n  - {name: J0, tasks: [{ps: H0, workers: [{H1: 1}, H2]}]}\n",
    "j_task_unknown_key.yaml": "jobs:\n  - {name: J0, tasks: [{ps: H0, wrokers: [H1], workers: [H1, H2]}]}\n",
    "j_job_unknown_key.yaml": "jobs:\n  - {name: J0, priority: 2, tasks: [{ps: H0, workers: [H1, H2]}]}\n",
    "j_precision_list.yaml": "jobs:\n  - {name: J0, tasks: [{ps: H0, workers: [H1, H2], precision: [fp8]}]}\n",
    "j_worker_precision_stray.yaml": "jobs:\n  - {name: J0, tasks: [{ps: H0, workers: [H1, H2], worker_precision: {H3: fp8}}]}\n",
    # routes JSON (route --evaluate), for the task J0.T0 (PS H0, workers H2 H3) of --workers 2
    "r_empty.json": "",
    "r_garbage.json": "{not json",
    "r_list.json": "[1, 2, 3]",
    "r_no_tasks.json": '{"algorithm": "ecmp"}',
    "r_tasks_list.json": '{"tasks": [1, 2]}',
    "r_binary.json": GARBAGE,
    "r_deep.json": "[" * 100_000 + "]" * 100_000,
    "r_loop.json": json.dumps({"tasks": {"J0.T0": {"ps": "H0", "paths": {
        "H2": ["H2", "L1", "S0", "L0", "H0"], "H3": ["H3", "L1", "S0", "L1", "S0", "L0", "H0"]}}}}),
    "r_unknown_ps.json": json.dumps({"tasks": {"J0.T0": {"ps": "H42", "paths": {
        "H2": ["H2", "L1", "S0", "L0", "H42"], "H3": ["H3", "L1", "S0", "L0", "H42"]}}}}),
    "r_unknown_node.json": json.dumps({"tasks": {"J0.T0": {"ps": "H0", "paths": {
        "H2": ["H2", "L1", "X9", "L0", "H0"], "H3": ["H3", "L1", "S0", "L0", "H0"]}}}}),
    "r_no_link.json": json.dumps({"tasks": {"J0.T0": {"ps": "H0", "paths": {
        "H2": ["H2", "L0", "H0"], "H3": ["H3", "L1", "S0", "L0", "H0"]}}}}),
    "r_wrong_end.json": json.dumps({"tasks": {"J0.T0": {"ps": "H0", "paths": {
        "H2": ["H2", "L1", "S0", "L0", "H1"], "H3": ["H3", "L1", "S0", "L0", "H0"]}}}}),
    "r_loop_host.json": json.dumps({"tasks": {"J0.T0": {"ps": "H0", "paths": {
        "H2": ["H2", "L1", "H3", "L1", "S0", "L0", "H0"], "H3": ["H3", "L1", "S0", "L0", "H0"]}}}}),
    "r_paths_scalar.json": json.dumps({"tasks": {"J0.T0": {"ps": "H0", "paths": "H2"}}}),
    # sweep YAML
    "s_empty.yaml": "",
    "s_list.yaml": "- kind: ina\n",
    "s_no_kind.yaml": "name: x\ngrid: {workers: [2]}\n",
    "s_bad_kind.yaml": "kind: train\ngrid: {workers: [2]}\n",
    "s_no_grid.yaml": "kind: ina\n",
    "s_grid_list.yaml": "kind: ina\ngrid: [1, 2]\n",
    "s_grid_scalar_value.yaml": "kind: ina\ngrid: {workers: 4}\n",
    "s_grid_empty_value.yaml": "kind: ina\ngrid: {workers: []}\n",
    "s_fixed_list.yaml": "kind: ina\ngrid: {workers: [2]}\nfixed: [1]\n",
    "s_unknown_field.yaml": "kind: ina\ngrid: {wrokers: [2]}\n",
    "s_bad_value.yaml": "kind: ina\ngrid: {workers: [-2]}\nfixed: {dataset: 'ring:n=16'}\n",
    "s_bad_dataset.yaml": "kind: partition\ngrid: {parts: [2]}\nfixed: {dataset: 'nosuch'}\n",
    "s_route_no_workers.yaml": "kind: route\ngrid: {algorithm: [ecmp]}\nfixed: {topology: 'leafspine:leaves=2,spines=1,hosts=2,ina=1'}\n",
    "s_route_bad_algorithm.yaml": "kind: route\ngrid: {algorithm: [fastest]}\nfixed: {topology: 'leafspine:leaves=2,spines=1,hosts=2,ina=1', workers: 2}\n",
    "s_syntax.yaml": "kind: ina\ngrid: {workers: [2\n",
    "s_binary.yaml": GARBAGE,
    "s_alias.yaml": "w: &w [2]\nkind: ina\ngrid: {workers: *w}\n",
    "s_ok.yaml": "kind: partition\ngrid: {parts: [2]}\nfixed: {dataset: 'ring:n=8', method: range}\n",
    "s_bad_method.yaml": "kind: partition\ngrid: {method: [spectral]}\nfixed: {dataset: 'ring:n=8', parts: 2}\n",
    "s_precision_bad_mix.yaml": "kind: precision\ngrid: {algorithm: [pahina]}\nfixed: {topology: 'leafspine:leaves=2,spines=1,hosts=2,ina=1', workers: 2, precisions: {fp7: 1}}\n",
    "s_workers_str.yaml": "kind: ina\ngrid: {workers: [two]}\n",
    "s_parts_list.yaml": "kind: partition\ngrid: {parts: [[2, 3]]}\nfixed: {dataset: 'ring:n=8'}\n",
    "s_workers_bool.yaml": "kind: route\ngrid: {workers: [true]}\nfixed: {topology: 'star:n=4'}\n",
    "s_loss_str.yaml": "kind: ina\ngrid: {loss: [lots]}\n",
    "s_gbps_nan.yaml": "kind: ina\ngrid: {gbps: [.nan]}\n",
    "s_precisions_str_weight.yaml": "kind: precision\ngrid: {precisions: [{fp8: x}]}\nfixed: {topology: 'star:n=4', workers: 2}\n",
    "s_unknown_top_key.yaml": "kind: ina\ngrid: {workers: [2]}\nworkers: 4\n",
    "s_dup_key.yaml": "kind: ina\ngrid: {workers: [2], workers: [3]}\n",
    "s_accelerate_pahina.yaml": "kind: precision\ngrid: {seed: [0]}\nfixed: {topology: 'star:n=4', workers: 2, accelerations: app}\n",
    # SNAP edge lists
    "e_empty.txt": "",
    "e_comments.txt": "# only a comment\n",
    "e_one_column.txt": "0\n1\n",
    "e_words.txt": "alice bob\n",
    "e_float.txt": "0 1\n1.5 2\n",
    "e_binary.txt": GARBAGE,
    "e_not_gzip.txt.gz": "0 1\n1 2\n",
    "e_csv_header_only.csv": "src,dst\n",
    # issue 29: node names that would reach `ip -batch` (a newline adds a command), routes of the wrong shape,
    # a sweep grid of 10⁹ cases in 17 kB
    "t_name_newline.yaml": _topo(nodes='  - {name: H0, kind: host}\n  - {name: "H1\\nnetns exec nwtx-n0 touch /tmp/pwned", kind: host}\n  - {name: S0, kind: switch}\n'),
    "t_name_nul.yaml": _topo(nodes='  - {name: H0, kind: host}\n  - {name: "H1\\0", kind: host}\n  - {name: S0, kind: switch}\n'),
    "t_name_space.yaml": _topo(nodes='  - {name: H0, kind: host}\n  - {name: "H1 type veth", kind: host}\n  - {name: S0, kind: switch}\n'),
    "r_task_string.json": json.dumps({"tasks": {"T": "H0"}}),
    "r_paths_list.json": json.dumps({"tasks": {"T": {"ps": "H0", "paths": ["H1", "S0", "H0"]}}}),
    "r_no_paths.json": json.dumps({"tasks": {"T": {"ps": "H0"}}}),
    "r_path_string.json": json.dumps({"tasks": {"T": {"ps": "H0", "paths": {"H1": "H1 S0 H0"}}}}),
    "s_huge_grid.yaml": "kind: ina\ngrid:\n" + "".join(f"  {k}: [{', '.join(map(str, range(1, 1001)))}]\n"
                                                       for k in ("seed", "workers", "hidden")),
}


def make_inputs(d: Path) -> None:
    """Every input file of the table, in ``d``."""
    for name, content in TEXT_FILES.items():
        (d / name).write_bytes(content if isinstance(content, bytes) else content.encode())
    for name in ("dir.yaml", "dir.npz", "dir.json", "pl_empty", "musae_empty"):
        (d / name).mkdir()
    (d / "e_empty.txt.gz").write_bytes(gzip.compress(b""))
    # .npz archives: partitions (parts of ring:n=8), plans, graphs
    (d / "empty.npz").write_bytes(b"")
    (d / "garbage.npz").write_bytes(GARBAGE)
    _npz(d / "parts_ok.npz", parts=np.array([0, 0, 0, 0, 1, 1, 1, 1], np.int32), num_parts=np.int64(2), method=np.str_("range"))
    _npz(d / "parts_trunc.npz", parts=np.arange(2000, dtype=np.int32) % 2, num_parts=np.int64(2), method=np.str_("range"))
    _truncate(d / "parts_trunc.npz")
    _npz(d / "parts_nokey.npz", labels=np.zeros(8, np.int32))
    _npz(d / "parts_float.npz", parts=np.full(8, 0.5))
    _npz(d / "parts_negative.npz", parts=np.array([0, 0, 0, -1, 1, 1, 1, 1], np.int32))
    _npz(d / "parts_short.npz", parts=np.array([0, 1, 0], np.int32))
    _npz(d / "parts_2d.npz", parts=np.zeros((8, 2), np.int32))
    _npz(d / "parts_three.npz", parts=np.array([0, 0, 0, 1, 1, 1, 2, 2], np.int32))
    _npz(d / "parts_object.npz", parts=np.array([0, "x"] * 4, dtype=object))
    _npz(d / "plan_nokey.npz", parts=np.zeros(8, np.int32))
    plan = dict(hop_stage=np.ones(4, np.int16), hop_src=np.array([0, 0, 1, 1], np.int32),
                hop_dst=np.array([1, 1, 0, 0], np.int32), hop_vertex=np.array([0, 3, 4, 7]),
                parts=np.array([0, 0, 0, 0, 1, 1, 1, 1], np.int32), feature_bytes=np.int64(512),
                workers=np.array(["H0", "H1"]), planner=np.str_("spst"))  # ring:n=8 on star:n=2, valid
    _npz(d / "plan_ok.npz", **plan)
    _npz(d / "plan_100k_workers.npz", **(plan | {"workers": np.array([f"H{i}" for i in range(100_000)])}))
    _npz(d / "plan_bad_hop.npz", **(plan | {"hop_dst": np.array([1, 1, 0, 5], np.int32)}))
    _npz(d / "plan_bad_vertex.npz", **(plan | {"hop_vertex": np.array([0, 3, 4, 99])}))
    _npz(d / "plan_neg_bytes.npz", **(plan | {"feature_bytes": np.int64(-1)}))
    _npz(d / "plan_trunc.npz", hop_stage=np.zeros(4000, np.int16), hop_src=np.zeros(4000, np.int32),
         hop_dst=np.ones(4000, np.int32), hop_vertex=np.arange(4000), parts=np.zeros(8, np.int32),
         feature_bytes=np.int64(512), workers=np.array(["H0", "H1"]), planner=np.str_("spst"))
    _truncate(d / "plan_trunc.npz")
    _npz(d / "graph_nokey.npz", something=np.zeros(3))
    with zipfile.ZipFile(d / "notnpy.npz", "w") as z:
        z.writestr("parts.npy", b"this is not an npy member")
    for name in ("fifo.yaml", "fifo.json"):  # opening one for reading waits for a writer that never comes
        os.mkfifo(d / name)


# -- the table -------------------------------------------------------------------------------------
# (id, argv (shell words; {d} is the inputs folder), the exact stderr line ({d} likewise; {GB}: see matches())).
# Left out for now: output paths (--out/--timeline/--plot/--dump-logits/--report), `kernels bench`, `train
# --device cuda`, anything that starts training processes or takes more than ~2 s, and the inputs of issue 17
# that still end in a traceback, exit 0 or a misleading line (they belong to their fixes).

CASES: list[tuple[str, str, str]] = [
    # -- top level: unknown commands and options
    ("top-unknown-command", "bogus",
     "netweave: error: No such command 'bogus'. (see `netweave --help`)"),
    ("top-unknown-option", "--bogus",
     "netweave: error: No such option: --bogus (see `netweave --help`)"),
    # -- datasets
    ("datasets-extra-argument", "datasets cora",
     "netweave: error: Got unexpected extra argument(s) (cora) (see `netweave datasets --help`)"),
    ("datasets-unknown-option", "datasets --bogus",
     "netweave: error: No such option: --bogus (see `netweave datasets --help`)"),
    ("datasets-json-value", "datasets --json=1",
     "netweave: error: Option '--json' does not take a value. (see `netweave datasets --help`)"),
    # -- graph stats: dataset specs (bundled names, generators, files)
    ("graph-unknown-subcommand", "graph nodes",
     "netweave: error: No such command 'nodes'. (see `netweave graph --help`)"),
    ("graph-stats-missing-dataset", "graph stats",
     "netweave: error: Missing argument 'dataset'. (see `netweave graph stats --help`)"),
    ("graph-stats-two-datasets", "graph stats cora ring:n=5",
     "netweave: error: Got unexpected extra argument(s) (ring:n=5) (see `netweave graph stats --help`)"),
    ("graph-stats-unknown-option", "graph stats cora --parts 2",
     "netweave: error: No such option: --parts (see `netweave graph stats --help`)"),
    ("dataset-unknown-name", "graph stats nosuch",
     "netweave: error: unknown dataset 'nosuch': not bundled (cora), not a generator (rmat, er, star, ring, reddit-like, products-like) and no such file; run `netweave datasets` for the accepted specs"),
    ("dataset-unknown-prefix", "graph stats foo:bar",
     "netweave: error: unknown dataset 'foo:bar': not bundled (cora), not a generator (rmat, er, star, ring, reddit-like, products-like) and no such file; run `netweave datasets` for the accepted specs"),
    ("dataset-unknown-generator-like", "graph stats grid:n=5",
     "netweave: error: unknown dataset 'grid:n=5': not bundled (cora), not a generator (rmat, er, star, ring, reddit-like, products-like) and no such file; run `netweave datasets` for the accepted specs"),
    ("dataset-citeseer-not-bundled", "graph stats citeseer",
     "netweave: error: unknown dataset 'citeseer': not bundled (cora), not a generator (rmat, er, star, ring, reddit-like, products-like) and no such file; run `netweave datasets` for the accepted specs"),
    ("dataset-missing-file", "graph stats {d}/missing.txt",
     "netweave: error: unknown dataset '{d}/missing.txt': not bundled (cora), not a generator (rmat, er, star, ring, reddit-like, products-like) and no such file; run `netweave datasets` for the accepted specs"),
    ("dataset-cora-with-params", "graph stats cora:n=5",
     "netweave: error: unknown dataset 'cora:n=5': not bundled (cora), not a generator (rmat, er, star, ring, reddit-like, products-like) and no such file; run `netweave datasets` for the accepted specs"),
    ("rmat-no-params", "graph stats rmat:",
     "netweave: error: 'rmat:' needs the parameter n=…"),
    ("rmat-bare-name", "graph stats rmat",
     "netweave: error: 'rmat' needs the parameter n=…"),
    ("rmat-missing-m", "graph stats rmat:n=100",
     "netweave: error: 'rmat:n=100' needs the parameter m=…"),
    ("rmat-missing-n", "graph stats rmat:m=100",
     "netweave: error: 'rmat:m=100' needs the parameter n=…"),
    ("rmat-n-negative", "graph stats rmat:n=-5,m=10",
     "netweave: error: 'rmat:n=-5,m=10': n=-5 must be a positive number of vertices"),
    ("rmat-n-zero", "graph stats rmat:n=0,m=10",
     "netweave: error: 'rmat:n=0,m=10': n=0 must be a positive number of vertices"),
    ("rmat-m-negative", "graph stats rmat:n=100,m=-1",
     "netweave: error: 'rmat:n=100,m=-1': m=-1 must be non-negative"),
    ("rmat-n-not-number", "graph stats rmat:n=abc,m=10",
     "netweave: error: parameter n='abc' in 'rmat:n=abc,m=10' is not a valid int"),
    ("rmat-n-fraction", "graph stats rmat:n=1.5,m=10",
     "netweave: error: parameter n='1.5' in 'rmat:n=1.5,m=10' is not a valid int"),
    ("rmat-n-nan", "graph stats rmat:n=nan,m=10",
     "netweave: error: parameter n='nan' in 'rmat:n=nan,m=10' is not a valid int"),
    ("rmat-n-huge", "graph stats rmat:n=1e30,m=10",
     "netweave: error: rmat:n=1000000000000000019884624838656,m=10: needs about 24,000,000,000,000,004,194,304.0 GB of memory but only {GB} GB is available; lower n or m, or run on a machine with more memory"),
    ("rmat-m-huge", "graph stats rmat:n=1000,m=100000000000",
     "netweave: error: rmat: m=100000000000 edges impossible on n=1000 vertices (at most 499500)"),
    ("rmat-unknown-param", "graph stats rmat:n=100,m=10,foo=1",
     "netweave: error: unknown parameter 'foo' in 'rmat:n=100,m=10,foo=1'; allowed: classes, feat, m, n, seed"),
    ("rmat-seed-not-number", "graph stats rmat:n=100,m=10,seed=x",
     "netweave: error: parameter seed='x' in 'rmat:n=100,m=10,seed=x' is not a valid int"),
    ("rmat-feat-negative", "graph stats rmat:n=100,m=10,feat=-1",
     "netweave: error: 'rmat:n=100,m=10,feat=-1': feat=-1 must be non-negative"),
    ("rmat-param-no-value", "graph stats rmat:n=,m=10",
     "netweave: error: bad parameter 'n=' in 'rmat:n=,m=10': write parameters as key=value separated by commas"),
    ("rmat-param-no-key", "graph stats rmat:=5,m=10",
     "netweave: error: bad parameter '=5' in 'rmat:=5,m=10': write parameters as key=value separated by commas"),
    ("rmat-param-no-equals", "graph stats rmat:n,m=10",
     "netweave: error: bad parameter 'n' in 'rmat:n,m=10': write parameters as key=value separated by commas"),
    ("rmat-n-inf", "graph stats rmat:n=inf,m=10",
     "netweave: error: parameter n='inf' in 'rmat:n=inf,m=10' is not a valid int"),
    ("rmat-m-minus-inf", "graph stats rmat:n=100,m=-inf",
     "netweave: error: parameter m='-inf' in 'rmat:n=100,m=-inf' is not a valid int"),
    ("er-n-inf", "graph stats er:n=inf,m=10",
     "netweave: error: parameter n='inf' in 'er:n=inf,m=10' is not a valid int"),
    ("rmat-classes-zero", "graph stats rmat:n=100,m=10,classes=0",
     "netweave: error: 'rmat:n=100,m=10,classes=0': classes=0 must be at least 2 (labels need two classes or more); leave classes out for a graph without labels"),
    ("rmat-classes-one", "graph stats rmat:n=100,m=10,classes=1",
     "netweave: error: 'rmat:n=100,m=10,classes=1': classes=1 must be at least 2 (labels need two classes or more); leave classes out for a graph without labels"),
    ("ring-classes-negative", "graph stats ring:n=10,classes=-1",
     "netweave: error: 'ring:n=10,classes=-1': classes=-1 must be at least 2 (labels need two classes or more); leave classes out for a graph without labels"),
    ("rmat-param-twice", "graph stats rmat:n=100,m=10,n=200",
     "netweave: error: parameter 'n' given twice in 'rmat:n=100,m=10,n=200' (n=100 and n=200); give it once"),
    ("dataset-empty", "graph stats ''",
     "netweave: error: an empty dataset spec; give a bundled name (cora), a generator such as rmat:n=1000,m=5000 or a file; run `netweave datasets` for the accepted specs"),
    ("er-missing-m", "graph stats er:n=100",
     "netweave: error: 'er:n=100' needs the parameter m=…"),
    ("er-n-negative", "graph stats er:n=-5,m=10",
     "netweave: error: 'er:n=-5,m=10': n=-5 must be a positive number of vertices"),
    ("er-m-negative", "graph stats er:n=100,m=-1",
     "netweave: error: 'er:n=100,m=-1': m=-1 must be non-negative"),
    ("er-n-huge", "graph stats er:n=1e30,m=10",
     "netweave: error: er:n=1000000000000000019884624838656,m=10: needs about 24,000,000,000,000,004,194,304.0 GB of memory but only {GB} GB is available; lower n or m, or run on a machine with more memory"),
    ("rmat-n-one", "graph stats rmat:n=1,m=10",
     "netweave: error: rmat: m=10 edges impossible on n=1 vertices (at most 0)"),
    ("er-m-beyond-simple-graph", "graph stats er:n=4,m=100",
     "netweave: error: er: m=100 edges impossible on n=4 vertices (at most 6)"),
    ("star-no-params", "graph stats star:",
     "netweave: error: 'star:' needs the parameter n=…"),
    ("star-n-zero", "graph stats star:n=0",
     "netweave: error: 'star:n=0': n=0 must be a positive number of vertices"),
    ("star-n-negative", "graph stats star:n=-1",
     "netweave: error: 'star:n=-1': n=-1 must be a positive number of vertices"),
    ("star-n-not-number", "graph stats star:n=x",
     "netweave: error: parameter n='x' in 'star:n=x' is not a valid int"),
    ("star-n-huge", "graph stats star:n=1e12",
     "netweave: error: star:n=1000000000000: needs about 104,000.0 GB of memory but only {GB} GB is available; lower n, or run on a machine with more memory"),
    ("star-unknown-param", "graph stats star:n=5,m=3",
     "netweave: error: unknown parameter 'm' in 'star:n=5,m=3'; allowed: classes, feat, n, seed"),
    ("ring-n-zero", "graph stats ring:n=0",
     "netweave: error: 'ring:n=0': n=0 must be a positive number of vertices"),
    ("ring-n-negative", "graph stats ring:n=-1",
     "netweave: error: 'ring:n=-1': n=-1 must be a positive number of vertices"),
    ("ring-n-huge", "graph stats ring:n=1e12",
     "netweave: error: ring:n=1000000000000: needs about 104,000.0 GB of memory but only {GB} GB is available; lower n, or run on a machine with more memory"),
    ("reddit-like-no-params", "graph stats reddit-like:",
     "netweave: error: reddit-like:scale=1: needs about 3.9 GB of memory but only {GB} GB is available; lower scale or pass feat=0, or run on a machine with more memory"),
    ("reddit-like-scale-zero", "graph stats reddit-like:scale=0",
     "netweave: error: 'reddit-like:scale=0': scale=0 must be positive, e.g. scale=0.1"),
    ("reddit-like-scale-negative", "graph stats reddit-like:scale=-1",
     "netweave: error: 'reddit-like:scale=-1': scale=-1 must be positive, e.g. scale=0.1"),
    ("reddit-like-scale-not-number", "graph stats reddit-like:scale=abc",
     "netweave: error: parameter scale='abc' in 'reddit-like:scale=abc' is not a valid float"),
    ("reddit-like-scale-nan", "graph stats reddit-like:scale=nan",
     "netweave: error: parameter scale='nan' in 'reddit-like:scale=nan' must be a finite number (not nan or inf), e.g. scale=1"),
    ("reddit-like-scale-inf", "graph stats reddit-like:scale=inf",
     "netweave: error: parameter scale='inf' in 'reddit-like:scale=inf' must be a finite number (not nan or inf), e.g. scale=1"),
    ("reddit-like-unknown-param", "graph stats reddit-like:scale=0.001,classes=3",
     "netweave: error: unknown parameter 'classes' in 'reddit-like:scale=0.001,classes=3'; allowed: feat, scale, seed"),
    ("products-like-no-params", "graph stats products-like:",
     "netweave: error: products-like:scale=1: needs about 5.1 GB of memory but only {GB} GB is available; lower scale or pass feat=0, or run on a machine with more memory"),
    ("products-like-scale-zero", "graph stats products-like:scale=0",
     "netweave: error: 'products-like:scale=0': scale=0 must be positive, e.g. scale=0.1"),
    ("products-like-scale-nan", "graph stats products-like:scale=nan",
     "netweave: error: parameter scale='nan' in 'products-like:scale=nan' must be a finite number (not nan or inf), e.g. scale=1"),
    ("products-like-scale-huge", "graph stats products-like:scale=1e9",
     "netweave: error: products-like: scale=1000000000.0 must be in (0, 4]"),
    ("npz-missing", "graph stats npz:{d}/missing.npz",
     "netweave: error: {d}/missing.npz: no such file"),
    ("npz-directory", "graph stats npz:{d}/dir.npz",
     "netweave: error: {d}/dir.npz: not a regular file; expected an .npz archive"),
    ("npz-empty", "graph stats npz:{d}/empty.npz",
     "netweave: error: {d}/empty.npz: not a readable .npz archive (no zip header)"),
    ("npz-garbage", "graph stats npz:{d}/garbage.npz",
     "netweave: error: {d}/garbage.npz: not a readable .npz archive (no zip header)"),
    ("npz-no-graph-arrays", "graph stats npz:{d}/graph_nokey.npz",
     "netweave: error: {d}/graph_nokey.npz: no adjacency in this .npz (keys: something); expected 'adj_matrix' or 'adj_data/adj_indices/adj_indptr/adj_shape' (gnn-benchmark format)"),
    ("npz-partition-not-graph", "graph stats {d}/parts_ok.npz",
     "netweave: error: {d}/parts_ok.npz: no adjacency in this .npz (keys: method, num_parts, parts); expected 'adj_matrix' or 'adj_data/adj_indices/adj_indptr/adj_shape' (gnn-benchmark format)"),
    ("npz-member-not-npy", "graph stats {d}/notnpy.npz",
     "netweave: error: {d}/notnpy.npz: no adjacency in this .npz (keys: parts); expected 'adj_matrix' or 'adj_data/adj_indices/adj_indptr/adj_shape' (gnn-benchmark format)"),
    ("snap-missing", "graph stats snap:{d}/missing.txt",
     "netweave: error: {d}/missing.txt: no such file"),
    ("snap-empty", "graph stats snap:{d}/e_empty.txt",
     "netweave: error: {d}/e_empty.txt: no edges found (only comments or blank lines)"),
    ("snap-comments-only", "graph stats snap:{d}/e_comments.txt",
     "netweave: error: {d}/e_comments.txt: no edges found (only comments or blank lines)"),
    ("snap-one-column", "graph stats snap:{d}/e_one_column.txt",
     "netweave: error: {d}/e_one_column.txt, line 1: '0' has fewer than two ids; an edge list needs 'src dst' integer pairs per line"),
    ("snap-float-id", "graph stats snap:{d}/e_float.txt",
     "netweave: error: {d}/e_float.txt, line 2: '1.5 2' is not an integer vertex id; an edge list needs 'src dst' integer pairs per line"),
    ("snap-binary", "graph stats snap:{d}/e_binary.txt",
     "netweave: error: {d}/e_binary.txt, line 2: 'k\\xcc-\\x8e\\xefP\\xb1\\x12s\\xd45\\x96\\xf7X\\xb9\\x1a{\\xdc=\\x9e\\xff`\\xc1\"\\x83\\xe4E...' is not an integer vertex id; an edge list needs 'src dst' integer pairs per line"),
    ("snap-not-gzip", "graph stats snap:{d}/e_not_gzip.txt.gz",
     "netweave: error: {d}/e_not_gzip.txt.gz: corrupt or truncated gzip file (Error -3 while decompressing data: incorrect header check); re-download it"),
    ("snap-empty-gzip", "graph stats snap:{d}/e_empty.txt.gz",
     "netweave: error: {d}/e_empty.txt.gz: no edges found (only comments or blank lines)"),
    ("snap-csv-header-only", "graph stats snap:{d}/e_csv_header_only.csv",
     "netweave: error: {d}/e_csv_header_only.csv: no edges found (only comments or blank lines)"),
    ("snap-words", "graph stats snap:{d}/e_words.txt",
     "netweave: error: {d}/e_words.txt, line 1: 'alice bob' is not an integer vertex id; an edge list needs 'src dst' integer pairs per line"),
    ("snap-glob-no-match", "graph stats 'snap:{d}/nomatch*.txt'",
     "netweave: error: no file matches '{d}/nomatch*.txt'"),
    ("snap-no-path", "graph stats snap:",
     "netweave: error: unknown dataset 'snap:': not bundled (cora), not a generator (rmat, er, star, ring, reddit-like, products-like) and no such file; run `netweave datasets` for the accepted specs"),
    ("planetoid-missing-dir", "graph stats planetoid:{d}/nodir:cora",
     "netweave: error: {d}/nodir: not a directory; planetoid:DIR:NAME needs the folder with ind.NAME.* files"),
    ("planetoid-empty-dir", "graph stats planetoid:{d}/pl_empty:cora",
     "netweave: error: {d}/pl_empty: no ind.cora.graph; available: none"),
    ("planetoid-file-not-dir", "graph stats planetoid:{d}/e_words.txt:cora",
     "netweave: error: {d}/e_words.txt: not a directory; planetoid:DIR:NAME needs the folder with ind.NAME.* files"),
    ("planetoid-no-path", "graph stats planetoid:",
     "netweave: error: unknown dataset 'planetoid:': not bundled (cora), not a generator (rmat, er, star, ring, reddit-like, products-like) and no such file; run `netweave datasets` for the accepted specs"),
    ("musae-empty-dir", "graph stats musae:{d}/musae_empty",
     "netweave: error: {d}/musae_empty: no edges.csv; a MUSAE directory holds edges.csv, features.json and target.csv"),
    ("musae-missing-dir", "graph stats musae:{d}/nodir",
     "netweave: error: {d}/nodir: no such directory; musae:DIR needs the folder with edges.csv, features.json and target.csv"),
    ("musae-file-not-dir", "graph stats musae:{d}/e_words.txt",
     "netweave: error: {d}/e_words.txt: not a directory; musae:DIR needs the folder with edges.csv, features.json and target.csv, not a file in it"),
    ("planetoid-empty-dir-no-name", "graph stats planetoid:{d}/pl_empty",
     "netweave: error: {d}/pl_empty: holds no Planetoid dataset (ind.NAME.graph, ind.NAME.x, … files); point planetoid:DIR at the folder with them"),
    # -- topology show / export: builder specs and YAML files
    ("topology-unknown-subcommand", "topology draw dgx1",
     "netweave: error: No such command 'draw'. (see `netweave topology --help`)"),
    ("topo-unknown", "topology show nosuch",
     "netweave: error: unknown topology 'nosuch': not a YAML file and not a builder (dgx1, dgx1x2, pcie8, star, tree, leafspine, fattree, random); run `netweave topology show --help` for the builder specs"),
    ("topo-empty", "topology show ''",
     "netweave: error: unknown topology '': not a YAML file and not a builder (dgx1, dgx1x2, pcie8, star, tree, leafspine, fattree, random); run `netweave topology show --help` for the builder specs"),
    ("topo-dgx1-gpus-zero", "topology show dgx1:gpus=0",
     "netweave: error: dgx1 gpus=0: a job on one DGX-1 uses 2 to 8 of its GPUs"),
    ("topo-dgx1-gpus-one", "topology show dgx1:gpus=1",
     "netweave: error: dgx1 gpus=1: a job on one DGX-1 uses 2 to 8 of its GPUs"),
    ("topo-dgx1-gpus-nine", "topology show dgx1:gpus=9",
     "netweave: error: dgx1 gpus=9: a job on one DGX-1 uses 2 to 8 of its GPUs"),
    ("topo-dgx1-gpus-text", "topology show dgx1:gpus=x",
     "netweave: error: parameter gpus='x' in 'dgx1:gpus=x' is not a valid int"),
    ("topo-dgx1-unknown-param", "topology show dgx1:foo=1",
     "netweave: error: unknown parameter 'foo' in 'dgx1:foo=1'; allowed: gpus"),
    ("topo-dgx1x2-param", "topology show dgx1x2:n=1",
     "netweave: error: unknown parameter 'n' in 'dgx1x2:n=1'; allowed:"),
    ("topo-pcie8-param", "topology show pcie8:gpus=4",
     "netweave: error: unknown parameter 'gpus' in 'pcie8:gpus=4'; allowed:"),
    ("topo-star-no-n", "topology show star:",
     "netweave: error: 'star:' needs the parameter n=…"),
    ("topo-star-n-zero", "topology show star:n=0",
     "netweave: error: star n=0 needs at least one host"),
    ("topo-star-n-negative", "topology show star:n=-1",
     "netweave: error: star n=-1 needs at least one host"),
    ("topo-star-n-text", "topology show star:n=x",
     "netweave: error: parameter n='x' in 'star:n=x' is not a valid int"),
    ("topo-star-gbps-negative", "topology show star:n=4,gbps=-1",
     "netweave: error: link 0 (H0–S0): gbps must be a positive number, got -1.0"),
    ("topo-star-gbps-zero", "topology show star:n=4,gbps=0",
     "netweave: error: link 0 (H0–S0): gbps must be a positive number, got 0.0"),
    ("topo-star-gbps-nan", "topology show star:n=4,gbps=nan",
     "netweave: error: parameter gbps='nan' in 'star:n=4,gbps=nan' must be a finite number (not nan or inf), e.g. gbps=100"),
    ("topo-star-gbps-inf", "topology show star:n=4,gbps=inf",
     "netweave: error: parameter gbps='inf' in 'star:n=4,gbps=inf' must be a finite number (not nan or inf), e.g. gbps=100"),
    ("topo-star-latency-negative", "topology show star:n=4,latency_us=-1",
     "netweave: error: link 0 (H0–S0): latency_us must not be negative, got -1.0"),
    ("topo-star-latency-nan", "topology show star:n=4,latency_us=nan",
     "netweave: error: parameter latency_us='nan' in 'star:n=4,latency_us=nan' must be a finite number (not nan or inf), e.g. latency_us=1"),
    ("topo-star-ina-not-bool", "topology show star:n=4,ina=maybe",
     "netweave: error: parameter ina='maybe' in 'star:n=4,ina=maybe' is not a valid bool"),
    ("topo-star-pipelines-zero", "topology show star:n=4,pipelines=0",
     "netweave: error: node 0 ('S0'): pipelines must be at least 1, got 0"),
    ("topo-star-pipelines-negative", "topology show star:n=4,pipelines=-2",
     "netweave: error: node 0 ('S0'): pipelines must be at least 1, got -2"),
    ("topo-star-memory-text", "topology show star:n=4,memory=lots",
     "netweave: error: parameter memory='lots' in 'star:n=4,memory=lots' is not a valid size"),
    ("topo-star-memory-negative", "topology show star:n=4,memory=-5MB",
     "netweave: error: parameter memory='-5MB' in 'star:n=4,memory=-5MB' is not a valid size"),
    ("topo-star-bad-item", "topology show star:n=4,gbps",
     "netweave: error: bad parameter 'gbps' in 'star:n=4,gbps': write parameters as key=value separated by commas"),
    ("topo-leafspine-missing", "topology show leafspine:leaves=2",
     "netweave: error: 'leafspine:leaves=2' needs the parameter spines=…"),
    ("topo-leafspine-leaves-zero", "topology show leafspine:leaves=0,spines=2,hosts=2",
     "netweave: error: leafspine needs at least one leaf, one spine and one host per leaf"),
    ("topo-leafspine-spines-negative", "topology show leafspine:leaves=2,spines=-1,hosts=2",
     "netweave: error: leafspine needs at least one leaf, one spine and one host per leaf"),
    ("topo-leafspine-hosts-zero", "topology show leafspine:leaves=2,spines=1,hosts=0",
     "netweave: error: leafspine needs at least one leaf, one spine and one host per leaf"),
    ("topo-leafspine-ina-above-one", "topology show leafspine:leaves=2,spines=1,hosts=2,ina=2",
     "netweave: error: ina=2.0 must be a fraction of switches in [0, 1]"),
    ("topo-leafspine-ina-negative", "topology show leafspine:leaves=2,spines=1,hosts=2,ina=-0.1",
     "netweave: error: ina=-0.1 must be a fraction of switches in [0, 1]"),
    ("topo-leafspine-ina-nan", "topology show leafspine:leaves=2,spines=1,hosts=2,ina=nan",
     "netweave: error: parameter ina='nan' in 'leafspine:leaves=2,spines=1,hosts=2,ina=nan' must be a finite number (not nan or inf), e.g. ina=0"),
    ("topo-leafspine-switch-gbps-reversed", "topology show leafspine:leaves=2,spines=1,hosts=2,switch_gbps=20-5",
     "netweave: error: parameter switch_gbps='20-5' in 'leafspine:leaves=2,spines=1,hosts=2,switch_gbps=20-5' is not a valid gbps_range"),
    ("topo-leafspine-switch-gbps-zero", "topology show leafspine:leaves=2,spines=1,hosts=2,switch_gbps=0-5",
     "netweave: error: parameter switch_gbps='0-5' in 'leafspine:leaves=2,spines=1,hosts=2,switch_gbps=0-5' is not a valid gbps_range"),
    ("topo-leafspine-switch-gbps-text", "topology show leafspine:leaves=2,spines=1,hosts=2,switch_gbps=abc",
     "netweave: error: parameter switch_gbps='abc' in 'leafspine:leaves=2,spines=1,hosts=2,switch_gbps=abc' is not a valid gbps_range"),
    ("topo-fattree-odd-k", "topology show fattree:k=3",
     "netweave: error: fattree k=3 must be an even number ≥ 2"),
    ("topo-fattree-k-zero", "topology show fattree:k=0",
     "netweave: error: fattree k=0 must be an even number ≥ 2"),
    ("topo-fattree-k-negative", "topology show fattree:k=-2",
     "netweave: error: fattree k=-2 must be an even number ≥ 2"),
    ("topo-fattree-no-k", "topology show fattree:",
     "netweave: error: 'fattree:' needs the parameter k=…"),
    ("topo-random-degree-too-big", "topology show random:switches=4,degree=5,hosts=1",
     "netweave: error: random: need 2 ≤ switches, 1 ≤ degree < switches and switches×degree even (got 4, 5)"),
    ("topo-random-odd-product", "topology show random:switches=5,degree=3,hosts=1",
     "netweave: error: random: need 2 ≤ switches, 1 ≤ degree < switches and switches×degree even (got 5, 3)"),
    ("topo-random-missing", "topology show random:switches=4",
     "netweave: error: 'random:switches=4' needs the parameter degree=…"),
    ("topo-star-n-inf", "topology show star:n=inf",
     "netweave: error: parameter n='inf' in 'star:n=inf' is not a valid int"),
    ("topo-dgx1-gpus-inf", "topology show dgx1:gpus=inf",
     "netweave: error: parameter gpus='inf' in 'dgx1:gpus=inf' is not a valid int"),
    ("topo-fattree-k-nan", "topology show fattree:k=nan",
     "netweave: error: parameter k='nan' in 'fattree:k=nan' is not a valid int"),
    ("topo-leafspine-gbps-inf", "topology show leafspine:leaves=2,spines=1,hosts=2,gbps=inf",
     "netweave: error: parameter gbps='inf' in 'leafspine:leaves=2,spines=1,hosts=2,gbps=inf' must be a finite number (not nan or inf), e.g. gbps=100"),
    ("topo-star-param-twice", "topology show star:n=4,n=5",
     "netweave: error: parameter 'n' given twice in 'star:n=4,n=5' (n=4 and n=5); give it once"),
    ("topo-star-param-twice-case", "topology show star:n=4,N=4",
     "netweave: error: parameter 'n' given twice in 'star:n=4,N=4' (n=4 and n=4); give it once"),
    ("topo-star-too-big", "topology show star:n=1e9",
     "netweave: error: topology 'star:n=1e9' would have 1,000,000,000 links and 1,000,000,001 nodes, above the 1,000,000 links a builder may make; lower n"),
    ("topo-leafspine-too-big", "topology show leafspine:leaves=100000,spines=100000,hosts=100",
     "netweave: error: topology 'leafspine:leaves=100000,spines=100000,hosts=100' would have 10,010,000,000 links and 10,200,000 nodes, above the 1,000,000 links a builder may make; lower leaves, spines or hosts"),
    ("topo-fattree-too-big", "topology show fattree:k=1000",
     "netweave: error: topology 'fattree:k=1000' would have 750,000,000 links and 251,250,000 nodes, above the 1,000,000 links a builder may make; lower k"),
    ("topo-random-too-big", "topology show random:switches=10000000,degree=3,hosts=1",
     "netweave: error: topology 'random:switches=10000000,degree=3,hosts=1' would have 15,000,001 links and 10,000,001 nodes, above the 1,000,000 links a builder may make; lower switches, degree or hosts"),
    ("yaml-empty", "topology show {d}/t_empty.yaml",
     "netweave: error: {d}/t_empty.yaml: a topology file needs top-level 'nodes:' and 'links:' lists"),
    ("yaml-list", "topology show {d}/t_list.yaml",
     "netweave: error: {d}/t_list.yaml: a topology file needs top-level 'nodes:' and 'links:' lists"),
    ("yaml-scalar", "topology show {d}/t_scalar.yaml",
     "netweave: error: {d}/t_scalar.yaml: a topology file needs top-level 'nodes:' and 'links:' lists"),
    ("yaml-no-links", "topology show {d}/t_no_links.yaml",
     "netweave: error: {d}/t_no_links.yaml: a topology file needs top-level 'nodes:' and 'links:' lists"),
    ("yaml-no-nodes", "topology show {d}/t_no_nodes.yaml",
     "netweave: error: {d}/t_no_nodes.yaml: a topology file needs top-level 'nodes:' and 'links:' lists"),
    ("yaml-nodes-mapping", "topology show {d}/t_nodes_mapping.yaml",
     "netweave: error: {d}/t_nodes_mapping.yaml: topology: 'nodes' and 'links' must be lists"),
    ("yaml-links-scalar", "topology show {d}/t_links_scalar.yaml",
     "netweave: error: {d}/t_links_scalar.yaml: topology: 'nodes' and 'links' must be lists"),
    ("yaml-node-scalar", "topology show {d}/t_node_scalar.yaml",
     "netweave: error: {d}/t_node_scalar.yaml: node 0: expected a mapping like {name: …, kind: …}, got 'H0'"),
    ("yaml-node-unknown-key", "topology show {d}/t_node_unknown_key.yaml",
     "netweave: error: {d}/t_node_unknown_key.yaml: node 0: unknown key 'colour'; allowed keys: aggregator_memory, ina, ina_capacity_gbps, kind, name, pipelines, pod, server, tier"),
    ("yaml-node-no-kind", "topology show {d}/t_node_no_kind.yaml",
     "netweave: error: {d}/t_node_no_kind.yaml: node 0: needs 'name' and 'kind'"),
    ("yaml-node-no-name", "topology show {d}/t_node_no_name.yaml",
     "netweave: error: {d}/t_node_no_name.yaml: node 0: needs 'name' and 'kind'"),
    ("yaml-node-bad-kind", "topology show {d}/t_node_bad_kind.yaml",
     "netweave: error: {d}/t_node_bad_kind.yaml: node 3 ('R0'): unknown kind 'router'; use one of gpu, host, switch, cpu, pcie, nic"),
    ("yaml-dup-names", "topology show {d}/t_dup_names.yaml",
     "netweave: error: {d}/t_dup_names.yaml: duplicate node name 'H0' (nodes 0 and 3); names must be unique"),
    ("yaml-top-unknown-key", "topology show {d}/t_top_unknown_key.yaml",
     "netweave: error: {d}/t_top_unknown_key.yaml: topology: unknown key 'version'; allowed keys: links, name, nodes"),
    ("yaml-link-unknown-node", "topology show {d}/t_link_unknown_node.yaml",
     "netweave: error: {d}/t_link_unknown_node.yaml: link 2 (H0–NOPE): unknown node 'NOPE'; declare it under nodes:"),
    ("yaml-link-no-gbps", "topology show {d}/t_link_no_gbps.yaml",
     "netweave: error: {d}/t_link_no_gbps.yaml: link 0: needs 'a', 'b' and 'gbps'"),
    ("yaml-link-neg-gbps", "topology show {d}/t_link_neg_gbps.yaml",
     "netweave: error: {d}/t_link_neg_gbps.yaml: link 0 (H0–S0): gbps must be a positive number, got -10.0"),
    ("yaml-link-zero-gbps", "topology show {d}/t_link_zero_gbps.yaml",
     "netweave: error: {d}/t_link_zero_gbps.yaml: link 0 (H0–S0): gbps must be a positive number, got 0.0"),
    ("yaml-link-nan-gbps", "topology show {d}/t_link_nan_gbps.yaml",
     "netweave: error: {d}/t_link_nan_gbps.yaml: link 0 (H0–S0): gbps must be a positive number, got nan"),
    ("yaml-link-inf-gbps", "topology show {d}/t_link_inf_gbps.yaml",
     "netweave: error: {d}/t_link_inf_gbps.yaml: link 0 (H0–S0): gbps must be a positive number, got inf"),
    ("yaml-link-str-gbps", "topology show {d}/t_link_str_gbps.yaml",
     "netweave: error: {d}/t_link_str_gbps.yaml: link 0: gbps must be a number, got 'fast'"),
    ("yaml-link-bool-gbps", "topology show {d}/t_link_bool_gbps.yaml",
     "netweave: error: {d}/t_link_bool_gbps.yaml: link 0: gbps must be a number, got True"),
    ("yaml-link-neg-latency", "topology show {d}/t_link_neg_latency.yaml",
     "netweave: error: {d}/t_link_neg_latency.yaml: link 0 (H0–S0): latency_us must not be negative, got -1.0"),
    ("yaml-link-str-latency", "topology show {d}/t_link_str_latency.yaml",
     "netweave: error: {d}/t_link_str_latency.yaml: link 0: latency_us must be a number, got 'slow'"),
    ("yaml-link-self", "topology show {d}/t_link_self.yaml",
     "netweave: error: {d}/t_link_self.yaml: link 2 (S0–S0): a link must join two different nodes"),
    ("yaml-link-unknown-key", "topology show {d}/t_link_unknown_key.yaml",
     "netweave: error: {d}/t_link_unknown_key.yaml: link 0: unknown key 'mtu'; allowed keys: a, a_pipeline, b, b_pipeline, gbps, label, latency_us"),
    ("yaml-link-scalar", "topology show {d}/t_link_scalar.yaml",
     "netweave: error: {d}/t_link_scalar.yaml: link 0: expected a mapping like {name: …, kind: …}, got 'H0-S0'"),
    ("yaml-link-bad-pipeline", "topology show {d}/t_link_bad_pipeline.yaml",
     "netweave: error: {d}/t_link_bad_pipeline.yaml: link 0 (H0–S0): pipeline 7 of 'S0' outside 0..0"),
    ("yaml-link-str-pipeline", "topology show {d}/t_link_str_pipeline.yaml",
     "netweave: error: {d}/t_link_str_pipeline.yaml: link 0: b_pipeline must be a number, got 'first'"),
    ("yaml-bad-memory", "topology show {d}/t_bad_memory.yaml",
     "netweave: error: {d}/t_bad_memory.yaml: node 2 aggregator_memory: 'lots' is not a size; write e.g. 100MB, 4MiB or 1048576"),
    ("yaml-neg-memory", "topology show {d}/t_neg_memory.yaml",
     "netweave: error: {d}/t_neg_memory.yaml: node 2 ('S0'): aggregator_memory must not be negative"),
    ("yaml-caps-list", "topology show {d}/t_caps_list.yaml",
     "netweave: error: {d}/t_caps_list.yaml: node 2: ina_capacity_gbps must map precisions to Gb/s, e.g. {fp16: 24}"),
    ("yaml-caps-str", "topology show {d}/t_caps_str.yaml",
     "netweave: error: {d}/t_caps_str.yaml: node 2: ina_capacity_gbps.fp16 must be a number, got 'lots'"),
    ("yaml-caps-neg", "topology show {d}/t_caps_neg.yaml",
     "netweave: error: {d}/t_caps_neg.yaml: node 2 ('S0'): ina_capacity_gbps[fp16] must be positive, got -1.0"),
    ("yaml-caps-unknown", "topology show {d}/t_caps_unknown.yaml",
     "netweave: error: {d}/t_caps_unknown.yaml: node 2 ('S0'): unknown precision 'fp7' in ina_capacity_gbps; use fp8, fp16, fp32"),
    ("yaml-pipelines-str", "topology show {d}/t_pipelines_str.yaml",
     "netweave: error: {d}/t_pipelines_str.yaml: node 2: pipelines must be a number, got 'many'"),
    ("yaml-pipelines-zero", "topology show {d}/t_pipelines_zero.yaml",
     "netweave: error: {d}/t_pipelines_zero.yaml: node 2 ('S0'): pipelines must be at least 1, got 0"),
    ("yaml-host-ina", "topology show {d}/t_host_ina.yaml",
     "netweave: error: {d}/t_host_ina.yaml: node 0 ('H0'): only switches can have ina or pipelines"),
    ("yaml-syntax", "topology show {d}/t_syntax.yaml",
     "netweave: error: {d}/t_syntax.yaml: invalid YAML at line 3, column 6 (expected ',' or '}', but got ':')"),
    ("yaml-tab", "topology show {d}/t_tab.yaml",
     "netweave: error: {d}/t_tab.yaml: invalid YAML at line 2, column 1 (found character '\\t' that cannot start any token)"),
    ("yaml-alias", "topology show {d}/t_alias.yaml",
     "netweave: error: {d}/t_alias.yaml: invalid YAML at line 1, column 7 (anchors and aliases (&name, *name) are not supported; write the values out)"),
    ("yaml-binary", "topology show {d}/t_binary.yaml",
     "netweave: error: {d}/t_binary.yaml: not UTF-8 text (byte 2); expected a topology file"),
    ("yaml-latin1", "topology show {d}/t_latin1.yaml",
     "netweave: error: {d}/t_latin1.yaml: not UTF-8 text (byte 9); expected a topology file"),
    ("yaml-nul", "topology show {d}/t_nul.yaml",
     "netweave: error: {d}/t_nul.yaml: invalid YAML (unacceptable character #x0000: special characters are not allowed in \"<unicode string>\", position 9)"),
    ("yaml-tag", "topology show {d}/t_tag.yaml",
     "netweave: error: {d}/t_tag.yaml: invalid YAML at line 1, column 8 (could not determine a constructor for the tag 'tag:yaml.org,2002:python/object/apply:os.system')"),
    ("yaml-disconnected", "topology show {d}/t_disconnected.yaml",
     "netweave: error: {d}/t_disconnected.yaml: topology 't_disconnected': workers H9 cannot reach H0; add links that connect them"),
    ("yaml-dup-key", "topology show {d}/t_dup_key.yaml",
     "netweave: error: {d}/t_dup_key.yaml: invalid YAML at line 8, column 1 (duplicate key 'nodes', first given at line 1; give each key once per mapping)"),
    ("yaml-dup-node-key", "topology show {d}/t_dup_node_key.yaml",
     "netweave: error: {d}/t_dup_node_key.yaml: invalid YAML at line 2, column 28 (duplicate key 'kind', first given at line 2; give each key once per mapping)"),
    ("yaml-memory-inf", "topology show {d}/t_memory_inf.yaml",
     "netweave: error: {d}/t_memory_inf.yaml: node 2 aggregator_memory: inf is not a size; write e.g. 100MB, 4MiB or 1048576"),
    ("yaml-pipelines-inf", "topology show {d}/t_pipelines_inf.yaml",
     "netweave: error: {d}/t_pipelines_inf.yaml: node 2: pipelines must be a number, got inf"),
    ("yaml-missing", "topology show {d}/missing.yaml",
     "netweave: error: {d}/missing.yaml: no such file"),
    ("yaml-missing-relative", "topology show missing.yaml",
     "netweave: error: missing.yaml: no such file"),
    ("yaml-directory", "topology show {d}/dir.yaml",
     "netweave: error: {d}/dir.yaml: is a directory; expected a topology file"),
    ("topo-text-file-not-yaml", "topology show {d}/topology.txt",
     "netweave: error: {d}/topology.txt: a topology file needs top-level 'nodes:' and 'links:' lists"),
    ("topology-show-missing-spec", "topology show",
     "netweave: error: Missing argument 'spec'. (see `netweave topology show --help`)"),
    ("topology-show-links-bad", "topology show dgx1 --links=3",
     "netweave: error: Option '--links' does not take a value. (see `netweave topology show --help`)"),
    ("topology-export-missing-out", "topology export dgx1",
     "netweave: error: Missing option '--out'. (see `netweave topology export --help`)"),
    ("topology-export-bad-spec", "topology export nosuch --out t.yaml",
     "netweave: error: unknown topology 'nosuch': not a YAML file and not a builder (dgx1, dgx1x2, pcie8, star, tree, leafspine, fattree, random); run `netweave topology show --help` for the builder specs"),
    ("topology-export-bad-yaml", "topology export {d}/t_dup_names.yaml --out t.yaml",
     "netweave: error: {d}/t_dup_names.yaml: duplicate node name 'H0' (nodes 0 and 3); names must be unique"),
    ("topology-export-missing-yaml", "topology export {d}/missing.yaml --out t.yaml",
     "netweave: error: {d}/missing.yaml: no such file"),
    ("topology-export-extra-arg", "topology export dgx1 pcie8 --out t.yaml",
     "netweave: error: Got unexpected extra argument(s) (pcie8) (see `netweave topology export --help`)"),
    ("topology-show-fattree-text", "topology show fattree:k=four",
     "netweave: error: parameter k='four' in 'fattree:k=four' is not a valid int"),
    ("topology-show-random-degree-zero", "topology show random:switches=4,degree=0,hosts=1",
     "netweave: error: random: need 2 ≤ switches, 1 ≤ degree < switches and switches×degree even (got 4, 0)"),
    ("topology-show-random-switches-one", "topology show random:switches=1,degree=1,hosts=1",
     "netweave: error: random: need 2 ≤ switches, 1 ≤ degree < switches and switches×degree even (got 1, 1)"),
    ("topology-show-dgx1-gpus-fraction", "topology show dgx1:gpus=2.5",
     "netweave: error: parameter gpus='2.5' in 'dgx1:gpus=2.5' is not a valid int"),
    ("topology-show-upper-case", "topology show STAR:N=0",
     "netweave: error: star n=0 needs at least one host"),
    # -- partition
    ("partition-missing-dataset", "partition",
     "netweave: error: Missing argument 'dataset'. (see `netweave partition --help`)"),
    ("partition-parts-zero", "partition ring:n=8 -k 0",
     "netweave: error: --parts 0: need at least one part"),
    ("partition-parts-negative", "partition ring:n=8 -k -1",
     "netweave: error: --parts -1: need at least one part"),
    ("partition-parts-text", "partition ring:n=8 -k two",
     "netweave: error: Invalid value for '--parts' / '-k': Input should be a valid integer, unable to parse string as an integer (see `netweave partition --help`)"),
    ("partition-parts-above-vertices", "partition ring:n=8 -k 10",
     "netweave: error: --parts 10 exceeds the graph's 8 vertices; use at most 8"),
    ("partition-method-unknown", "partition ring:n=8 -k 2 --method spectral",
     "netweave: error: Invalid value for '--method': 'spectral' is not one of 'metis', 'metis32', 'random', 'range', 'hierarchical'. (see `netweave partition --help`)"),
    ("partition-hierarchical-no-topology", "partition ring:n=8 -k 2 --method hierarchical",
     "netweave: error: --method hierarchical needs --topology (its machines and GPUs define the levels)"),
    ("partition-no-parts-no-topology", "partition ring:n=8",
     "netweave: error: --parts K is required (the number of workers)"),
    ("partition-topology-unknown", "partition ring:n=8 --topology nosuch",
     "netweave: error: unknown topology 'nosuch': not a YAML file and not a builder (dgx1, dgx1x2, pcie8, star, tree, leafspine, fattree, random); run `netweave topology show --help` for the builder specs"),
    ("partition-parts-and-topology-disagree", "partition ring:n=16 -k 3 --topology star:n=4",
     "netweave: error: 3 parts requested but the topology has 4 workers; drop the part count or use a topology with that many workers"),
    ("partition-feature-dim-zero", "partition ring:n=8 -k 2 --feature-dim 0",
     "netweave: error: --feature-dim 0 must be positive"),
    ("partition-feature-dim-negative", "partition ring:n=8 -k 2 --feature-dim -3",
     "netweave: error: --feature-dim -3 must be positive"),
    ("partition-seed-text", "partition ring:n=8 -k 2 --seed x",
     "netweave: error: Invalid value for '--seed': Input should be a valid integer, unable to parse string as an integer (see `netweave partition --help`)"),
    ("partition-dataset-unknown", "partition nosuch -k 2",
     "netweave: error: unknown dataset 'nosuch': not bundled (cora), not a generator (rmat, er, star, ring, reddit-like, products-like) and no such file; run `netweave datasets` for the accepted specs"),
    ("partition-topology-yaml-bad", "partition ring:n=8 --topology {d}/t_node_bad_kind.yaml",
     "netweave: error: {d}/t_node_bad_kind.yaml: node 3 ('R0'): unknown kind 'router'; use one of gpu, host, switch, cpu, pcie, nic"),
    ("partition-dataset-snap-bad", "partition {d}/e_float.txt -k 2",
     "netweave: error: {d}/e_float.txt, line 2: '1.5 2' is not an integer vertex id; an edge list needs 'src dst' integer pairs per line"),
    # -- plan (and --validate)
    ("plan-nothing", "plan",
     "netweave: error: plan needs DATASET and --topology (or --validate PLAN.npz)"),
    ("plan-no-topology", "plan ring:n=8",
     "netweave: error: plan needs DATASET and --topology (or --validate PLAN.npz)"),
    ("plan-no-dataset", "plan --topology star:n=2",
     "netweave: error: plan needs DATASET and --topology (or --validate PLAN.npz)"),
    ("plan-planner-unknown", "plan ring:n=8 --topology star:n=2 --planner tree",
     "netweave: error: Invalid value for '--planner': 'tree' is not one of 'p2p', 'spst'. (see `netweave plan --help`)"),
    ("plan-cost-model-unknown", "plan ring:n=8 --topology star:n=2 --cost-model logp",
     "netweave: error: Invalid value for '--cost-model': 'logp' is not one of 'alpha-beta', 'dgcl'. (see `netweave plan --help`)"),
    ("plan-method-unknown", "plan ring:n=8 --topology star:n=2 --method spectral",
     "netweave: error: Invalid value for '--method': 'spectral' is not one of 'metis', 'metis32', 'random', 'range', 'hierarchical'. (see `netweave plan --help`)"),
    ("plan-topology-unknown", "plan ring:n=8 --topology nosuch",
     "netweave: error: unknown topology 'nosuch': not a YAML file and not a builder (dgx1, dgx1x2, pcie8, star, tree, leafspine, fattree, random); run `netweave topology show --help` for the builder specs"),
    ("plan-parts-mismatch", "plan ring:n=8 --topology star:n=2 -k 3",
     "netweave: error: 3 parts requested but the topology has 2 workers; drop the part count or use a topology with that many workers"),
    ("plan-parts-zero", "plan ring:n=8 --topology star:n=2 -k 0",
     "netweave: error: 0 parts requested but the topology has 2 workers; drop the part count or use a topology with that many workers"),
    ("plan-feature-dim-zero", "plan ring:n=8 --topology star:n=2 --feature-dim 0",
     "netweave: error: --feature-dim 0 must be positive"),
    ("plan-workers-beyond-vertices", "plan ring:n=4 --topology star:n=8",
     "netweave: error: topology star-8 has 8 workers, more than the 4 vertices of ring:n=4; use a topology with at most 4 workers"),
    ("plan-parts-file-missing", "plan ring:n=8 --topology star:n=2 --parts-file {d}/missing.npz",
     "netweave: error: {d}/missing.npz: no such file"),
    ("plan-parts-file-directory", "plan ring:n=8 --topology star:n=2 --parts-file {d}/dir.npz",
     "netweave: error: {d}/dir.npz: not a regular file; expected an .npz archive"),
    ("plan-parts-file-empty", "plan ring:n=8 --topology star:n=2 --parts-file {d}/empty.npz",
     "netweave: error: {d}/empty.npz: not a readable .npz archive (no zip header)"),
    ("plan-parts-file-garbage", "plan ring:n=8 --topology star:n=2 --parts-file {d}/garbage.npz",
     "netweave: error: {d}/garbage.npz: not a readable .npz archive (no zip header)"),
    ("plan-parts-file-truncated", "plan ring:n=8 --topology star:n=2 --parts-file {d}/parts_trunc.npz",
     "netweave: error: {d}/parts_trunc.npz: not a readable .npz archive (BadZipFile: File is not a zip file); the file is truncated or corrupt, re-create or re-download it"),
    ("plan-parts-file-no-parts", "plan ring:n=8 --topology star:n=2 --parts-file {d}/parts_nokey.npz",
     "netweave: error: {d}/parts_nokey.npz: no 'parts' array (keys: labels); write it with `netweave partition --out`"),
    ("plan-parts-file-float", "plan ring:n=8 --topology star:n=2 --parts-file {d}/parts_float.npz",
     "netweave: error: {d}/parts_float.npz: 'parts' must be a non-empty 1-D array of non-negative integers (part of each vertex)"),
    ("plan-parts-file-negative", "plan ring:n=8 --topology star:n=2 --parts-file {d}/parts_negative.npz",
     "netweave: error: {d}/parts_negative.npz: 'parts' must be a non-empty 1-D array of non-negative integers (part of each vertex)"),
    ("plan-parts-file-short", "plan ring:n=8 --topology star:n=2 --parts-file {d}/parts_short.npz",
     "netweave: error: {d}/parts_short.npz has 3 vertices but the graph has 8; partition the same dataset spec"),
    ("plan-parts-file-2d", "plan ring:n=8 --topology star:n=2 --parts-file {d}/parts_2d.npz",
     "netweave: error: {d}/parts_2d.npz: 'parts' must be a non-empty 1-D array of non-negative integers (part of each vertex)"),
    ("plan-parts-file-three-parts", "plan ring:n=8 --topology star:n=2 --parts-file {d}/parts_three.npz",
     "netweave: error: {d}/parts_three.npz has 3 parts but there are 2 workers; partition into as many parts as workers"),
    ("plan-parts-file-object", "plan ring:n=8 --topology star:n=2 --parts-file {d}/parts_object.npz",
     "netweave: error: {d}/parts_object.npz: member 'parts': holds Python objects (object); this file may only hold numeric arrays"),
    ("plan-parts-file-member-not-npy", "plan ring:n=8 --topology star:n=2 --parts-file {d}/notnpy.npz",
     "netweave: error: {d}/notnpy.npz: member 'parts' is unreadable (ValueError: the magic string is not correct; expected b'\\x93NUMPY', got b'this i'); the archive is truncated or corrupt, re-create or re-download it"),
    ("plan-parts-file-yaml", "plan ring:n=8 --topology star:n=2 --parts-file {d}/t_list.yaml",
     "netweave: error: {d}/t_list.yaml: not a readable .npz archive (no zip header)"),
    ("plan-validate-missing", "plan --validate {d}/missing.npz",
     "netweave: error: {d}/missing.npz: no such file"),
    ("plan-validate-empty", "plan --validate {d}/empty.npz",
     "netweave: error: {d}/empty.npz: not a readable .npz archive (no zip header)"),
    ("plan-validate-garbage", "plan --validate {d}/garbage.npz",
     "netweave: error: {d}/garbage.npz: not a readable .npz archive (no zip header)"),
    ("plan-validate-truncated", "plan --validate {d}/plan_trunc.npz",
     "netweave: error: {d}/plan_trunc.npz: not a readable .npz archive (BadZipFile: File is not a zip file); the file is truncated or corrupt, re-create or re-download it"),
    ("plan-validate-partition-not-plan", "plan --validate {d}/plan_nokey.npz",
     "netweave: error: {d}/plan_nokey.npz: not a netweave plan (missing hop_stage, hop_src, hop_dst, hop_vertex, feature_bytes, workers); write one with `netweave plan --out`"),
    ("plan-validate-directory", "plan --validate {d}/dir.npz",
     "netweave: error: {d}/dir.npz: not a regular file; expected an .npz archive"),
    ("plan-validate-ok-other-dataset", "plan ring:n=16 --validate {d}/plan_ok.npz",
     "netweave: error: {d}/plan_ok.npz has 8 vertices but the graph has 16; partition the same dataset spec"),
    ("plan-validate-ok-other-topology", "plan --validate {d}/plan_ok.npz --topology star:n=3",
     "netweave: error: {d}/plan_ok.npz was planned for workers ['H0', 'H1']…, not star:n=3's"),
    ("plan-validate-bad-hop", "plan --validate {d}/plan_bad_hop.npz",
     "netweave: error: invalid plan: worker rank outside 0..1 (hop 3: stage 1, 1->5, vertex 7; 1 such hops)"),
    ("plan-validate-bad-vertex", "plan --validate {d}/plan_bad_vertex.npz",
     "netweave: error: invalid plan: vertex id outside 0..7 (hop 3: stage 1, 1->0, vertex 99; 1 such hops)"),
    ("plan-validate-neg-bytes", "plan --validate {d}/plan_neg_bytes.npz",
     "netweave: error: {d}/plan_neg_bytes.npz: feature_bytes must be a positive integer and workers a list of names"),
    ("plan-validate-topology-unknown", "plan --validate {d}/plan_ok.npz --topology nosuch",
     "netweave: error: unknown topology 'nosuch': not a YAML file and not a builder (dgx1, dgx1x2, pcie8, star, tree, leafspine, fattree, random); run `netweave topology show --help` for the builder specs"),
    ("plan-validate-dataset-unknown", "plan nosuch --validate {d}/plan_ok.npz",
     "netweave: error: unknown dataset 'nosuch': not bundled (cora), not a generator (rmat, er, star, ring, reddit-like, products-like) and no such file; run `netweave datasets` for the accepted specs"),
    ("plan-topology-yaml-missing", "plan ring:n=8 --topology {d}/missing.yaml",
     "netweave: error: {d}/missing.yaml: no such file"),
    ("plan-topology-yaml-dir", "plan ring:n=8 --topology {d}/dir.yaml",
     "netweave: error: {d}/dir.yaml: is a directory; expected a topology file"),
    # -- ina
    ("ina-workers-zero", "ina ring:n=16 -n 0",
     "netweave: error: --workers 0: propagation across workers needs at least 2"),
    ("ina-workers-negative", "ina ring:n=16 -n -3",
     "netweave: error: --workers -3: propagation across workers needs at least 2"),
    ("ina-switch-memory-text", "ina ring:n=16 -n 2 --switch-memory lots",
     "netweave: error: --switch-memory: 'lots' is not a size; write e.g. 100MB, 4MiB or 1048576, or 'unlimited', or 'topology' (each switch's aggregator_memory)"),
    ("ina-switch-memory-negative", "ina ring:n=16 -n 2 --switch-memory -5MB",
     "netweave: error: --switch-memory: '-5MB' is not a size; write e.g. 100MB, 4MiB or 1048576, or 'unlimited', or 'topology' (each switch's aggregator_memory)"),
    ("ina-strategy-unknown", "ina ring:n=16 -n 2 --strategy magic",
     "netweave: error: Invalid value for '--strategy': 'magic' is not one of 'host', 'straw', 'switchgnn'. (see `netweave ina --help`)"),
    ("ina-order-unknown", "ina ring:n=16 -n 2 --order sorted",
     "netweave: error: Invalid value for '--order': 'sorted' is not one of 'random', 'gamr'. (see `netweave ina --help`)"),
    ("ina-feature-dim-zero", "ina ring:n=16 -n 2 --feature-dim 0",
     "netweave: error: --feature-dim 0 must be positive"),
    ("ina-gbps-zero", "ina ring:n=16 -n 2 --gbps 0",
     "netweave: error: --gbps 0.0 must be positive"),
    ("ina-gbps-negative", "ina ring:n=16 -n 2 --gbps -100",
     "netweave: error: --gbps -100.0 must be positive"),
    ("ina-start-negative", "ina ring:n=16 -n 2 --start -1",
     "netweave: error: --start -1 is not a boundary vertex (one with a neighbour on another worker)"),
    ("ina-start-beyond", "ina ring:n=16 -n 2 --start 16",
     "netweave: error: --start 16 is not a boundary vertex (one with a neighbour on another worker)"),
    ("ina-loss-negative", "ina ring:n=16 -n 2 --loss -0.1",
     "netweave: error: loss rate -0.1 must be in [0, 1)"),
    ("ina-loss-one", "ina ring:n=16 -n 2 --loss 1",
     "netweave: error: loss rate 1.0 must be in [0, 1)"),
    ("ina-loss-nan", "ina ring:n=16 -n 2 --loss nan",
     "netweave: error: loss rate nan must be in [0, 1)"),
    ("ina-buffer-text", "ina ring:n=16 -n 2 --buffer big",
     "netweave: error: --buffer: 'big' is not a size; write e.g. 100MB, 4MiB or 1048576"),
    ("ina-buffer-zero", "ina ring:n=16 -n 2 --buffer 0",
     "netweave: error: buffer 0 B must be positive"),
    ("ina-ecn-text", "ina ring:n=16 -n 2 --ecn high",
     "netweave: error: --ecn: 'high' is not a size; write e.g. 100MB, 4MiB or 1048576"),
    ("ina-background-negative", "ina ring:n=16 -n 2 --background -0.5",
     "netweave: error: background load -0.5 must be in [0, 1)"),
    ("ina-background-above-one", "ina ring:n=16 -n 2 --background 2",
     "netweave: error: background load 2.0 must be in [0, 1)"),
    ("ina-timeout-zero", "ina ring:n=16 -n 2 --timeout-us 0",
     "netweave: error: --timeout-us (timeout_us) must be positive (got 0.0)"),
    ("ina-timeout-negative", "ina ring:n=16 -n 2 --timeout-us -1",
     "netweave: error: --timeout-us (timeout_us) must be positive (got -1.0)"),
    ("ina-topology-unknown", "ina ring:n=16 -n 2 --topology nosuch",
     "netweave: error: unknown topology 'nosuch': not a YAML file and not a builder (dgx1, dgx1x2, pcie8, star, tree, leafspine, fattree, random); run `netweave topology show --help` for the builder specs"),
    ("ina-topology-workers-mismatch", "ina ring:n=16 -n 2 --topology star:n=4",
     "netweave: error: --workers 2 but topology 'star-4' has 4 hosts; make them agree"),
    ("ina-gbps-nan", "ina ring:n=16 -n 2 --gbps nan",
     "netweave: error: --gbps nan must be a finite number of Gb/s, e.g. --gbps 100"),
    ("ina-gbps-inf", "ina ring:n=16 -n 2 --gbps inf",
     "netweave: error: --gbps inf must be a finite number of Gb/s, e.g. --gbps 100"),
    ("ina-timeout-nan", "ina ring:n=16 -n 2 --timeout-us nan",
     "netweave: error: --timeout-us (timeout_us) must be positive (got nan)"),
    ("ina-timeout-inf", "ina ring:n=16 -n 2 --timeout-us inf",
     "netweave: error: --timeout-us (timeout_us) must be a finite number (got inf)"),
    ("ina-background-before-partitioning", "ina reddit-like:scale=0.05 -n 2 --background 2",
     "netweave: error: background load 2.0 must be in [0, 1)"),
    ("ina-topology-dgx1", "ina ring:n=16 -n 8 --topology dgx1",
     "netweave: error: topology 'dgx1': the switch simulator needs hosts on switches, not GPUs"),
    ("ina-method-unknown", "ina ring:n=16 -n 2 --method spectral",
     "netweave: error: Invalid value for '--method': 'spectral' is not one of 'metis', 'metis32', 'random', 'range', 'hierarchical'. (see `netweave ina --help`)"),
    ("ina-dataset-unknown", "ina nosuch -n 2",
     "netweave: error: unknown dataset 'nosuch': not bundled (cora), not a generator (rmat, er, star, ring, reddit-like, products-like) and no such file; run `netweave datasets` for the accepted specs"),
    ("ina-parts-file-missing", "ina ring:n=8 -n 2 --parts-file {d}/missing.npz",
     "netweave: error: {d}/missing.npz: no such file"),
    ("ina-parts-file-garbage", "ina ring:n=8 -n 2 --parts-file {d}/garbage.npz",
     "netweave: error: {d}/garbage.npz: not a readable .npz archive (no zip header)"),
    ("ina-parts-file-truncated", "ina ring:n=8 -n 2 --parts-file {d}/parts_trunc.npz",
     "netweave: error: {d}/parts_trunc.npz: not a readable .npz archive (BadZipFile: File is not a zip file); the file is truncated or corrupt, re-create or re-download it"),
    ("ina-parts-file-three-parts", "ina ring:n=8 -n 2 --parts-file {d}/parts_three.npz",
     "netweave: error: {d}/parts_three.npz has 3 parts but there are 2 workers; partition into as many parts as workers"),
    ("ina-switch-memory-zero", "ina ring:n=16 -n 2 --switch-memory 0",
     "netweave: error: one 512-byte feature needs 4 aggregators but the switch has 0 (0 B); give the switch more memory or use --strategy host"),
    ("ina-ecn-zero", "ina ring:n=16 -n 2 --ecn 0",
     "netweave: error: --ecn (ecn_bytes) must be positive (got 0)"),
    ("ina-ecn-negative", "ina ring:n=16 -n 2 --ecn -1KB",
     "netweave: error: --ecn: '-1KB' is not a size; write e.g. 100MB, 4MiB or 1048576"),
    ("ina-buffer-negative", "ina ring:n=16 -n 2 --buffer -1MB",
     "netweave: error: --buffer: '-1MB' is not a size; write e.g. 100MB, 4MiB or 1048576"),
    ("ina-feature-dim-negative", "ina ring:n=16 -n 2 --feature-dim -8",
     "netweave: error: --feature-dim -8 must be positive"),
    ("ina-workers-text", "ina ring:n=16 -n two",
     "netweave: error: Invalid value for '--workers' / '-n': Input should be a valid integer, unable to parse string as an integer (see `netweave ina --help`)"),
    ("ina-workers-beyond-vertices-small", "ina ring:n=16 -n 17",
     "netweave: error: --workers 17 exceeds the 16 vertices of ring:n=16; use at most 16 (one partition per worker)"),
    ("ina-topology-yaml-bad", "ina ring:n=16 -n 2 --topology {d}/t_link_neg_gbps.yaml",
     "netweave: error: {d}/t_link_neg_gbps.yaml: link 0 (H0–S0): gbps must be a positive number, got -10.0"),
    ("ina-topology-fattree", "ina ring:n=16 -n 2 --topology fattree:k=2",
     "netweave: error: topology 'fattree-2': leaf E0 has no link to spine A1; every leaf must reach every spine"),
    ("ina-parts-file-object", "ina ring:n=8 -n 2 --parts-file {d}/parts_object.npz",
     "netweave: error: {d}/parts_object.npz: member 'parts': holds Python objects (object); this file may only hold numeric arrays"),
    ("ina-loss-text", "ina ring:n=16 -n 2 --loss some",
     "netweave: error: Invalid value for '--loss': Input should be a valid number, unable to parse string as a number (see `netweave ina --help`)"),
    ("ina-verify-value", "ina ring:n=16 -n 2 --verify=yes",
     "netweave: error: Option '--verify' does not take a value. (see `netweave ina --help`)"),
    # -- timeslot
    ("timeslot-order-unknown", "timeslot ring:n=8 --order sorted",
     "netweave: error: Invalid value for '--order': 'sorted' is not one of 'random', 'gamr'. (see `netweave timeslot --help`)"),
    ("timeslot-k-zero", "timeslot ring:n=8 --k 0",
     "netweave: error: --k 0 must be at least 1"),
    ("timeslot-k-negative", "timeslot ring:n=8 --k -1",
     "netweave: error: --k -1 must be at least 1"),
    ("timeslot-k-text", "timeslot ring:n=8 --k one",
     "netweave: error: Invalid value for '--k': Input should be a valid integer, unable to parse string as an integer (see `netweave timeslot --help`)"),
    ("timeslot-start-negative", "timeslot ring:n=8 --start -1",
     "netweave: error: start vertex -1 is not in 0..7"),
    ("timeslot-start-beyond", "timeslot ring:n=8 --start 8",
     "netweave: error: start vertex 8 is not in 0..7"),
    ("timeslot-dataset-unknown", "timeslot nosuch",
     "netweave: error: unknown dataset 'nosuch': not bundled (cora), not a generator (rmat, er, star, ring, reddit-like, products-like) and no such file; run `netweave datasets` for the accepted specs"),
    ("timeslot-dataset-bad-spec", "timeslot ring:n=0",
     "netweave: error: 'ring:n=0': n=0 must be a positive number of vertices"),
    ("timeslot-dataset-missing-file", "timeslot {d}/missing.txt",
     "netweave: error: unknown dataset '{d}/missing.txt': not bundled (cora), not a generator (rmat, er, star, ring, reddit-like, products-like) and no such file; run `netweave datasets` for the accepted specs"),
    ("timeslot-seed-text", "timeslot ring:n=8 --seed x",
     "netweave: error: Invalid value for '--seed': Input should be a valid integer, unable to parse string as an integer (see `netweave timeslot --help`)"),
    ("timeslot-extra-argument", "timeslot ring:n=8 ring:n=9",
     "netweave: error: Got unexpected extra argument(s) (ring:n=9) (see `netweave timeslot --help`)"),
    # -- route (--jobs YAML, --evaluate JSON)
    ("route-no-topology", "route --workers 2",
     "netweave: error: Missing option '--topology'. (see `netweave route --help`)"),
    ("route-topology-unknown", "route --topology nosuch --workers 2",
     "netweave: error: unknown topology 'nosuch': not a YAML file and not a builder (dgx1, dgx1x2, pcie8, star, tree, leafspine, fattree, random); run `netweave topology show --help` for the builder specs"),
    ("route-no-task", "route --topology leafspine:leaves=2,spines=1,hosts=2,ina=1",
     "netweave: error: give exactly one of --jobs FILE and --workers W"),
    ("route-workers-zero", "route --topology leafspine:leaves=2,spines=1,hosts=2,ina=1 --workers 0",
     "netweave: error: --workers 0 must be at least 1"),
    ("route-workers-negative", "route --topology leafspine:leaves=2,spines=1,hosts=2,ina=1 --workers -2",
     "netweave: error: --workers -2 must be at least 1"),
    ("route-workers-too-many", "route --topology leafspine:leaves=2,spines=1,hosts=2,ina=1 --workers 10",
     "netweave: error: --workers 10: the topology has 3 hosts besides the PS"),
    ("route-ps-unknown", "route --topology leafspine:leaves=2,spines=1,hosts=2,ina=1 --workers 2 --ps H9",
     "netweave: error: unknown node 'H9' in topology 'leafspine-2x1x2'"),
    ("route-ps-switch", "route --topology leafspine:leaves=2,spines=1,hosts=2,ina=1 --workers 2 --ps L0",
     "netweave: error: task J0.T0: L0 is a switch, not a host"),
    ("route-algorithm-unknown", "route --topology leafspine:leaves=2,spines=1,hosts=2,ina=1 --workers 2 --algorithm fastest",
     "netweave: error: Invalid value for '--algorithm': 'fastest' is not one of 'aro', 'ecmp', 'grid', 'aggtree', 'ps', 'pahina', 'atp'. (see `netweave route --help`)"),
    ("route-precisions-garbage", "route --topology leafspine:leaves=2,spines=1,hosts=2,ina=1 --workers 2 --algorithm pahina --precisions lots",
     "netweave: error: --precisions 'lots': write it like fp8:5,fp16:3,fp32:2"),
    ("route-precisions-unknown", "route --topology leafspine:leaves=2,spines=1,hosts=2,ina=1 --workers 2 --algorithm pahina --precisions fp7:1",
     "netweave: error: --precisions: unknown precision 'fp7'; use fp8, fp16, fp32, e.g. fp8:5,fp16:3,fp32:2"),
    ("route-precisions-negative", "route --topology leafspine:leaves=2,spines=1,hosts=2,ina=1 --workers 2 --algorithm pahina --precisions fp8:-1,fp16:2",
     "netweave: error: --precisions: weights must be finite and non-negative, e.g. fp8:5,fp16:3,fp32:2"),
    ("route-precisions-zero", "route --topology leafspine:leaves=2,spines=1,hosts=2,ina=1 --workers 2 --algorithm pahina --precisions fp8:0,fp16:0",
     "netweave: error: --precisions: every weight is 0; give at least one precision a positive weight, e.g. fp8:1"),
    ("route-precisions-nan", "route --topology leafspine:leaves=2,spines=1,hosts=2,ina=1 --workers 2 --algorithm pahina --precisions fp8:nan",
     "netweave: error: --precisions: weights must be finite and non-negative, e.g. fp8:5,fp16:3,fp32:2"),
    ("route-precisions-with-aro", "route --topology leafspine:leaves=2,spines=1,hosts=2,ina=1 --workers 2 --algorithm aro --precisions fp8:1,fp16:1",
     "netweave: error: task J0.T0 mixes precisions (fp8, fp16); --algorithm aro does not model mixed precisions: use --algorithm pahina (or atp, grid, ps), or give every worker of the task one precision"),
    ("route-switch-gbps-negative", "route --topology leafspine:leaves=2,spines=1,hosts=2,ina=1 --workers 2 --algorithm pahina --precisions fp8:1 --switch-gbps -10",
     "netweave: error: --switch-gbps -10 must be positive (Gb/s)"),
    ("route-switch-gbps-nan", "route --topology leafspine:leaves=2,spines=1,hosts=2,ina=1 --workers 2 --switch-gbps nan",
     "netweave: error: --switch-gbps nan must be positive (Gb/s)"),
    ("route-time-limit-negative", "route --topology leafspine:leaves=2,spines=1,hosts=2,ina=1 --workers 2 --time-limit -1",
     "netweave: error: --time-limit -1 must be positive (seconds)"),
    ("route-time-limit-zero", "route --topology leafspine:leaves=2,spines=1,hosts=2,ina=1 --workers 2 --time-limit 0",
     "netweave: error: --time-limit 0 must be positive (seconds)"),
    ("route-time-limit-nan", "route --topology leafspine:leaves=2,spines=1,hosts=2,ina=1 --workers 2 --time-limit nan",
     "netweave: error: --time-limit nan must be positive (seconds)"),
    ("route-accelerate-unknown", "route --topology leafspine:leaves=2,spines=1,hosts=2,ina=1 --workers 2 --accelerate turbo",
     "netweave: error: unknown acceleration turbo; use app, sro, qsr"),
    ("route-jobs-and-workers", "route --topology leafspine:leaves=2,spines=1,hosts=2,ina=1 --workers 2 --jobs {d}/j_unknown_host.yaml",
     "netweave: error: give exactly one of --jobs FILE and --workers W"),
    ("route-topology-without-ina", "route --topology star:n=4,ina=0 --workers 2",
     "netweave: error: no INA switch lies on any worker-to-PS path; ARO needs INA switches (use --algorithm ps)"),
    ("route-jobs-empty", "route --topology leafspine:leaves=2,spines=1,hosts=2,ina=1 --algorithm ecmp --jobs {d}/j_empty.yaml",
     "netweave: error: {d}/j_empty.yaml: expected a mapping with a 'jobs' list"),
    ("route-jobs-list", "route --topology leafspine:leaves=2,spines=1,hosts=2,ina=1 --algorithm ecmp --jobs {d}/j_list.yaml",
     "netweave: error: {d}/j_list.yaml: expected a mapping with a 'jobs' list"),
    ("route-jobs-no-jobs", "route --topology leafspine:leaves=2,spines=1,hosts=2,ina=1 --algorithm ecmp --jobs {d}/j_no_jobs.yaml",
     "netweave: error: {d}/j_no_jobs.yaml: expected a mapping with a 'jobs' list"),
    ("route-jobs-jobs-scalar", "route --topology leafspine:leaves=2,spines=1,hosts=2,ina=1 --algorithm ecmp --jobs {d}/j_jobs_scalar.yaml",
     "netweave: error: {d}/j_jobs_scalar.yaml: expected a mapping with a 'jobs' list"),
    ("route-jobs-jobs-empty", "route --topology leafspine:leaves=2,spines=1,hosts=2,ina=1 --algorithm ecmp --jobs {d}/j_jobs_empty.yaml",
     "netweave: error: no aggregation task: give --workers W or a jobs file with tasks"),
    ("route-jobs-no-tasks", "route --topology leafspine:leaves=2,spines=1,hosts=2,ina=1 --algorithm ecmp --jobs {d}/j_no_tasks.yaml",
     "netweave: error: {d}/j_no_tasks.yaml: job 0 needs a 'tasks' list"),
    ("route-jobs-task-no-ps", "route --topology leafspine:leaves=2,spines=1,hosts=2,ina=1 --algorithm ecmp --jobs {d}/j_task_no_ps.yaml",
     "netweave: error: {d}/j_task_no_ps.yaml: job J0 task 0 needs 'ps' and a 'workers' list"),
    ("route-jobs-task-workers-scalar", "route --topology leafspine:leaves=2,spines=1,hosts=2,ina=1 --algorithm ecmp --jobs {d}/j_task_workers_scalar.yaml",
     "netweave: error: {d}/j_task_workers_scalar.yaml: job J0 task 0 needs 'ps' and a 'workers' list"),
    ("route-jobs-unknown-host", "route --topology leafspine:leaves=2,spines=1,hosts=2,ina=1 --algorithm ecmp --jobs {d}/j_unknown_host.yaml",
     "netweave: error: unknown node 'H77' in topology 'leafspine-2x1x2'"),
    ("route-jobs-unknown-ps", "route --topology leafspine:leaves=2,spines=1,hosts=2,ina=1 --algorithm ecmp --jobs {d}/j_unknown_ps.yaml",
     "netweave: error: unknown node 'H99' in topology 'leafspine-2x1x2'"),
    ("route-jobs-ps-switch", "route --topology leafspine:leaves=2,spines=1,hosts=2,ina=1 --algorithm ecmp --jobs {d}/j_ps_switch.yaml",
     "netweave: error: task J0.T0: L0 is a switch, not a host"),
    ("route-jobs-worker-switch", "route --topology leafspine:leaves=2,spines=1,hosts=2,ina=1 --algorithm ecmp --jobs {d}/j_worker_switch.yaml",
     "netweave: error: task J0.T0: S0 is a switch, not a host"),
    ("route-jobs-worker-twice", "route --topology leafspine:leaves=2,spines=1,hosts=2,ina=1 --algorithm ecmp --jobs {d}/j_worker_twice.yaml",
     "netweave: error: task J0.T0 lists a worker twice"),
    ("route-jobs-ps-is-worker", "route --topology leafspine:leaves=2,spines=1,hosts=2,ina=1 --algorithm ecmp --jobs {d}/j_ps_is_worker.yaml",
     "netweave: error: task J0.T0: the PS H0 is also listed as a worker"),
    ("route-jobs-no-workers", "route --topology leafspine:leaves=2,spines=1,hosts=2,ina=1 --algorithm ecmp --jobs {d}/j_no_workers.yaml",
     "netweave: error: task J0.T0 has no workers"),
    ("route-jobs-weight-neg", "route --topology leafspine:leaves=2,spines=1,hosts=2,ina=1 --algorithm ecmp --jobs {d}/j_weight_neg.yaml",
     "netweave: error: job J0: weight -1.0 must be positive"),
    ("route-jobs-weight-zero", "route --topology leafspine:leaves=2,spines=1,hosts=2,ina=1 --algorithm ecmp --jobs {d}/j_weight_zero.yaml",
     "netweave: error: job J0: weight 0.0 must be positive"),
    ("route-jobs-precision-unknown", "route --topology leafspine:leaves=2,spines=1,hosts=2,ina=1 --algorithm ecmp --jobs {d}/j_precision_unknown.yaml",
     "netweave: error: {d}/j_precision_unknown.yaml: job J0 task 0: unknown precision 'fp7'; use fp8, fp16, fp32"),
    ("route-jobs-syntax", "route --topology leafspine:leaves=2,spines=1,hosts=2,ina=1 --algorithm ecmp --jobs {d}/j_syntax.yaml",
     "netweave: error: {d}/j_syntax.yaml: invalid YAML at line 2, column 1 (expected the node content, but found '<stream end>')"),
    ("route-jobs-binary", "route --topology leafspine:leaves=2,spines=1,hosts=2,ina=1 --algorithm ecmp --jobs {d}/j_binary.yaml",
     "netweave: error: {d}/j_binary.yaml: not UTF-8 text (byte 2); expected a YAML file"),
    ("route-jobs-missing", "route --topology leafspine:leaves=2,spines=1,hosts=2,ina=1 --jobs {d}/missing.yaml",
     "netweave: error: {d}/missing.yaml: no such file"),
    ("route-jobs-directory", "route --topology leafspine:leaves=2,spines=1,hosts=2,ina=1 --jobs {d}/dir.yaml",
     "netweave: error: {d}/dir.yaml: is a directory; expected a YAML file"),
    ("route-evaluate-empty", "route --topology leafspine:leaves=2,spines=1,hosts=2,ina=1 --workers 2 --evaluate {d}/r_empty.json",
     "netweave: error: {d}/r_empty.json: not valid JSON (Expecting value, line 1)"),
    ("route-evaluate-garbage", "route --topology leafspine:leaves=2,spines=1,hosts=2,ina=1 --workers 2 --evaluate {d}/r_garbage.json",
     "netweave: error: {d}/r_garbage.json: not valid JSON (Expecting property name enclosed in double quotes, line 1)"),
    ("route-evaluate-list", "route --topology leafspine:leaves=2,spines=1,hosts=2,ina=1 --workers 2 --evaluate {d}/r_list.json",
     "netweave: error: {d}/r_list.json: expected a routes JSON (`netweave route --out`): {'tasks': {NAME: {'ps': NODE, 'paths': {WORKER: [WORKER, …, NODE]}}}}"),
    ("route-evaluate-no-tasks", "route --topology leafspine:leaves=2,spines=1,hosts=2,ina=1 --workers 2 --evaluate {d}/r_no_tasks.json",
     "netweave: error: {d}/r_no_tasks.json: expected a routes JSON (`netweave route --out`): {'tasks': {NAME: {'ps': NODE, 'paths': {WORKER: [WORKER, …, NODE]}}}}"),
    ("route-evaluate-tasks-list", "route --topology leafspine:leaves=2,spines=1,hosts=2,ina=1 --workers 2 --evaluate {d}/r_tasks_list.json",
     "netweave: error: {d}/r_tasks_list.json: expected a routes JSON (`netweave route --out`): {'tasks': {NAME: {'ps': NODE, 'paths': {WORKER: [WORKER, …, NODE]}}}}"),
    ("route-evaluate-binary", "route --topology leafspine:leaves=2,spines=1,hosts=2,ina=1 --workers 2 --evaluate {d}/r_binary.json",
     "netweave: error: {d}/r_binary.json: not UTF-8 text (byte 2); expected a JSON file"),
    ("route-evaluate-deep", "route --topology leafspine:leaves=2,spines=1,hosts=2,ina=1 --workers 2 --evaluate {d}/r_deep.json",
     "netweave: error: {d}/r_deep.json: JSON nested too deeply to read"),
    ("route-evaluate-loop", "route --topology leafspine:leaves=2,spines=1,hosts=2,ina=1 --workers 2 --evaluate {d}/r_loop.json",
     "netweave: error: task J0.T0: the path of H3 (H3 L1 S0 L1 S0 L0 H0) visits L1 twice; a path must not loop"),
    ("route-evaluate-unknown-ps", "route --topology leafspine:leaves=2,spines=1,hosts=2,ina=1 --workers 2 --evaluate {d}/r_unknown_ps.json",
     "netweave: error: unknown node 'H42' in topology 'leafspine-2x1x2' (did you mean 'H2'?)"),
    ("route-evaluate-unknown-node", "route --topology leafspine:leaves=2,spines=1,hosts=2,ina=1 --workers 2 --evaluate {d}/r_unknown_node.json",
     "netweave: error: unknown node 'X9' in topology 'leafspine-2x1x2'"),
    ("route-evaluate-no-link", "route --topology leafspine:leaves=2,spines=1,hosts=2,ina=1 --workers 2 --evaluate {d}/r_no_link.json",
     "netweave: error: task J0.T0: link H2–L0 on the path of H2 does not exist"),
    ("route-evaluate-wrong-end", "route --topology leafspine:leaves=2,spines=1,hosts=2,ina=1 --workers 2 --evaluate {d}/r_wrong_end.json",
     "netweave: error: task J0.T0: the path of H2 must run from H2 to the PS H0, got H2…H1"),
    ("route-evaluate-loop-through-host", "route --topology leafspine:leaves=2,spines=1,hosts=2,ina=1 --workers 2 --evaluate {d}/r_loop_host.json",
     "netweave: error: task J0.T0: the path of H2 (H2 L1 H3 L1 S0 L0 H0) visits L1 twice; a path must not loop"),
    ("route-evaluate-paths-scalar", "route --topology leafspine:leaves=2,spines=1,hosts=2,ina=1 --workers 2 --evaluate {d}/r_paths_scalar.json",
     "netweave: error: {d}/r_paths_scalar.json: task 'J0.T0' must be a mapping with 'ps' (a node name) and 'paths' (worker → list of nodes): {'tasks': {NAME: {'ps': NODE, 'paths': {WORKER: [WORKER, …, NODE]}}}}"),
    ("route-evaluate-missing", "route --topology leafspine:leaves=2,spines=1,hosts=2,ina=1 --workers 2 --evaluate {d}/missing.json",
     "netweave: error: {d}/missing.json: no such file"),
    ("route-evaluate-directory", "route --topology leafspine:leaves=2,spines=1,hosts=2,ina=1 --workers 2 --evaluate {d}/dir.json",
     "netweave: error: {d}/dir.json: is a directory; expected a JSON file"),
    ("route-topology-yaml-bad", "route --topology {d}/t_link_unknown_node.yaml --workers 2",
     "netweave: error: {d}/t_link_unknown_node.yaml: link 2 (H0–NOPE): unknown node 'NOPE'; declare it under nodes:"),
    ("route-ps-with-jobs", "route --topology leafspine:leaves=2,spines=1,hosts=2,ina=1 --jobs {d}/j_unknown_host.yaml --ps H0",
     "netweave: error: unknown node 'H77' in topology 'leafspine-2x1x2'"),
    ("route-workers-text", "route --topology leafspine:leaves=2,spines=1,hosts=2,ina=1 --workers two",
     "netweave: error: Invalid value for '--workers': Input should be a valid integer, unable to parse string as an integer (see `netweave route --help`)"),
    ("route-switch-gbps-zero", "route --topology leafspine:leaves=2,spines=1,hosts=2,ina=1 --workers 2 --switch-gbps 0",
     "netweave: error: --switch-gbps 0 must be positive (Gb/s)"),
    ("route-accelerate-mixed", "route --topology leafspine:leaves=2,spines=1,hosts=2,ina=1 --workers 2 --accelerate app,warp",
     "netweave: error: unknown acceleration warp; use app, sro, qsr"),
    ("route-evaluate-with-algorithm", "route --topology leafspine:leaves=2,spines=1,hosts=2,ina=1 --workers 2 --evaluate {d}/r_loop.json --algorithm ps",
     "netweave: error: task J0.T0: the path of H3 (H3 L1 S0 L1 S0 L0 H0) visits L1 twice; a path must not loop"),
    ("route-evaluate-other-topology", "route --topology star:n=4 --workers 2 --evaluate {d}/r_loop.json",
     "netweave: error: unknown node 'L1' in topology 'star-4'"),
    ("route-precisions-colon-only", "route --topology leafspine:leaves=2,spines=1,hosts=2,ina=1 --workers 2 --algorithm pahina --precisions fp8:",
     "netweave: error: --precisions 'fp8:': write it like fp8:5,fp16:3,fp32:2"),
    ("route-topology-without-hosts", "route --topology dgx1 --workers 2",
     "netweave: error: topology 'dgx1' has no hosts (its workers are GPUs); route needs hosts joined by switches: use star, leafspine, fattree, random or a YAML topology with host and switch nodes"),
    ("route-topology-pcie8", "route --topology pcie8 --workers 2 --algorithm ps",
     "netweave: error: topology 'pcie8' has no hosts (its workers are GPUs); route needs hosts joined by switches: use star, leafspine, fattree, random or a YAML topology with host and switch nodes"),
    ("route-topology-too-big", "route --topology fattree:k=1000 --workers 2",
     "netweave: error: topology 'fattree:k=1000' would have 750,000,000 links and 251,250,000 nodes, above the 1,000,000 links a builder may make; lower k"),
    ("route-accelerate-with-ecmp", "route --topology leafspine:leaves=2,spines=1,hosts=2,ina=1 --workers 2 --algorithm ecmp --accelerate app",
     "netweave: error: --accelerate app applies only to --algorithm aro (ARO's §III-C heuristics), not ecmp; drop --accelerate or use aro"),
    ("route-accelerate-with-pahina", "route --topology leafspine:leaves=2,spines=1,hosts=2,ina=1 --workers 2 --algorithm pahina --accelerate app,sro",
     "netweave: error: --accelerate app,sro applies only to --algorithm aro (ARO's §III-C heuristics), not pahina; drop --accelerate or use aro"),
    ("route-jobs-weight-text", "route --topology leafspine:leaves=2,spines=1,hosts=2,ina=1 --algorithm ecmp --jobs {d}/j_weight_str.yaml",
     "netweave: error: {d}/j_weight_str.yaml: job J0: weight must be a number (the job's model size, e.g. 1.0), got 'heavy'"),
    ("route-jobs-weight-nan", "route --topology leafspine:leaves=2,spines=1,hosts=2,ina=1 --algorithm ecmp --jobs {d}/j_weight_nan.yaml",
     "netweave: error: job J0: weight nan must be a finite positive number"),
    ("route-jobs-ps-list", "route --topology leafspine:leaves=2,spines=1,hosts=2,ina=1 --algorithm ecmp --jobs {d}/j_ps_list.yaml",
     "netweave: error: {d}/j_ps_list.yaml: job J0 task 0: ps must be a name, got ['H0']"),
    ("route-jobs-worker-mapping", "route --topology leafspine:leaves=2,spines=1,hosts=2,ina=1 --algorithm ecmp --jobs {d}/j_worker_mapping.yaml",
     "netweave: error: {d}/j_worker_mapping.yaml: job J0 task 0: workers[0] must be a name, got {'H1': 1}"),
    ("route-jobs-task-unknown-key", "route --topology leafspine:leaves=2,spines=1,hosts=2,ina=1 --algorithm ecmp --jobs {d}/j_task_unknown_key.yaml",
     "netweave: error: {d}/j_task_unknown_key.yaml: job J0 task 0: unknown key 'wrokers'; allowed keys: ps, workers, precision, worker_precision"),
    ("route-jobs-job-unknown-key", "route --topology leafspine:leaves=2,spines=1,hosts=2,ina=1 --algorithm ecmp --jobs {d}/j_job_unknown_key.yaml",
     "netweave: error: {d}/j_job_unknown_key.yaml: job 0: unknown key 'priority'; allowed keys: name, weight, tasks"),
    ("route-jobs-precision-list", "route --topology leafspine:leaves=2,spines=1,hosts=2,ina=1 --algorithm ecmp --jobs {d}/j_precision_list.yaml",
     "netweave: error: {d}/j_precision_list.yaml: job J0 task 0: precision must be a name, got ['fp8']"),
    ("route-jobs-worker-precision-stray", "route --topology leafspine:leaves=2,spines=1,hosts=2,ina=1 --algorithm ecmp --jobs {d}/j_worker_precision_stray.yaml",
     "netweave: error: {d}/j_worker_precision_stray.yaml: job J0 task 0: worker_precision names 'H3', which is not one of its workers"),
    # -- aggsvc demo
    ("aggsvc-unknown-subcommand", "aggsvc start",
     "netweave: error: No such command 'start'. (see `netweave aggsvc --help`)"),
    ("aggsvc-workers-zero", "aggsvc demo --workers 0",
     "netweave: error: aggsvc demo needs workers, epochs and tensors ≥ 1 and 1..8000 values per tensor"),
    ("aggsvc-workers-negative", "aggsvc demo --workers -1",
     "netweave: error: aggsvc demo needs workers, epochs and tensors ≥ 1 and 1..8000 values per tensor"),
    ("aggsvc-workers-huge", "aggsvc demo --workers 100000",
     "netweave: error: aggsvc demo: --workers 100000 / --aggregators 2 exceed the packet's 16-bit wor_id / agg_id (at most 65535 workers)"),
    ("aggsvc-aggregators-negative", "aggsvc demo --aggregators -1",
     "netweave: error: aggsvc demo needs workers, epochs and tensors ≥ 1 and 1..8000 values per tensor"),
    ("aggsvc-loss-negative", "aggsvc demo --loss -0.1",
     "netweave: error: --loss -0.1 must be in [0, 1)"),
    ("aggsvc-loss-above-one", "aggsvc demo --loss 1.5",
     "netweave: error: --loss 1.5 must be in [0, 1)"),
    ("aggsvc-loss-nan", "aggsvc demo --loss nan",
     "netweave: error: --loss nan must be in [0, 1)"),
    ("aggsvc-dup-above-one", "aggsvc demo --dup 2",
     "netweave: error: --dup 2.0 must be in [0, 1)"),
    ("aggsvc-reorder-negative", "aggsvc demo --reorder -1",
     "netweave: error: --reorder -1.0 must be in [0, 1)"),
    ("aggsvc-values-zero", "aggsvc demo --values 0",
     "netweave: error: aggsvc demo needs workers, epochs and tensors ≥ 1 and 1..8000 values per tensor"),
    ("aggsvc-values-negative", "aggsvc demo --values -5",
     "netweave: error: aggsvc demo needs workers, epochs and tensors ≥ 1 and 1..8000 values per tensor"),
    ("aggsvc-values-huge", "aggsvc demo --values 100000000",
     "netweave: error: aggsvc demo needs workers, epochs and tensors ≥ 1 and 1..8000 values per tensor"),
    ("aggsvc-precisions-garbage", "aggsvc demo --precisions lots",
     "netweave: error: --precisions 'lots': write it like fp8:5,fp16:3,fp32:2"),
    ("aggsvc-precisions-unknown", "aggsvc demo --precisions fp7:1",
     "netweave: error: --precisions: unknown precision 'fp7'; use fp8, fp16, fp32, e.g. fp8:5,fp16:3,fp32:2"),
    ("aggsvc-precisions-zero", "aggsvc demo --precisions fp8:0,fp16:0",
     "netweave: error: --precisions: every weight is 0; give at least one precision a positive weight, e.g. fp8:1"),
    ("aggsvc-precisions-negative", "aggsvc demo --precisions fp8:-1",
     "netweave: error: --precisions: weights must be finite and non-negative, e.g. fp8:5,fp16:3,fp32:2"),
    ("aggsvc-precisions-inf", "aggsvc demo --precisions fp8:inf",
     "netweave: error: --precisions: weights must be finite and non-negative, e.g. fp8:5,fp16:3,fp32:2"),
    ("aggsvc-seed-text", "aggsvc demo --seed x",
     "netweave: error: Invalid value for '--seed': Input should be a valid integer, unable to parse string as an integer (see `netweave aggsvc demo --help`)"),
    ("aggsvc-aggregators-huge", "aggsvc demo --aggregators 100000",
     "netweave: error: aggsvc demo: --workers 8 / --aggregators 100000 exceed the packet's 16-bit wor_id / agg_id (at most 65535 workers)"),
    ("aggsvc-workers-text", "aggsvc demo --workers x",
     "netweave: error: Invalid value for '--workers': Input should be a valid integer, unable to parse string as an integer (see `netweave aggsvc demo --help`)"),
    ("aggsvc-extra-argument", "aggsvc demo now",
     "netweave: error: Got unexpected extra argument(s) (now) (see `netweave aggsvc demo --help`)"),
    ("aggsvc-loss-inf", "aggsvc demo --loss inf",
     "netweave: error: --loss inf must be in [0, 1)"),
    ("aggsvc-dup-nan", "aggsvc demo --dup nan",
     "netweave: error: --dup nan must be in [0, 1)"),
    # -- compare
    ("compare-dataset-unknown", "compare nosuch",
     "netweave: error: unknown dataset 'nosuch': not bundled (cora), not a generator (rmat, er, star, ring, reddit-like, products-like) and no such file; run `netweave datasets` for the accepted specs"),
    ("compare-topology-unknown", "compare ring:n=16 --topology nosuch",
     "netweave: error: unknown topology 'nosuch': not a YAML file and not a builder (dgx1, dgx1x2, pcie8, star, tree, leafspine, fattree, random); run `netweave topology show --help` for the builder specs"),
    ("compare-sections-unknown", "compare ring:n=16 --sections magic",
     "netweave: error: unknown section magic; choose from exchange, ina, routing, precision, training"),
    ("compare-seed-text", "compare --seed x",
     "netweave: error: Invalid value for '--seed': Input should be a valid integer, unable to parse string as an integer (see `netweave compare --help`)"),
    ("compare-sections-partly-unknown", "compare ring:n=16 --sections ina,magic",
     "netweave: error: unknown section magic; choose from exchange, ina, routing, precision, training"),
    ("compare-epochs-text", "compare --epochs x",
     "netweave: error: Invalid value for '--epochs': Input should be a valid integer, unable to parse string as an integer (see `netweave compare --help`)"),
    ("compare-topology-bad-yaml", "compare ring:n=16 --topology {d}/t_syntax.yaml",
     "netweave: error: {d}/t_syntax.yaml: invalid YAML at line 3, column 6 (expected ',' or '}', but got ':')"),
    ("compare-dataset-bad-spec", "compare rmat:n=5",
     "netweave: error: 'rmat:n=5' needs the parameter m=…"),
    ("compare-sections-none", "compare ring:n=16 --sections ,",
     "netweave: error: no section given; choose from exchange, ina, routing, precision, training (comma-separated)"),
    ("compare-sections-twice", "compare ring:n=16 --sections ina,ina",
     "netweave: error: section ina given twice in --sections; name each once"),
    ("compare-epochs-zero", "compare --epochs 0",
     "netweave: error: --epochs 0 must be at least 1"),
    ("compare-topology-bad-late-section", "compare --sections routing,exchange --topology nosuch",
     "netweave: error: unknown topology 'nosuch': not a YAML file and not a builder (dgx1, dgx1x2, pcie8, star, tree, leafspine, fattree, random); run `netweave topology show --help` for the builder specs"),
    # -- sweep (YAML configs)
    ("sweep-empty", "sweep {d}/s_empty.yaml --workers 1",
     "netweave: error: {d}/s_empty.yaml: needs 'kind' (exchange, partition, ina, route, precision) and a 'grid' mapping of lists"),
    ("sweep-list", "sweep {d}/s_list.yaml --workers 1",
     "netweave: error: {d}/s_list.yaml: needs 'kind' (exchange, partition, ina, route, precision) and a 'grid' mapping of lists"),
    ("sweep-no-kind", "sweep {d}/s_no_kind.yaml --workers 1",
     "netweave: error: {d}/s_no_kind.yaml: needs 'kind' (exchange, partition, ina, route, precision) and a 'grid' mapping of lists"),
    ("sweep-bad-kind", "sweep {d}/s_bad_kind.yaml --workers 1",
     "netweave: error: {d}/s_bad_kind.yaml: needs 'kind' (exchange, partition, ina, route, precision) and a 'grid' mapping of lists"),
    ("sweep-no-grid", "sweep {d}/s_no_grid.yaml --workers 1",
     "netweave: error: {d}/s_no_grid.yaml: needs 'kind' (exchange, partition, ina, route, precision) and a 'grid' mapping of lists"),
    ("sweep-grid-list", "sweep {d}/s_grid_list.yaml --workers 1",
     "netweave: error: {d}/s_grid_list.yaml: needs 'kind' (exchange, partition, ina, route, precision) and a 'grid' mapping of lists"),
    ("sweep-grid-scalar-value", "sweep {d}/s_grid_scalar_value.yaml --workers 1",
     "netweave: error: {d}/s_grid_scalar_value.yaml: grid.workers must be a non-empty list"),
    ("sweep-grid-empty-value", "sweep {d}/s_grid_empty_value.yaml --workers 1",
     "netweave: error: {d}/s_grid_empty_value.yaml: grid.workers must be a non-empty list"),
    ("sweep-fixed-list", "sweep {d}/s_fixed_list.yaml --workers 1",
     "netweave: error: {d}/s_fixed_list.yaml: 'fixed' must be a mapping"),
    ("sweep-unknown-field", "sweep {d}/s_unknown_field.yaml --workers 1",
     "netweave: error: bad ina parameter 'wrokers': not a field of InaScenario (dataset, workers, topology, switch_memory, strategy, blocking, overlap, order, feature_dim, gbps, seed, start, method, parts_file, verify, sim)"),
    ("sweep-bad-value", "sweep {d}/s_bad_value.yaml --workers 1",
     "netweave: error: --workers -2: propagation across workers needs at least 2"),
    ("sweep-bad-dataset", "sweep {d}/s_bad_dataset.yaml --workers 1",
     "netweave: error: unknown dataset 'nosuch': not bundled (cora), not a generator (rmat, er, star, ring, reddit-like, products-like) and no such file; run `netweave datasets` for the accepted specs"),
    ("sweep-route-no-workers", "sweep {d}/s_route_no_workers.yaml --workers 1",
     "netweave: error: a case of kind route needs workers (in grid or fixed)"),
    ("sweep-route-bad-algorithm", "sweep {d}/s_route_bad_algorithm.yaml --workers 1",
     "netweave: error: unknown algorithm 'fastest'; use one of aro, ecmp, grid, aggtree, ps, pahina, atp"),
    ("sweep-syntax", "sweep {d}/s_syntax.yaml --workers 1",
     "netweave: error: {d}/s_syntax.yaml: invalid YAML at line 3, column 1 (expected ',' or ']', but got '<stream end>')"),
    ("sweep-binary", "sweep {d}/s_binary.yaml --workers 1",
     "netweave: error: {d}/s_binary.yaml: not UTF-8 text (byte 2); expected a YAML file"),
    ("sweep-alias", "sweep {d}/s_alias.yaml --workers 1",
     "netweave: error: {d}/s_alias.yaml: invalid YAML at line 1, column 4 (anchors and aliases (&name, *name) are not supported; write the values out)"),
    ("sweep-missing-file", "sweep {d}/missing.yaml",
     "netweave: error: {d}/missing.yaml: no such file"),
    ("sweep-directory", "sweep {d}/dir.yaml",
     "netweave: error: {d}/dir.yaml: is a directory; expected a YAML file"),
    ("sweep-no-config", "sweep",
     "netweave: error: Missing argument 'config_file'. (see `netweave sweep --help`)"),
    ("sweep-workers-zero", "sweep {d}/s_bad_kind.yaml --workers 0",
     "netweave: error: Invalid value for '--workers': Input should be greater than or equal to 1 (see `netweave sweep --help`)"),
    ("sweep-bad-method", "sweep {d}/s_bad_method.yaml --workers 1",
     "netweave: error: unknown partition method 'spectral'; choose one of metis, metis32, random, range, hierarchical"),
    ("sweep-precision-bad-mix", "sweep {d}/s_precision_bad_mix.yaml --workers 1",
     "netweave: error: --precisions: unknown precision 'fp7'; use fp8, fp16, fp32, e.g. fp8:5,fp16:3,fp32:2"),
    ("sweep-workers-negative", "sweep {d}/s_ok.yaml --workers -1",
     "netweave: error: Invalid value for '--workers': Input should be greater than or equal to 1 (see `netweave sweep --help`)"),
    ("sweep-workers-text", "sweep {d}/s_ok.yaml --workers many",
     "netweave: error: Invalid value for '--workers': Input should be a valid integer, unable to parse string as an integer (see `netweave sweep --help`)"),
    ("sweep-processes-zero", "sweep {d}/s_bad_kind.yaml --processes 0",
     "netweave: error: Invalid value for '--processes': Input should be greater than or equal to 1 (see `netweave sweep --help`)"),
    ("sweep-processes-and-old-name-disagree", "sweep {d}/s_ok.yaml --processes 1 --workers 2",
     "netweave: error: --processes 1 and --workers 2 disagree; --workers is the old name of --processes: give one"),
    ("sweep-ray-bad-address", "sweep {d}/s_ok.yaml --ray nowhere",
     "netweave: error: bad Ray address 'nowhere': use auto, local, HOST:PORT or ray://HOST:PORT"),
    ("sweep-workers-text-value", "sweep {d}/s_workers_str.yaml --workers 1",
     "netweave: error: bad ina parameter 'workers': expected an integer, got 'two'"),
    ("sweep-parts-list-value", "sweep {d}/s_parts_list.yaml --workers 1",
     "netweave: error: bad partition parameter 'parts': expected an integer or null, got [2, 3]"),
    ("sweep-workers-bool", "sweep {d}/s_workers_bool.yaml --workers 1",
     "netweave: error: bad route parameter 'workers': expected an integer or null, got True"),
    ("sweep-loss-text", "sweep {d}/s_loss_str.yaml --workers 1",
     "netweave: error: bad ina parameter 'loss': expected a finite number, got 'lots'"),
    ("sweep-gbps-nan", "sweep {d}/s_gbps_nan.yaml --workers 1",
     "netweave: error: bad ina parameter 'gbps': expected a finite number, got nan"),
    ("sweep-precisions-text-weight", "sweep {d}/s_precisions_str_weight.yaml --workers 1",
     "netweave: error: bad precision parameter 'precisions': expected a mapping of strings to finite numbers, or null, got {'fp8': 'x'}"),
    ("sweep-unknown-top-key", "sweep {d}/s_unknown_top_key.yaml --workers 1",
     "netweave: error: {d}/s_unknown_top_key.yaml: unknown key 'workers'; a sweep file has name, kind, grid and fixed (a case's parameters go in grid or fixed)"),
    ("sweep-dup-key", "sweep {d}/s_dup_key.yaml --workers 1",
     "netweave: error: {d}/s_dup_key.yaml: invalid YAML at line 2, column 22 (duplicate key 'workers', first given at line 2; give each key once per mapping)"),
    ("sweep-accelerate-pahina", "sweep {d}/s_accelerate_pahina.yaml --workers 1",
     "netweave: error: --accelerate app applies only to --algorithm aro (ARO's §III-C heuristics), not pahina; drop --accelerate or use aro"),
    # -- repro
    ("repro-unknown-name", "repro nosuch",
     "netweave: error: unknown reproduction 'nosuch'; `netweave repro --list` shows dgcl-table8, dgcl-fig8, switchgnn-fig18, switchgnn-fig17, aro-fig7, pahina-fig9, mgg-fig11"),
    ("repro-scale-unknown", "repro nosuch --scale huge",
     "netweave: error: unknown reproduction 'nosuch'; `netweave repro --list` shows dgcl-table8, dgcl-fig8, switchgnn-fig18, switchgnn-fig17, aro-fig7, pahina-fig9, mgg-fig11"),
    ("repro-scale-unknown-known-name", "repro all --scale huge",
     "netweave: error: unknown scale 'huge'; use one of tiny, reduced, full"),
    ("repro-workers-zero", "repro all --workers 0",
     "netweave: error: Invalid value for '--workers': Input should be greater than or equal to 1 (see `netweave repro --help`)"),
    ("repro-full-and-scale", "repro all --full --scale tiny",
     "netweave: error: --full contradicts --scale tiny; give one of them"),
    ("repro-known-scale-unknown", "repro dgcl-table8 --scale huge",
     "netweave: error: unknown scale 'huge'; use one of tiny, reduced, full"),
    ("repro-known-full-and-scale", "repro dgcl-table8 --full --scale reduced",
     "netweave: error: --full contradicts --scale reduced; give one of them"),
    ("repro-known-workers-zero", "repro dgcl-table8 --workers 0",
     "netweave: error: Invalid value for '--workers': Input should be greater than or equal to 1 (see `netweave repro --help`)"),
    ("repro-processes-zero", "repro dgcl-table8 --processes 0",
     "netweave: error: Invalid value for '--processes': Input should be greater than or equal to 1 (see `netweave repro --help`)"),
    ("repro-ray-bad-address", "repro dgcl-table8 --scale tiny --ray nowhere",
     "netweave: error: bad Ray address 'nowhere': use auto, local, HOST:PORT or ray://HOST:PORT"),
    ("repro-empty-name", "repro ''",
     "netweave: error: unknown reproduction ''; `netweave repro --list` shows dgcl-table8, dgcl-fig8, switchgnn-fig18, switchgnn-fig17, aro-fig7, pahina-fig9, mgg-fig11"),
    ("repro-name-case", "repro DGCL-TABLE8",
     "netweave: error: unknown reproduction 'DGCL-TABLE8'; `netweave repro --list` shows dgcl-table8, dgcl-fig8, switchgnn-fig18, switchgnn-fig17, aro-fig7, pahina-fig9, mgg-fig11"),
    # -- train (options checked before any process starts); last, as they need torch (see PRELOAD_TRAIN)
    ("train-workers-zero", "train er:n=32,m=64,classes=2 --workers 0",
     "netweave: error: --workers 0 must be at least 1"),
    ("train-workers-negative", "train er:n=32,m=64,classes=2 -n -2",
     "netweave: error: --workers -2 must be at least 1"),
    ("train-epochs-zero", "train er:n=32,m=64,classes=2 --epochs 0",
     "netweave: error: --epochs 0 must be at least 1"),
    ("train-epochs-negative", "train er:n=32,m=64,classes=2 --epochs -5",
     "netweave: error: --epochs -5 must be at least 1"),
    ("train-hidden-zero", "train er:n=32,m=64,classes=2 --hidden 0",
     "netweave: error: --hidden 0 must be at least 1"),
    ("train-hidden-negative", "train er:n=32,m=64,classes=2 --hidden -16",
     "netweave: error: --hidden -16 must be at least 1"),
    ("train-layers-zero", "train er:n=32,m=64,classes=2 --layers 0",
     "netweave: error: --layers 0 must be at least 1"),
    ("train-lr-negative", "train er:n=32,m=64,classes=2 --lr -0.1",
     "netweave: error: --lr -0.1 must be positive"),
    ("train-lr-zero", "train er:n=32,m=64,classes=2 --lr 0",
     "netweave: error: --lr 0.0 must be positive"),
    ("train-lr-nan", "train er:n=32,m=64,classes=2 --lr nan",
     "netweave: error: --lr nan must be positive"),
    ("train-weight-decay-negative", "train er:n=32,m=64,classes=2 --weight-decay -1",
     "netweave: error: --weight-decay -1.0 must be non-negative"),
    ("train-weight-decay-nan", "train er:n=32,m=64,classes=2 --weight-decay nan",
     "netweave: error: --weight-decay nan must be non-negative"),
    ("train-dropout-above-one", "train er:n=32,m=64,classes=2 --dropout 1.5",
     "netweave: error: --dropout 1.5 must be in [0, 1)"),
    ("train-dropout-one", "train er:n=32,m=64,classes=2 --dropout 1",
     "netweave: error: --dropout 1.0 must be in [0, 1)"),
    ("train-dropout-negative", "train er:n=32,m=64,classes=2 --dropout -0.1",
     "netweave: error: --dropout -0.1 must be in [0, 1)"),
    ("train-timeout-zero", "train er:n=32,m=64,classes=2 --timeout 0",
     "netweave: error: --timeout 0.0 must be positive"),
    ("train-timeout-negative", "train er:n=32,m=64,classes=2 --timeout -1",
     "netweave: error: --timeout -1.0 must be positive"),
    ("train-timeout-nan", "train er:n=32,m=64,classes=2 --timeout nan",
     "netweave: error: --timeout nan must be positive"),
    ("train-device-unknown", "train er:n=32,m=64,classes=2 --device tpu",
     "netweave: error: --device tpu must be cpu or cuda"),
    ("train-no-labels", "train ring:n=8",
     "netweave: error: ring:n=8 has no class labels to train on; use a labelled dataset or a generator with classes=…"),
    ("train-dataset-unknown", "train nosuch",
     "netweave: error: unknown dataset 'nosuch': not bundled (cora), not a generator (rmat, er, star, ring, reddit-like, products-like) and no such file; run `netweave datasets` for the accepted specs"),
    ("train-dataset-bad-spec", "train er:n=32",
     "netweave: error: 'er:n=32' needs the parameter m=…"),
    ("train-allreduce-with-plan", "train ring:n=8 -n 2 --comm allreduce --plan-file {d}/plan_ok.npz",
     "netweave: error: --plan-file needs --comm p2p or spst"),
    ("train-topology-unknown", "train er:n=32,m=64,classes=2,feat=4 -n 2 --topology nosuch",
     "netweave: error: unknown topology 'nosuch': not a YAML file and not a builder (dgx1, dgx1x2, pcie8, star, tree, leafspine, fattree, random); run `netweave topology show --help` for the builder specs"),
    ("train-topology-workers-mismatch", "train er:n=32,m=64,classes=2,feat=4 -n 2 --topology star:n=4",
     "netweave: error: topology star-4 has 4 workers but --workers is 2; pass --workers 4 or another topology"),
    ("train-topology-bad-yaml", "train er:n=32,m=64,classes=2,feat=4 -n 2 --topology {d}/t_dup_names.yaml",
     "netweave: error: {d}/t_dup_names.yaml: duplicate node name 'H0' (nodes 0 and 3); names must be unique"),
    ("train-parts-file-missing", "train er:n=32,m=64,classes=2,feat=4 -n 2 --parts-file {d}/missing.npz",
     "netweave: error: {d}/missing.npz: no such file"),
    ("train-parts-file-empty", "train er:n=32,m=64,classes=2,feat=4 -n 2 --parts-file {d}/empty.npz",
     "netweave: error: {d}/empty.npz: not a readable .npz archive (no zip header)"),
    ("train-parts-file-truncated", "train er:n=32,m=64,classes=2,feat=4 -n 2 --parts-file {d}/parts_trunc.npz",
     "netweave: error: {d}/parts_trunc.npz: not a readable .npz archive (BadZipFile: File is not a zip file); the file is truncated or corrupt, re-create or re-download it"),
    ("train-parts-file-wrong-size", "train er:n=32,m=64,classes=2,feat=4 -n 2 --parts-file {d}/parts_ok.npz",
     "netweave: error: {d}/parts_ok.npz has 8 vertices but the graph has 32; partition the same dataset spec"),
    ("train-parts-file-three-parts", "train er:n=8,m=12,classes=2,feat=4 -n 2 --parts-file {d}/parts_three.npz",
     "netweave: error: {d}/parts_three.npz has 3 parts but there are 2 workers; partition into as many parts as workers"),
    ("train-plan-file-missing", "train er:n=32,m=64,classes=2,feat=4 -n 2 --plan-file {d}/missing.npz",
     "netweave: error: {d}/missing.npz: no such file"),
    ("train-plan-file-garbage", "train er:n=32,m=64,classes=2,feat=4 -n 2 --plan-file {d}/garbage.npz",
     "netweave: error: {d}/garbage.npz: not a readable .npz archive (no zip header)"),
    ("train-plan-file-truncated", "train er:n=32,m=64,classes=2,feat=4 -n 2 --plan-file {d}/plan_trunc.npz",
     "netweave: error: {d}/plan_trunc.npz: not a readable .npz archive (BadZipFile: File is not a zip file); the file is truncated or corrupt, re-create or re-download it"),
    ("train-plan-file-not-plan", "train er:n=32,m=64,classes=2,feat=4 -n 2 --plan-file {d}/plan_nokey.npz",
     "netweave: error: {d}/plan_nokey.npz: not a netweave plan (missing hop_stage, hop_src, hop_dst, hop_vertex, feature_bytes, workers); write one with `netweave plan --out`"),
    ("train-plan-file-other-graph", "train er:n=32,m=64,classes=2,feat=4 -n 2 --plan-file {d}/plan_ok.npz",
     "netweave: error: {d}/plan_ok.npz was planned for another partition of er:n=32,m=64,classes=2,feat=4; pass its partition with --parts-file, or re-plan"),
    ("train-plan-file-bad-hop", "train er:n=8,m=12,classes=2,feat=4 -n 2 --plan-file {d}/plan_bad_hop.npz",
     "netweave: error: {d}/plan_bad_hop.npz was planned for another partition of er:n=8,m=12,classes=2,feat=4; pass its partition with --parts-file, or re-plan"),
    ("train-workers-beyond-vertices", "train er:n=8,m=12,classes=2,feat=4 -n 9",
     "netweave: error: er:n=8,m=12,classes=2,feat=4 has 8 vertices, fewer than --workers 9"),
    ("train-layers-negative", "train er:n=32,m=64,classes=2,feat=4 --layers -1",
     "netweave: error: --layers -1 must be at least 1"),
    ("train-hidden-text", "train er:n=32,m=64,classes=2,feat=4 --hidden wide",
     "netweave: error: Invalid value for '--hidden': Input should be a valid integer, unable to parse string as an integer (see `netweave train --help`)"),
    ("train-normalize-value", "train er:n=32,m=64,classes=2,feat=4 --raw-features=1",
     "netweave: error: Option '--raw-features' does not take a value. (see `netweave train --help`)"),
    ("train-lr-inf", "train er:n=32,m=64,classes=2 --lr inf",
     "netweave: error: --lr inf must be a finite number, e.g. --lr 0.01"),
    ("train-weight-decay-inf", "train er:n=32,m=64,classes=2 --weight-decay inf",
     "netweave: error: --weight-decay inf must be a finite number, e.g. --weight-decay 5e-4"),
    ("train-timeout-inf", "train er:n=32,m=64,classes=2 --timeout inf",
     "netweave: error: --timeout inf must be a finite number of seconds, e.g. --timeout 120"),
    ("train-plan-file-one-worker", "train er:n=8,m=12,classes=2,feat=4 --plan-file {d}/plan_ok.npz",
     "netweave: error: --plan-file needs --workers 2 or more (a plan exchanges embeddings between workers; --workers is 1); pass the plan's worker count"),
    ("train-classes-one", "train er:n=32,m=64,classes=1",
     "netweave: error: 'er:n=32,m=64,classes=1': classes=1 must be at least 2 (labels need two classes or more); leave classes out for a graph without labels"),
    # -- testbed (checked before anything is created, root or not)
    ("testbed-train-routing", "testbed train --routing magic",
     "netweave: error: --routing 'magic': use one of pahina, atp, grid, ps, aro, ecmp, ring"),
    ("testbed-train-model", "testbed train --model vgg16",
     "netweave: error: --model 'vgg16': use one of lenet5, resnet18, resnet50"),
    ("testbed-train-data", "testbed train --data cifar10",
     "netweave: error: --data 'cifar10': use one of digits, cifar-synthetic"),
    ("testbed-train-steps", "testbed train --steps 0", "netweave: error: --steps 0: give at least 1"),
    ("testbed-train-workers-zero", "testbed train --workers 0", "netweave: error: --workers 0: give at least 1"),
    ("testbed-train-workers-disagree", "testbed train --workers 3 --precisions fp8:2,fp16:2",
     "netweave: error: --precisions fp8:2,fp16:2 gives 4 workers, --workers 3: make them agree (or give only one of them)"),
    ("testbed-train-small-topology", "testbed train --topology star:n=3 --precisions fp8:2,fp16:2",
     "netweave: error: topology star-3 has 3 hosts; 4 workers and a PS need 5"),
    ("testbed-train-fractional-workers", "testbed train --precisions fp8:1.5",
     "netweave: error: --precisions fp8:1.5: give whole worker counts, e.g. fp8:2,fp16:2"),
    ("testbed-train-unknown-precision", "testbed train --precisions fp9:2",
     "netweave: error: --precisions: unknown precision 'fp9'; use fp8, fp16, fp32, e.g. fp8:5,fp16:3,fp32:2"),
    ("testbed-train-batch", "testbed train --batch 7 --precisions fp8:2",
     "netweave: error: --batch 7 must be a multiple of the 2 workers"),
    ("testbed-gnn-dataplane", "testbed gnn cora --dataplane fpga", "netweave: error: --dataplane 'fpga': use auto, xdp or user"),
    ("testbed-gnn-overlap-user", "testbed gnn cora --dataplane user --overlap",
     "netweave: error: --overlap: overlapped blocks need the kernel data plane (--dataplane auto or xdp)"),
    ("testbed-up-scale", "testbed up star:n=2 --scale 2",
     "netweave: error: --scale 2 must be in (0, 1]: the emulated rates are the topology's times the scale"),
    # -- issue 29: names that would reach a command language, routes of the wrong shape, FIFOs, a huge grid
    ("topology-name-newline", "topology show {d}/t_name_newline.yaml", "netweave: error: {d}/t_name_newline.yaml: node 1: the name 'H1\\nnetns exec nwtx-n0 touch /tmp/pwned' is not allowed; a node name is 1 to 64 letters, digits, '_', '.' or '-', starting with a letter or digit"),
    ("topology-name-nul", "topology show {d}/t_name_nul.yaml", "netweave: error: {d}/t_name_nul.yaml: node 1: the name 'H1\\x00' is not allowed; a node name is 1 to 64 letters, digits, '_', '.' or '-', starting with a letter or digit"),
    ("topology-name-space", "topology show {d}/t_name_space.yaml", "netweave: error: {d}/t_name_space.yaml: node 1: the name 'H1 type veth' is not allowed; a node name is 1 to 64 letters, digits, '_', '.' or '-', starting with a letter or digit"),
    ("testbed-up-name-newline", "testbed up {d}/t_name_newline.yaml", "netweave: error: {d}/t_name_newline.yaml: node 1: the name 'H1\\nnetns exec nwtx-n0 touch /tmp/pwned' is not allowed; a node name is 1 to 64 letters, digits, '_', '.' or '-', starting with a letter or digit"),
    ("testbed-train-name-newline", "testbed train --precisions fp8:2 --topology {d}/t_name_newline.yaml", "netweave: error: {d}/t_name_newline.yaml: node 1: the name 'H1\\nnetns exec nwtx-n0 touch /tmp/pwned' is not allowed; a node name is 1 to 64 letters, digits, '_', '.' or '-', starting with a letter or digit"),
    ("testbed-up-routes-task-string", "testbed up star:n=2 --routes {d}/r_task_string.json", "netweave: error: {d}/r_task_string.json: task 'T' must be a mapping with 'ps' (a node name) and 'paths' (worker → list of nodes): {'tasks': {NAME: {'ps': NODE, 'paths': {WORKER: [WORKER, …, NODE]}}}}"),
    ("testbed-up-routes-paths-list", "testbed up star:n=2 --routes {d}/r_paths_list.json", "netweave: error: {d}/r_paths_list.json: task 'T' must be a mapping with 'ps' (a node name) and 'paths' (worker → list of nodes): {'tasks': {NAME: {'ps': NODE, 'paths': {WORKER: [WORKER, …, NODE]}}}}"),
    ("testbed-up-routes-no-paths", "testbed up star:n=2 --routes {d}/r_no_paths.json", "netweave: error: {d}/r_no_paths.json: task 'T' must be a mapping with 'ps' (a node name) and 'paths' (worker → list of nodes): {'tasks': {NAME: {'ps': NODE, 'paths': {WORKER: [WORKER, …, NODE]}}}}"),
    ("testbed-up-routes-path-string", "testbed up star:n=2 --routes {d}/r_path_string.json", "netweave: error: {d}/r_path_string.json: task 'T': the path of 'H1' must be a non-empty list of node names, e.g. ['H1', …, 'H0']"),
    ("route-evaluate-path-string", "route --topology star:n=2 --workers 1 --evaluate {d}/r_path_string.json", "netweave: error: {d}/r_path_string.json: task 'T': the path of 'H1' must be a non-empty list of node names, e.g. ['H1', …, 'H0']"),
    ("topology-fifo", "topology show {d}/fifo.yaml", "netweave: error: {d}/fifo.yaml: not a regular file (a device, pipe or socket); expected a topology file"),
    ("sweep-fifo", "sweep {d}/fifo.yaml --out sweep-out", "netweave: error: {d}/fifo.yaml: not a regular file (a device, pipe or socket); expected a YAML file"),
    ("route-jobs-fifo", "route --topology star:n=2 --jobs {d}/fifo.yaml", "netweave: error: {d}/fifo.yaml: not a regular file (a device, pipe or socket); expected a YAML file"),
    ("route-evaluate-fifo", "route --topology star:n=2 --workers 1 --evaluate {d}/fifo.json", "netweave: error: {d}/fifo.json: not a regular file (a device, pipe or socket); expected a JSON file"),
    ("testbed-up-fifo", "testbed up {d}/fifo.yaml", "netweave: error: {d}/fifo.yaml: not a regular file (a device, pipe or socket); expected a topology file"),
    ("testbed-up-routes-fifo", "testbed up star:n=2 --routes {d}/fifo.json", "netweave: error: {d}/fifo.json: not a regular file (a device, pipe or socket); expected a JSON file"),
    ("plan-validate-100k-workers", "plan --validate {d}/plan_100k_workers.npz",
     "netweave: error: {d}/plan_100k_workers.npz: 100,000 workers for a partition of 8 vertices; a plan has at least one worker and at most one per vertex"),
    ("train-100k-local-workers", "train er:n=200000,m=400000,classes=2 --workers 100000",
     "netweave: error: --workers 100000: 100,000 local training processes: needs about 30,000.0 GB of memory but only {GB} GB is available; use fewer workers, or start one process per worker under torchrun on several machines (README: Training)"),
    ("sweep-huge-grid", "sweep {d}/s_huge_grid.yaml --out sweep-out", "netweave: error: the sweep's grid has 1,000,000,000 cases (1000 × 1000 × 1000); at most 100,000 run in one sweep: split it into several sweep files or move values to 'fixed'"),
]


@pytest.fixture(scope="module")
def inputs(tmp_path_factory) -> Path:
    preload(tmp_path_factory.mktemp("warm-up"))
    d = tmp_path_factory.mktemp("hostile-inputs")
    make_inputs(d)
    return d


def expand(text: str, d: Path) -> str:
    return text.replace("{d}", str(d))


def matches(line: str, expected: str) -> bool:
    """``line == expected``, except that ``{GB}`` in ``expected`` stands for a number such as ``1.9`` or
    ``1,234.5``: the memory this process may still use (it depends on the machine)."""
    if "{GB}" not in expected:
        return line == expected
    return re.fullmatch(re.escape(expected).replace(re.escape("{GB}"), r"[0-9][0-9,]*\.[0-9]"), line) is not None


@pytest.mark.parametrize("argv, expected", [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_bad_input_is_one_error_line(inputs, tmp_path, argv, expected):
    cwd, scratch = tmp_path / "cwd", tmp_path / "scratch"
    cwd.mkdir()
    scratch.mkdir()
    args = [expand(word, inputs) for word in shlex.split(argv)]
    if args[0] == "train":
        preload(scratch, train=True)
    before = tree(inputs)
    run = run_cli(args, cwd, scratch)
    shown = f"netweave {shlex.join(args)}\nrc={run.rc}\nstdout={run.stdout[-1000:]!r}\nstderr={run.stderr[-3000:]}"
    assert "Traceback" not in run.stderr, shown
    assert run.rc == 2, shown
    assert run.stderr.endswith("\n") and run.stderr.count("\n") == 1, shown
    line = run.stderr.rstrip("\n")
    assert line.startswith(PREFIX), shown
    assert matches(line, expand(expected, inputs)), f"{shown}\nexpected: {expand(expected, inputs)}"
    assert run.stdout == "", shown
    assert tree(cwd) == set(), f"{shown}\nwrote {sorted(tree(cwd))}"
    assert tree(inputs) == before, f"{shown}\nwrote beside the inputs: {sorted(tree(inputs) - before)}"


def test_the_table_covers_every_command():
    """Each sub-command (except those excluded for now: kernels bench) has rows."""
    commands = {"datasets", "graph", "partition", "plan", "train", "ina", "timeslot", "route", "aggsvc", "compare",
                "sweep", "repro", "topology"}
    firsts = {shlex.split(argv)[0] for _, argv, _ in CASES}
    assert commands <= firsts, sorted(commands - firsts)
    assert len(CASES) >= 180
    assert len({c[0] for c in CASES}) == len(CASES), "ids are unique"


def test_the_harness_sees_output_status_and_files(inputs, tmp_path):
    """A run that succeeds is seen as one: its exit status, its stdout (JSON and rich tables), its
    stderr and the file it writes in its working directory."""
    cwd, scratch = tmp_path / "cwd", tmp_path / "scratch"
    cwd.mkdir()
    scratch.mkdir()
    run = run_cli(["datasets", "--json"], cwd, scratch)
    assert run.rc == 0 and "generators" in json.loads(run.stdout), run.stderr
    run = run_cli(["datasets"], cwd, scratch)
    assert run.rc == 0 and "generators" in run.stdout and run.stderr == "", run.stderr
    run = run_cli(["topology", "export", "star:n=2", "--out", "t.yaml"], cwd, scratch)
    assert run.rc == 0 and run.stderr.startswith("wrote t.yaml") and tree(cwd) == {"t.yaml"}, run.stderr


def test_rows_run_under_the_memory_cap(inputs, tmp_path):
    """The child's address space is capped: the memory netweave sees as available is below the cap."""
    cwd, scratch = tmp_path / "cwd", tmp_path / "scratch"
    cwd.mkdir()
    scratch.mkdir()
    run = run_cli(["graph", "stats", "reddit-like:scale=1"], cwd, scratch)
    found = re.search(r"only ([0-9][0-9,]*\.[0-9]) GB is available", run.stderr)
    assert run.rc == 2 and found, run.stderr
    assert float(found.group(1).replace(",", "")) <= MEMORY_LIMIT / 1e9
