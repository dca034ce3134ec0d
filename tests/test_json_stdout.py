"""``--json`` prints exactly one JSON object on stdout, for every command that has it (issue 29).

Each command runs as a real process (``python -m netweave``), so what libraries print from C on
file descriptor 1 is seen too: HiGHS 1.16 began printing a banner there, in front of the object,
and tests that read ``sys.stdout`` in-process did not notice. The whole of stdout must parse.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys

import pytest
import typer

import netweave.cli
from netweave.testbed.net import netns

ROUTE = "leafspine:leaves=2,spines=2,hosts=2,ina=1,pipelines=2,seed=1"
ROOT = pytest.mark.skipif(bool(netns.missing_requirements("clang")), reason="the testbed needs root and clang")


def _sweep_file(d) -> str:
    (d / "s.yaml").write_text("kind: route\ngrid: {algorithm: [ecmp, aro]}\n"
                              f"fixed: {{topology: '{ROUTE}', workers: 3}}\n")
    return str(d / "s.yaml")


# command → (argv builder over a scratch folder, marks)
COMMANDS = {
    "datasets": (lambda d: ["datasets"], ()),
    "graph stats": (lambda d: ["graph", "stats", "cora"], ()),
    "partition": (lambda d: ["partition", "cora", "-k", "4"], ()),
    "plan": (lambda d: ["plan", "cora", "--topology", "dgx1"], ()),
    "train": (lambda d: ["train", "cora", "--workers", "2", "--epochs", "2"], ()),
    "ina": (lambda d: ["ina", "cora", "--workers", "4", "--switch-memory", "100KB"], ()),
    "timeslot": (lambda d: ["timeslot", "cora"], ()),
    "route": (lambda d: ["route", "--topology", ROUTE, "--workers", "3", "--algorithm", "aro"], ()),
    "route pahina": (lambda d: ["route", "--topology", "fattree:k=4,ina=0.4,gbps=10", "--workers", "6",
                                "--precisions", "fp8:1,fp16:1,fp32:1", "--algorithm", "pahina"], ()),
    "aggsvc demo": (lambda d: ["aggsvc", "demo", "--workers", "4"], ()),
    "kernels bench": (lambda d: ["kernels", "bench", "ring:n=64", "--gpus", "2", "--dim", "4", "--repeats", "1"], ()),
    "topology show": (lambda d: ["topology", "show", "dgx1"], ()),
    "sweep": (lambda d: ["sweep", _sweep_file(d), "--out", str(d / "sweep"), "--workers", "2"], ()),
    "repro": (lambda d: ["repro", "aro-fig7", "--scale", "tiny", "--out", str(d / "repro"), "--workers", "2"], ()),
    "compare": (lambda d: ["compare", "--sections", "routing,precision"], ()),
    "testbed up": (lambda d: ["testbed", "up", "star:n=2"], (ROOT,)),
    "testbed down": (lambda d: ["testbed", "down"], (ROOT,)),
    "testbed train": (lambda d: ["testbed", "train", "--precisions", "fp16:2", "--routing", "pahina", "--epochs", "1",
                                 "--steps", "3"], (ROOT,)),
    "testbed gnn": (lambda d: ["testbed", "gnn", "rmat:n=200,m=800,classes=3,feat=8", "--workers", "2", "--epochs", "1"], (ROOT,)),
}


def json_commands() -> set[str]:
    """Every (sub)command that takes ``--json``, as words (``testbed up``)."""
    found = set()

    def walk(group, path):
        for name, sub in getattr(group, "commands", {}).items():
            if hasattr(sub, "commands"):
                walk(sub, path + [name])
            elif any("--json" in p.opts for p in sub.params):
                found.add(" ".join(path + [name]))

    walk(typer.main.get_command(netweave.cli.app), [])
    return found


def test_every_json_command_is_checked():
    assert json_commands() <= {c.split(" pahina")[0] for c in COMMANDS}


@pytest.mark.parametrize("command", [pytest.param(c, marks=m) for c, (_, m) in COMMANDS.items()])
def test_stdout_is_one_json_object(command, tmp_path):
    if command == "kernels bench":
        pytest.importorskip("triton")
    if command in ("train", "testbed train"):
        pytest.importorskip("torch")
    argv = COMMANDS[command][0](tmp_path)
    env = dict(os.environ, NETWEAVE_NO_PROGRESS="1", COLUMNS="200")
    done = subprocess.run([sys.executable, "-m", "netweave", *argv, "--json"], capture_output=True, text=True,
                          env=env, cwd=tmp_path, timeout=600)
    assert done.returncode == 0, done.stderr[-2000:]
    value = json.loads(done.stdout)  # the whole of stdout: nothing before or after the object
    assert isinstance(value, dict) and done.stdout.count("\n") == 1, done.stdout[:500]
    if command == "testbed up":  # leave nothing behind
        subprocess.run([sys.executable, "-m", "netweave", "testbed", "down"], capture_output=True, timeout=120)


def test_the_highs_banner_never_reaches_stdout():
    """The route commands' solver, made in-process from Python: nothing on descriptor 1 either."""
    code = ("from netweave.route.solver import new_highs; h = new_highs(); h.run()")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0 and done.stdout == "" and "HiGHS" not in done.stderr, (done.stdout, done.stderr)


@pytest.mark.skipif(shutil.which("gcc") is None, reason="compiles a tiny C library that prints")
def test_c_level_prints_during_a_command_go_to_stderr(tmp_path, capfd):
    """:func:`netweave._stdout.results_only`: printf from C inside a command lands on stderr."""
    import ctypes

    from netweave._stdout import results_only

    (tmp_path / "p.c").write_text('#include <stdio.h>\nvoid say(void) { printf("banner from C\\n"); }\n')
    subprocess.run(["gcc", "-shared", "-fPIC", "-o", str(tmp_path / "p.so"), str(tmp_path / "p.c")], check=True)
    lib = ctypes.CDLL(str(tmp_path / "p.so"))
    with results_only():
        lib.say()
        print('{"result": 1}')
    out, err = capfd.readouterr()
    assert out == '{"result": 1}\n' and "banner from C" in err
