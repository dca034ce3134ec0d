"""``scripts/offline_kit.py``: a folder that lets a machine without clang or package registries run
the testbed from a checkout. Its objects must be the ones :func:`compile_program` would build here,
found there without clang; its tools must run on its own libraries; its ``env.sh`` must set what
it says. Needs clang, libbpf and iproute2 (``make system-packages``; skipped otherwise)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "scripts"))
import offline_kit  # noqa: E402

CORA = "planetoid/ind.cora.y"  # a small file of the real datasets, where they are
needs_tools = pytest.mark.skipif(
    shutil.which("clang") is None or shutil.which("ip") is None or shutil.which("bpftool") is None,
    reason="the kit is built from clang, libbpf, iproute2 and bpftool (make system-packages)")


@pytest.fixture(scope="module")
def kit(tmp_path_factory):
    out = tmp_path_factory.mktemp("kit")
    parts = offline_kit.build_kit(out, "3.12", [], data=[CORA] if (offline_kit.SHARED / CORA).is_file() else [])
    return out, parts


@needs_tools
def test_the_objects_are_what_this_checkout_compiles(kit):
    from netweave.testbed.net.bpf import compile_program
    from netweave.testbed.programs import PROGRAMS

    out, parts = kit
    assert len(parts["objects"]) == len(PROGRAMS) and not parts["wheels"]
    for p, obj in zip(PROGRAMS, parts["objects"]):
        assert obj.parent == out / "cache" / "netweave" / "bpf"
        assert obj.name == compile_program(p.source, p.define_values()).name
        assert obj.read_bytes() == compile_program(p.source, p.define_values()).read_bytes()


@needs_tools
def test_a_machine_without_clang_takes_the_kits_objects(kit, tmp_path):
    out, _ = kit
    empty = tmp_path / "bin"
    empty.mkdir()
    code = ("import shutil\n"
            "from netweave.testbed.gnn.launch import kernel_plane_available\n"
            "from netweave.testbed.net.bpf import compile_program\n"
            "from netweave.testbed.programs import PROGRAMS\n"
            "assert shutil.which('clang') is None\n"
            "assert kernel_plane_available()\n"
            "print('\\n'.join(str(compile_program(p.source, p.define_values())) for p in PROGRAMS))\n")
    env = {**os.environ, "PATH": str(empty), "XDG_CACHE_HOME": str(out / "cache"), "LD_LIBRARY_PATH": str(out / "lib")}
    done = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert [Path(line).parent for line in done.stdout.split()] == [out / "cache" / "netweave" / "bpf"] * 7
    # and without the kit, the same machine says what it lacks
    env["XDG_CACHE_HOME"] = str(tmp_path / "none")
    done = subprocess.run([sys.executable, "-c", code.replace("assert kernel_plane_available()\n", "")], env=env,
                          capture_output=True, text=True, timeout=120)
    assert done.returncode != 0 and "is not compiled here and needs clang" in done.stderr


@needs_tools
def test_the_tools_run_on_the_kits_libraries(kit):
    out, _ = kit
    env = {"PATH": "/nonexistent", "LD_LIBRARY_PATH": str(out / "lib")}
    for tool, args in (("ip", ["-V"]), ("tc", ["-V"]), ("bpftool", ["version"])):
        done = subprocess.run([str(out / "bin" / tool), *args], env=env, capture_output=True, text=True, timeout=30)
        assert done.returncode == 0, (tool, done.stderr)
    assert (out / "lib" / "libbpf.so.1").exists()


@needs_tools
def test_env_sh_sets_what_it_says(kit):
    out, parts = kit
    done = subprocess.run(["bash", "-c", f"source {out}/env.sh && printf '%s\\n' \"$XDG_CACHE_HOME\" \"$PYTHONPATH\" "
                           "\"$LD_LIBRARY_PATH\" \"$PATH\" \"${NETWEAVE_SHARED_DATA:-none}\""], cwd=REPO, capture_output=True,
                          text=True, timeout=30, env={"PATH": "/usr/bin:/bin"})
    assert done.returncode == 0, done.stderr
    cache, pythonpath, libs, path, data = done.stdout.splitlines()
    assert cache == f"{out}/cache" and pythonpath.startswith(f"{REPO}/src:{out}/site")
    assert libs == f"{out}/lib" and path == f"/usr/bin:/bin:{out}/bin"  # the machine's own tools first
    if parts["data files"]:
        assert data == f"{out}/data" and (out / "data" / CORA).read_bytes() == (offline_kit.SHARED / CORA).read_bytes()
    else:
        assert data == "none"


def test_bad_arguments_exit_2_in_one_line(tmp_path, capsys):
    assert offline_kit.main(["--out", str(tmp_path / "k"), "--python", "3.12; rm"]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("offline_kit: error: --python") and "\n" not in err
    assert not (tmp_path / "k").exists()
    assert offline_kit.main(["--out", str(tmp_path / "k"), "--wheels", "pymetis", "no-such-distribution"]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("offline_kit: error: --wheels no-such-distribution: not in the lock") and "\n" not in err
    assert not (tmp_path / "k").exists()  # nothing written
    for bad in ("../../etc/passwd", "/etc/passwd", "no/such/file.npz"):
        assert offline_kit.main(["--out", str(tmp_path / "k"), "--data", bad]) == 2
        err = capsys.readouterr().err.strip()
        assert err.startswith(f"offline_kit: error: --data {bad}: not a file under") and "\n" not in err
    assert not (tmp_path / "k").exists()


@needs_tools
def test_a_missing_tool_stops_the_kit_before_it_writes(tmp_path, capsys, monkeypatch):
    which = shutil.which
    monkeypatch.setattr(offline_kit.shutil, "which", lambda name: None if name == "bpftool" else which(name))
    assert offline_kit.main(["--out", str(tmp_path / "k")]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("offline_kit: error: `bpftool` is not installed here") and "\n" not in err
    assert not (tmp_path / "k").exists()
