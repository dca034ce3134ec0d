"""docs/formats.md describes the formats the code reads and writes, and examples/ holds a file of each
input format that loads and runs (issue 33): a key the code accepts but the page does not name, or
an example that no longer loads, fails here."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest

REPO = Path(__file__).resolve().parents[1]

DOC = (REPO / "docs" / "formats.md").read_text()
EXAMPLES = REPO / "examples"


def documented(key: str) -> bool:
    return re.search(rf"`{re.escape(key)}`", DOC) is not None


def test_every_topology_and_jobs_key_is_documented():
    from netweave.route.jobs import JOB_KEYS, TASK_KEYS
    from netweave.topology.topology import NAME_RULE, NODE_KINDS
    from netweave.topology.yaml_io import LINK_KEYS, NODE_KEYS

    missing = [k for k in sorted(NODE_KEYS | LINK_KEYS) + list(JOB_KEYS) + list(TASK_KEYS) + list(NODE_KINDS)
               if not documented(k)]
    assert not missing, f"docs/formats.md does not name {missing}"
    assert "1 to 64 letters, digits, `_`, `.` or `-`, starting with a letter or digit" in DOC
    for name, ok in (("G0", True), ("rack1.host07", True), ("-x", False), ("a" * 65, False)):
        assert bool(NAME_RULE.fullmatch(name)) == ok


def test_every_sweep_key_and_kind_is_documented():
    from netweave.scenarios.fields import KINDS
    from netweave.sweep import CONFIG_KEYS, MAX_CASES

    assert all(documented(k) for k in CONFIG_KEYS) and " | ".join(KINDS) in DOC and f"{MAX_CASES:,}" in DOC


def test_every_npz_member_is_documented(tmp_path):
    """The members the writers write are the members the page lists."""
    from netweave.graph import load_dataset
    from netweave.partition import comm_relation, metis_partition
    from netweave.plan import p2p_plan, worker_links
    from netweave.topology import load_topology_spec

    g = load_dataset("cora")
    p = metis_partition(g, 4, seed=0)
    g.save(tmp_path / "g.npz")
    p.save(tmp_path / "p.npz")
    p2p_plan(comm_relation(g, p), worker_links(load_topology_spec("star:n=4")), 64).save(tmp_path / "plan.npz")
    for name in ("g", "p", "plan"):
        members = np.load(tmp_path / f"{name}.npz", allow_pickle=False).files
        assert all(documented(m) for m in members), (name, [m for m in members if not documented(m)])


def test_run_metadata_keys_are_documented():
    from netweave.run_info import run_metadata

    assert all(documented(k) for k in run_metadata())


@pytest.mark.parametrize("name", ["clos.yaml"])
def test_example_topology_loads(name):
    from netweave.topology import load_topology

    topo = load_topology(EXAMPLES / name)
    assert topo.workers and any(n.ina for n in topo.nodes)


@pytest.mark.parametrize("name", ["jobs.yaml", "jobs-mixed.yaml"])
def test_example_jobs_route_on_the_example_topology(name, tmp_path):
    from netweave.route.plan import read_routes_tasks
    from netweave.scenarios import RouteCheck, RouteScenario

    algorithm = "pahina" if "mixed" in name else "aro"
    r = RouteScenario(topology=str(EXAMPLES / "clos.yaml"), jobs_file=str(EXAMPLES / name), algorithm=algorithm).run()
    r.save(tmp_path / "routes.json")
    tasks = read_routes_tasks(tmp_path / "routes.json")
    assert tasks and all(path[-1] == t["ps"] for t in tasks.values() for path in t["paths"].values())
    if algorithm == "aro":
        checked = RouteCheck(topology=str(EXAMPLES / "clos.yaml"), routes_file=str(tmp_path / "routes.json"),
                             jobs_file=str(EXAMPLES / name)).run().summary()
        assert checked["min_rate_gbps"] == pytest.approx(r.min_rate_gbps)


@pytest.mark.parametrize("name", ["sweep-ina-memory.yaml", "sweep-route.yaml"])
def test_example_sweeps_build_every_case(name, monkeypatch):
    from netweave.scenarios.fields import scenario_from
    from netweave.sweep import cases, load_config

    monkeypatch.chdir(REPO)  # the examples name each other relative to the repository root
    config = load_config(EXAMPLES / name)
    built = [scenario_from(config["kind"], c) for c in cases(config)]
    assert len(built) == int(np.prod([len(v) for v in config["grid"].values()]))
