"""Ctrl-C ends a command with exit status 130 and ``netweave: interrupted`` (issue 29: typer 0.29
returns 130 instead of raising, and every interrupted command exited 0 with nothing printed, so an
interrupted ``train`` looked like a success to a script)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest


def _interrupt(argv: list[str], ready) -> subprocess.CompletedProcess:
    """Start ``netweave ARGV``, wait until ``ready(proc)`` returns, send SIGINT (what Ctrl-C sends)."""
    proc = subprocess.Popen([sys.executable, "-m", "netweave", *argv], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, env=dict(os.environ, NETWEAVE_NO_PROGRESS="1"),
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    try:
        ready(proc)
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    return subprocess.CompletedProcess(argv, proc.returncode, out, err)


def test_an_interrupted_computation_exits_130_and_says_so():
    done = _interrupt(["ina", "reddit-like:scale=0.1", "--workers", "32"], lambda proc: time.sleep(4))
    assert done.returncode == 130 and done.stderr == "netweave: interrupted\n" and done.stdout == "", done


def test_an_interrupted_training_run_exits_130_and_leaves_no_rank():
    pytest.importorskip("torch")

    def ranks_running(proc):  # both ranks have started (the launcher's children)
        children = Path(f"/proc/{proc.pid}/task/{proc.pid}/children")
        deadline = time.monotonic() + 60
        while len(children.read_text().split()) < 2 and time.monotonic() < deadline:
            time.sleep(0.2)
        time.sleep(2)

    done = _interrupt(["train", "cora", "--workers", "2", "--epochs", "5000"], ranks_running)
    assert done.returncode == 130 and done.stderr.rstrip().endswith("netweave: interrupted"), done.stderr
    time.sleep(1)
    ours = subprocess.run(["pgrep", "-f", "netweave.runtime"], capture_output=True, text=True).stdout.split()
    assert not [p for p in ours if int(p) != os.getpid()]
