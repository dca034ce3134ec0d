"""The testbed's BPF programs against the kernel's verifier: each loads, and the instructions the
verifier walked (``bpf_prog_info.verified_insns``) stay under half its limit. Kernel 6.18.44's
verifier refused the SwitchGNN switch (a million instructions walked) until the cell's addition
and a sum's sending became global functions (333 K and 266 K there): half the limit is the alarm,
so a kernel whose verifier walks more, or code that adds to a walk, shows here before a kernel
refuses a program. Needs root and clang (skipped otherwise)."""

import shutil

import pytest

from netweave.testbed.net import netns

missing = netns.missing_requirements("clang")
pytestmark = pytest.mark.skipif(bool(missing) or shutil.which("clang") is None,
                                reason="the testbed's BPF programs need " + "; ".join(missing or ["clang"]))


# (module whose SOURCE it is, program, -D defines or the module's function giving them, a tc program)
PROGRAMS = {"gnn switch, pinned": ("gnn.kswitch", "gnn_switch", {"LOCKLESS": 1}, True),
            "gnn switch, locks": ("gnn.kswitch", "gnn_switch", {"LOCKLESS": 0}, True),
            "ECN marking": ("gnn.ecn", "ecn_mark", None, True),
            "multicast forwarder": ("net.multicast_tc", "mcast_fwd", None, True),
            "INA aggregator": ("agg.xdp", "ina_aggregate", "aggregator_defines", False),
            "streaming aggregator": ("agg.stream_xdp", "stream_aggregate", None, False)}


@pytest.mark.parametrize("name", list(PROGRAMS))
def test_each_program_verifies_within_half_the_verifiers_limit(name):
    import importlib

    from netweave.testbed.net.bpf import VERIFIER_LIMIT, TcObject, XdpObject, compile_program

    module, program, defines, tc = PROGRAMS[name]
    mod = importlib.import_module(f"netweave.testbed.{module}")
    defines = getattr(mod, defines)() if isinstance(defines, str) else defines
    with (TcObject if tc else XdpObject)(compile_program(mod.SOURCE, defines), program, [], None, name) as obj:
        info = obj.info()
    assert info is not None and 0 < info.verified_insns < VERIFIER_LIMIT // 2, info and info.verified_insns
