"""One supervisor for the processes of a testbed run.

A run starts its roles (switch agents, routers, the PS, workers) as ``python -m MODULE CONFIG``
processes in their namespaces, waits for the ready line of those that print one, follows the
lines of the one that reports progress, collects each role's last JSON line, and stops every role
at the first failure with one line that names it. :class:`Supervisor` does all of that, for every
run of the testbed (gradient aggregation and the GNN exchange alike), and kills whatever still
runs when its block ends, however it ends.

A role ends with status 0, or non-zero with its reason as the last line of its stderr. A status in
``reasons`` (e.g. 3, "the loss diverged") reads as that reason; any other as "died". A role's
stderr goes to a temporary file, never a pipe: a role that writes more there than a pipe holds
(libbpf's verifier log, a megabyte) would otherwise block before its ready line; only its last
:data:`STDERR_TAIL` bytes are read back.
"""

from __future__ import annotations

import json
import os
import select
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import IO

from ...errors import NetweaveError
from .netns import python_in
from .role import RoleConfig

STDERR_TAIL = 1 << 16  # bytes of a role's stderr read back: its last line and some before


def last_line(text: str) -> str:
    """The last non-empty line of ``text`` ("?" when there is none)."""
    return (text.strip().splitlines() or ["?"])[-1]


@dataclass
class Role:
    """One started role: its name in messages (``worker 2 (H2)``) and its process (pipes open,
    text)."""

    name: str
    proc: subprocess.Popen
    stdout: str = field(default="", repr=False)  # what it printed, once it ended (see Supervisor.wait)
    err: IO[bytes] | None = field(default=None, repr=False)  # its stderr (a temporary file)

    def running(self) -> bool:
        return self.proc.poll() is None

    def stderr(self) -> str:
        """The last :data:`STDERR_TAIL` bytes the role wrote to its stderr so far."""
        if self.err is None:
            return ""
        size = self.err.seek(0, os.SEEK_END)
        self.err.seek(max(0, size - STDERR_TAIL))
        return self.err.read().decode("utf-8", "replace")


