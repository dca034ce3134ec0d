"""``scripts/offline_kit.py``: a folder that lets a machine without clang or package registries run
the testbed from a checkout. Its objects must be the ones :func:`compile_program` would build here,
found there without clang; its tools must run on its own libraries; its ``env.sh`` must set what
it says. Needs clang, libbpf and iproute2 (``make system-packages``; skipped otherwise)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import zipfile
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
    out = tmp_path_factory.mktemp("kits") / "kit"
    parts = offline_kit.build_kit(out, "3.12", [], data=[CORA] if (offline_kit.SHARED / CORA).is_file() else [])
    return out, parts


@needs_tools
def test_the_objects_are_what_this_checkout_looks_up(kit):
    from netweave.testbed.net.bpf import object_path
    from netweave.testbed.programs import PROGRAMS

    out, parts = kit
    assert len(parts["objects"]) == len(PROGRAMS) and not parts["wheels"]
    for p, obj in zip(PROGRAMS, parts["objects"]):
        assert obj == object_path(p.source, p.define_values(), out / "cache" / "netweave" / "bpf")
        head = obj.read_bytes()[:20]
        assert head[:4] == b"\x7fELF" and int.from_bytes(head[18:20], "little") == 247  # EM_BPF
    assert not list(out.parent.glob(".kit.new-*"))  # built beside, renamed into place


@needs_tools
def test_a_machine_without_clang_takes_the_kits_objects(kit, tmp_path):
    from netweave.testbed.programs import PROGRAMS

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
    env = {**os.environ, "PATH": str(empty), "XDG_CACHE_HOME": str(out / "cache")}
    done = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert [Path(line).parent for line in done.stdout.split()] == [out / "cache" / "netweave" / "bpf"] * len(PROGRAMS)
    # and without the kit, the same machine says what it lacks
    env["XDG_CACHE_HOME"] = str(tmp_path / "none")
    done = subprocess.run([sys.executable, "-c", code.replace("assert kernel_plane_available()\n", "")], env=env,
                          capture_output=True, text=True, timeout=120)
    assert done.returncode != 0 and "is not compiled here and needs clang" in done.stderr


@needs_tools
def test_the_kit_holds_every_library_its_tools_load(kit):
    out, _ = kit
    for tool, args in (("ip", ["-V"]), ("tc", ["-V"]), ("bpftool", ["version"])):
        env = {"PATH": "/nonexistent", "LD_LIBRARY_PATH": str(out / "lib")}
        done = subprocess.run([str(out / "bin" / tool), *args], env=env, capture_output=True, text=True, timeout=30)
        assert done.returncode == 0, (tool, done.stderr)
        loads = subprocess.run([shutil.which("ldd"), str(out / "bin" / tool)], env=env, capture_output=True, text=True).stdout
        for line in loads.splitlines():
            name, _, where = line.strip().partition(" => ")
            if where and not offline_kit.SYSTEM.match(name):
                assert where.startswith(f"{out}/lib/"), (tool, line)  # from the kit, not this machine
    assert (out / "lib" / "libbpf.so.1").exists()


@needs_tools
def test_env_sh_sets_what_it_says(kit, tmp_path):
    out, parts = kit
    (out / "lib" / "libnetweave-kit-test.so.1").write_bytes(b"")  # a library no machine has
    wheels = out / "wheels"  # a wheel, unpacked without pip
    wheels.mkdir(exist_ok=True)
    with zipfile.ZipFile(wheels / "kit_probe-1.0-py3-none-any.whl", "w") as z:
        z.writestr("kit_probe/__init__.py", "WHERE = __file__\n")
    script = (f"source {out}/env.sh && printf '%s\\n' \"$XDG_CACHE_HOME\" \"$PYTHONPATH\" \"$LD_LIBRARY_PATH\" \"$PATH\" "
              "\"${NETWEAVE_SHARED_DATA:-none}\" && ls \"$LD_LIBRARY_PATH\" && "
              f"{sys.executable} -c 'import kit_probe; print(kit_probe.WHERE)'")
    done = subprocess.run(["bash", "-c", script], cwd=REPO, capture_output=True, text=True, timeout=60,
                          env={"PATH": "/usr/bin:/bin:/usr/sbin:/sbin"})
    assert done.returncode == 0, done.stderr
    cache, pythonpath, libs, path, data, *listed, probe = done.stdout.splitlines()
    assert cache == f"{out}/cache" and pythonpath.startswith(f"{REPO}/src:{out}/site")
    assert path == f"/usr/bin:/bin:/usr/sbin:/sbin:{out}/bin"  # the machine's own tools first
    assert libs == f"{out}/ldpath" and listed == ["libnetweave-kit-test.so.1"]  # its own libbpf stays its own
    assert probe == f"{out}/site/kit_probe/__init__.py"
    if parts["data files"]:
        assert data == f"{out}/data" and (out / "data" / CORA).read_bytes() == (offline_kit.SHARED / CORA).read_bytes()
    else:
        assert data == "none"
    # sourced from elsewhere it says so and sets nothing
    done = subprocess.run(["bash", "-c", f"source {out}/env.sh; echo rc=$? ${{XDG_CACHE_HOME:-unset}}"], cwd=tmp_path,
                          capture_output=True, text=True, timeout=30, env={"PATH": "/usr/bin:/bin"})
    assert done.stdout.strip() == "rc=2 unset" and "from the root of a netweave checkout" in done.stderr


def test_bad_arguments_exit_2_in_one_line(tmp_path, capsys):
    assert offline_kit.main(["--out", str(tmp_path / "k"), "--python", "3.12; rm"]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("offline_kit: error: --python") and "\n" not in err
    assert offline_kit.main(["--out", str(tmp_path / "k"), "--wheels", "pymetis", "no-such-distribution"]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("offline_kit: error: --wheels no-such-distribution: not in the lock") and "\n" not in err
    for bad in ("../../etc/passwd", "/etc/passwd", "no/such/file.npz"):
        assert offline_kit.main(["--out", str(tmp_path / "k"), "--data", bad]) == 2
        err = capsys.readouterr().err.strip()
        assert err.startswith(f"offline_kit: error: --data {bad}: not a file under") and "\n" not in err
    assert list(tmp_path.iterdir()) == []  # nothing written


@needs_tools
def test_a_failed_build_leaves_no_half_kit_and_keeps_the_old_one(tmp_path, capsys, monkeypatch):
    def fail(*args):
        raise offline_kit.KitError("pip could not download (a test)")

    monkeypatch.setattr(offline_kit, "download_wheels", fail)
    assert offline_kit.main(["--out", str(tmp_path / "k")]) == 2
    assert "pip could not download" in capsys.readouterr().err and list(tmp_path.iterdir()) == []
    old = tmp_path / "old"
    old.mkdir()
    (old / "env.sh").write_text(offline_kit.ENV_SH)
    assert offline_kit.main(["--out", str(old)]) == 2
    assert [p.name for p in tmp_path.iterdir()] == ["old"] and (old / "env.sh").read_text() == offline_kit.ENV_SH
    capsys.readouterr()
    for other, env in (("not-a-kit", None), ("someone-elses", "export X=1\n")):
        (tmp_path / other).mkdir()
        if env:
            (tmp_path / other / "env.sh").write_text(env)
        assert offline_kit.main(["--out", str(tmp_path / other)]) == 2
        assert "exists and is not a kit" in capsys.readouterr().err
        assert [p.name for p in (tmp_path / other).iterdir()] == (["env.sh"] if env else [])  # left as it was


@needs_tools
def test_a_missing_tool_or_a_wrapper_stops_the_kit_before_it_writes(tmp_path, capsys, monkeypatch):
    which = shutil.which
    monkeypatch.setattr(offline_kit.shutil, "which", lambda name: None if name == "bpftool" else which(name))
    assert offline_kit.main(["--out", str(tmp_path / "k")]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("offline_kit: error: `bpftool` is not installed here") and "\n" not in err
    wrapper = tmp_path / "bpftool"
    wrapper.write_text("#!/bin/sh\nexec /usr/lib/linux-tools/bpftool \"$@\"\n")
    monkeypatch.setattr(offline_kit.shutil, "which", lambda name: str(wrapper) if name == "bpftool" else which(name))
    assert offline_kit.main(["--out", str(tmp_path / "k")]) == 2
    assert "is not a program (a wrapper script?)" in capsys.readouterr().err
    assert not (tmp_path / "k").exists()
