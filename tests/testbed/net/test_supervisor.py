"""The one supervisor of a run's processes (issue 30): ready lines, following the leader, the
first failure in one line (with a status's reason), every role stopped when the block ends.
Roles here are small modules run in this namespace (no root needed)."""

import sys
import textwrap
from dataclasses import dataclass

import pytest

from netweave.errors import NetweaveError
from netweave.testbed.net.role import RoleConfig
from netweave.testbed.net.supervisor import Supervisor


@dataclass(frozen=True, kw_only=True)
class ScriptConfig(RoleConfig):
    """A fake role: print ``lines``, sleep, print ``error`` last on stderr, exit with ``exit``."""

    lines: tuple[str, ...] = ()
    exit: int = 0
    sleep_s: float = 0.0
    error: str = ""
    affinity: bool = False
    noise: int = 0  # bytes written to stderr first (libbpf's verifier log: about a megabyte)


ROLE = textwrap.dedent('''
    import json, os, sys, time
    c = json.loads(sys.argv[1])  # a ScriptConfig
    for _ in range(c["noise"] // 100):
        sys.stderr.write("x" * 99 + "\\n")
    sys.stderr.flush()
    if c["affinity"]:
        print(json.dumps({"cpus": sorted(os.sched_getaffinity(0))}), flush=True)
    for line in c["lines"]:
        print(line, flush=True)
    time.sleep(c["sleep_s"])
    if c["error"]:
        print("warming up", file=sys.stderr)
        print(c["error"], file=sys.stderr)
    sys.exit(c["exit"])
''')


@pytest.fixture
def role_module(tmp_path, monkeypatch):
    (tmp_path / "tests_role.py").write_text(ROLE)
    monkeypatch.setenv("PYTHONPATH", str(tmp_path) + ":" + ":".join(sys.path))
    return "tests_role"


def test_ready_follow_and_finish(role_module):
    with Supervisor(30) as s:
        agent = s.start("the agent", None, role_module, ScriptConfig(lines=('{"ready": true}',), sleep_s=0.5), ready=True)
        leader = s.start("the PS", None, role_module, ScriptConfig(lines=('{"epoch": 1}', '{"epoch": 2}', '{"done": true}')))
        seen = []
        s.follow(leader, lambda r: seen.append(r) or "done" in r)
        assert [r.get("epoch") for r in seen] == [1, 2, None]
        agent.proc.wait(timeout=10)


def test_the_first_failure_is_one_line_with_its_reason(role_module):
    with Supervisor(30, reasons={3: "the loss diverged: {name}: {line}"}) as s:
        leader = s.start("the PS", None, role_module, ScriptConfig(sleep_s=30))
        s.start("worker 1 (H1)", None, role_module, ScriptConfig(exit=3, error="its gradient at step 4 is NaN"))
        with pytest.raises(NetweaveError, match=r"^the loss diverged: worker 1 \(H1\): its gradient at step 4 is NaN$"):
            s.follow(leader, lambda r: False)
    assert leader.proc.poll() is not None  # stopped when the block ended


def test_a_failure_with_a_reason_is_named_before_the_crashes_it_causes(role_module):
    """Rank 0's loss diverges (exit 3); rank 1, waiting for it in gloo, aborts a moment later — or,
    as here, first: the poll may see either first, the line names the cause."""
    with Supervisor(30, reasons={3: "the loss diverged: {name}: {line}"}) as s:
        leader = s.start("worker 1 (H1)", None, role_module, ScriptConfig(sleep_s=0.3, exit=3, error="NaN at step 4"))
        s.start("worker 2 (H2)", None, role_module, ScriptConfig(exit=1, error="terminate called"))
        with pytest.raises(NetweaveError, match=r"^the loss diverged: worker 1 \(H1\): NaN at step 4$"):
            s.follow(leader, lambda r: False)


def test_a_crash_and_a_role_that_never_starts(role_module):
    with Supervisor(30) as s:
        with pytest.raises(NetweaveError, match=r"the agent did not start: boom"):
            s.start("the agent", None, role_module, ScriptConfig(exit=1, error="boom"), ready=True)
    with Supervisor(1) as s:
        with pytest.raises(NetweaveError, match=r"the agent did not start within 1 s"):
            s.start("the agent", None, role_module, ScriptConfig(sleep_s=20), ready=True)
    with Supervisor(30) as s:
        roles = [s.start("the switch", None, role_module, ScriptConfig(sleep_s=30)),
                 s.start("worker 0", None, role_module, ScriptConfig(exit=1, error="ConnectionError: reset"))]
        with pytest.raises(NetweaveError, match=r"^worker 0 died \(exit 1: ConnectionError: reset\); the run was stopped$"):
            s.wait(roles, 60, settle_s=0.1)


def test_wait_collects_every_output(role_module):
    with Supervisor(30) as s:
        roles = [s.start(f"worker {i}", None, role_module, ScriptConfig(lines=(f'{{"epoch": {i}}}', "{}")))
                 for i in range(3)]
        s.wait(roles, 60)
    assert [r.stdout.splitlines()[0] for r in roles] == ['{"epoch": 0}', '{"epoch": 1}', '{"epoch": 2}']


def test_follow_keeps_the_other_roles_lines_so_that_none_blocks_on_its_pipe(role_module):
    """A worker printing more than a pipe holds (64 KiB) before the leader ends would block forever
    if nobody read it."""
    many = tuple('{"rank": 1, "timing": "%s"}' % ("x" * 900) for _ in range(100))  # 92 KB
    with Supervisor(30) as s:
        worker = s.start("worker 1", None, role_module, ScriptConfig(lines=many))
        leader = s.start("the PS", None, role_module, ScriptConfig(lines=('{"epoch": 1}',), sleep_s=1.0))
        s.follow(leader, lambda r: True, collect=[worker])
        lines = s.drain(worker)
    assert len(lines) == 100 and lines[-1]["rank"] == 1


def test_a_role_runs_on_the_cpus_it_is_given(role_module):
    """``cpus``: the role's process (and the threads it starts) may run on those CPUs only; without,
    on every CPU the supervisor may use."""
    import json
    import os

    mine = sorted(os.sched_getaffinity(0))
    with Supervisor(timeout_s=10) as s:
        one = s.start("worker 0", None, role_module, ScriptConfig(affinity=True), cpus=frozenset(mine[-1:]))
        every = s.start("worker 1", None, role_module, ScriptConfig(affinity=True))
        s.wait([one, every], 10)
    assert json.loads(one.stdout.splitlines()[0]) == {"cpus": mine[-1:]}
    assert json.loads(every.stdout.splitlines()[0]) == {"cpus": mine}


def test_a_role_that_writes_a_megabyte_to_stderr_first_still_starts_and_fails_in_one_line(role_module):
    """A pipe holds 64 KiB: a role writing more to stderr before its ready line (libbpf prints the
    verifier's log of a refused program there) once blocked until the run's timeout."""
    with Supervisor(20) as s:
        agent = s.start("the agent", None, role_module, ScriptConfig(noise=1 << 20, lines=('{"ready": true}',)),
                        ready=True)
        agent.proc.wait(timeout=20)
        assert agent.stderr().count("\n") <= (1 << 16) // 100 + 1  # its tail only: memory stays bounded
    with Supervisor(20) as s:
        with pytest.raises(NetweaveError, match=r"^the agent did not start: the kernel refused it$"):
            s.start("the agent", None, role_module, ScriptConfig(noise=1 << 20, exit=1, error="the kernel refused it"),
                    ready=True)