class Supervisor:
    """``with Supervisor(timeout_s) as s:`` — the roles started through ``s``, stopped when the block ends.

    Args:
        timeout_s: how long a role may take to print its ready line, and a finishing role to end.
        reasons: exit status → template of the failure line (``{name}``: the role, ``{line}``: its
            last stderr line), for statuses that mean something other than a crash.
        settle_s: how long the other roles get to end after a first failure (see :meth:`check`).
    """

    def __init__(self, timeout_s: float, reasons: dict[int, str] | None = None, settle_s: float = 1.0):
        self.timeout_s = timeout_s
        self.reasons = reasons or {}
        self.settle_s = settle_s
        self.roles: list[Role] = []

    def __enter__(self) -> "Supervisor":
        return self

    def __exit__(self, *exc) -> None:
        self.stop()

    # -- starting --------------------------------------------------------------------------------
    def start(self, name: str, namespace: str | None, module: str, config: RoleConfig, ready: bool = False,
              cpus: frozenset[int] | None = None) -> Role:
        """``python -m module CONFIG`` in ``namespace`` (None: this one); with ``ready``, wait for its
        first line; with ``cpus``, it runs on those CPUs only (set as it starts: ``ip netns exec``
        and Python's start-up are one thread until long after, and threads inherit the set)."""
        err = tempfile.TemporaryFile()
        if namespace is None:
            proc = subprocess.Popen([sys.executable, "-m", module, config.to_json()], stdin=subprocess.PIPE,
                                    stdout=subprocess.PIPE, stderr=err, text=True)
        else:
            proc = python_in(namespace, module, config.to_json(), stderr=err)
        role = Role(name, proc, err=err)
        if cpus:
            try:
                os.sched_setaffinity(proc.pid, cpus)
            except ProcessLookupError:  # it ended already: its status says why
                pass
        self.roles.append(role)
        if ready:
            self.ready(role)
        return role

    def ready(self, role: Role) -> dict:
        """The role's first stdout line (its ``{"ready": …}`` JSON), within the timeout."""
        if not select.select([role.proc.stdout], [], [], self.timeout_s)[0]:
            raise NetweaveError(f"{role.name} did not start within {self.timeout_s:g} s; the run was stopped")
        line = role.proc.stdout.readline()
        if line:
            return json.loads(line)
        role.proc.wait(timeout=self.timeout_s)  # its stdout closed: it ended, or is ending
        raise NetweaveError(f"{role.name} did not start: {last_line(role.stderr())}")

    # -- failures --------------------------------------------------------------------------------
    def failure(self, role: Role) -> NetweaveError:
        """The one line for ``role``, which ended with a non-zero status."""
        code, line = role.proc.returncode, last_line(role.stderr())
        if code in self.reasons:
            return NetweaveError(self.reasons[code].format(name=role.name, line=line))
        how = f"signal {-code}" if code < 0 else f"exit {code}: {line}"
        said = f"; its last line: {line}" if code < 0 and line else ""  # e.g. the C++ message before an abort
        return NetweaveError(f"{role.name} died ({how}); the run was stopped{said}")

    def check(self, roles: list[Role] | None = None) -> None:
        """Raise a failure when one of ``roles`` (default: all) ended badly. The others get
        :attr:`settle_s` to end first, and a role whose status has a reason (a diverged loss) is
        named before the first failed one: its peers die of its exit (a gloo rank aborts when the
        rank it waits for left), and which of them the poll saw first is a race."""
        roles = self.roles if roles is None else roles
        if all(role.proc.poll() in (None, 0) for role in roles):
            return
        time.sleep(self.settle_s)
        failed = [role for role in self.roles if role.proc.poll() not in (None, 0)]
        explained = [role for role in failed if role.proc.returncode in self.reasons]
        raise self.failure((explained or [role for role in failed if role in roles])[0])

    # -- running ---------------------------------------------------------------------------------
    def follow(self, leader: Role, on_line: Callable[[dict], bool], collect: list[Role] = ()) -> None:
        """Read ``leader``'s JSON lines as they come, each to ``on_line`` (which returns True when the
        leader has reported its end), while watching every other role: the first to fail ends the
        run. The lines of the roles in ``collect`` are kept in their ``Role.stdout`` meanwhile (so
        that none blocks on a full pipe; :meth:`drain` adds the rest once they ended). Returns when
        the leader's output ends after its last report."""
        others = [r for r in self.roles if r is not leader]
        open_ = {r.proc.stdout: r for r in collect}
        finished = False
        while True:
            self.check(others)
            ready = select.select([leader.proc.stdout, *open_], [], [], 0.2)[0]
            for stream in ready:
                if stream is not leader.proc.stdout:
                    self._keep_line(stream, open_)
            if leader.proc.stdout not in ready:
                continue
            line = leader.proc.stdout.readline()  # roles write whole lines and flush each
            if line:
                finished = on_line(json.loads(line)) or finished
                continue
            leader.proc.wait(timeout=self.timeout_s)
            self.check([leader])
            if not finished:
                raise NetweaveError(f"{leader.name} ended without its final report: "
                                    f"{last_line(leader.stderr())}")
            return

    @staticmethod
    def _keep_line(stream, open_: dict) -> None:
        """One line of a watched role's stdout onto its ``Role.stdout``; at its end, stop watching it
        (``open_``: stream → role)."""
        text = stream.readline()
        if text:
            open_[stream].stdout += text
        else:
            del open_[stream]

    def drain(self, role: Role) -> list[dict]:
        """Wait for ``role`` (one :meth:`follow` collected) to end; its JSON lines."""
        role.proc.wait(timeout=self.timeout_s)
        role.stdout += role.proc.stdout.read()
        return [json.loads(line) for line in role.stdout.splitlines() if line.strip()]

    def wait(self, roles: list[Role], timeout_s: float, settle_s: float = 3.0) -> None:
        """Wait until every one of ``roles`` ends (their stdout is then in ``Role.stdout``). The first
        failure stops the run; after ``settle_s`` the failure of a role other than the first (the
        coordinator, whose failure usually follows from another's) is reported first."""
        end = time.monotonic() + timeout_s
        open_ = {r.proc.stdout: r for r in roles}
        while open_ or any(r.running() for r in roles):
            if any(r.proc.poll() not in (None, 0) for r in roles):
                time.sleep(settle_s)
                failed = [r for r in roles if r.proc.poll() not in (None, 0)]
                raise self.failure(min(failed, key=lambda r: r is roles[0]))
            if time.monotonic() > end:
                raise NetweaveError(f"the run did not finish in {timeout_s:g} s; it was stopped")
            for stream in select.select(list(open_), [], [], 0.1)[0] if open_ else []:
                self._keep_line(stream, open_)
            if not open_:
                time.sleep(0.05)

    def finish(self, role: Role) -> dict:
        """Tell ``role`` that the run is over (its stdin closes) and return its last JSON line."""
        out, _ = role.proc.communicate(input="", timeout=self.timeout_s)
        if role.proc.returncode:
            raise self.failure(role)
        return json.loads(last_line(out))

    def stop(self) -> None:
        """Kill every role still running (and reap it); close their stderr files."""
        for role in self.roles:
            if role.running():
                role.proc.kill()
                role.proc.wait()
            if role.err is not None:
                role.err.close()
