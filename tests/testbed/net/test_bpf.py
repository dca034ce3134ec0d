"""The testbed's BPF programs against the kernel's verifier: each loads, and the instructions the
verifier walked (``bpf_prog_info.verified_insns``) stay under half its limit. Kernel 6.18.44's
verifier refused the SwitchGNN switch (a million instructions walked) until the cell's addition
and a sum's sending became global functions (425 K and 358 K there since the twentieth session):
half the limit is the alarm, so a kernel whose verifier walks more, or code that adds to a walk,
shows here before a kernel refuses a program (needs root and clang; skipped otherwise). And the
objects' cache: an object compiled earlier, or brought by ``scripts/offline_kit.py``, is used where
clang is missing."""

import shutil

import pytest

from netweave.testbed.net import netns
from netweave.testbed.programs import PROGRAMS, program

missing = netns.missing_requirements("clang")
needs_kernel = pytest.mark.skipif(bool(missing) or shutil.which("clang") is None,
                                  reason="the testbed's BPF programs need " + "; ".join(missing or ["clang"]))


@needs_kernel
@pytest.mark.parametrize("name", [p.label for p in PROGRAMS])
def test_each_program_verifies_within_half_the_verifiers_limit(name):
    from netweave.testbed.net.bpf import VERIFIER_LIMIT, TcObject, XdpObject, compile_program

    p = program(name)
    with (TcObject if p.hook == "tc" else XdpObject)(compile_program(p.source, p.define_values()), p.function, [],
                                                     None, name) as obj:
        info = obj.info()
    assert info is not None and 0 < info.verified_insns < VERIFIER_LIMIT // 2, info and info.verified_insns


def test_a_cached_object_needs_no_clang(tmp_path, monkeypatch):
    from netweave.errors import NetweaveError
    from netweave.testbed.net.bpf import PASS, can_build, compile_program, object_path

    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    monkeypatch.setenv("PATH", str(tmp_path))  # no clang on it
    assert shutil.which("clang") is None and not can_build(PASS)
    with pytest.raises(NetweaveError, match="pass.bpf.c is not compiled here and needs clang"):
        compile_program(PASS)
    assert not any((tmp_path / "cache").rglob("*.o"))  # nothing left behind
    obj = object_path(PASS)
    obj.parent.mkdir(parents=True, exist_ok=True)
    obj.write_bytes(b"an object compiled elsewhere")
    assert can_build(PASS) and compile_program(PASS) == obj
    assert not can_build(PASS, {"X": 1})  # other defines: another object
    assert object_path(PASS, {"X": 1}) != obj and object_path(PASS, {"X": 1}).parent == obj.parent


def test_possible_cpus_is_the_highest_possible_cpu_plus_one(tmp_path):
    from netweave.errors import NetweaveError
    from netweave.testbed.net.bpf import possible_cpus

    f = tmp_path / "possible"
    for text, n in (("0\n", 1), ("0-1\n", 2), ("0-3,8-11\n", 12), ("0,5\n", 6)):
        f.write_text(text)
        assert possible_cpus(str(f)) == n
    f.write_text("")
    with pytest.raises(NetweaveError, match="possible CPUs"):
        possible_cpus(str(f))
    assert possible_cpus() >= 1  # this machine's
