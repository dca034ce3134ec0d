"""The table of the testbed's BPF programs (``testbed/programs.py``): each names a source shipped
in the package, the function it loads, and integer defines. Loading each against the kernel's
verifier is ``net/test_bpf.py``'s; compiling each ahead, ``tests/test_offline_kit.py``'s."""

from netweave.testbed.programs import GNN_KERNEL_PLANE, PROGRAMS, program


def test_every_program_is_in_the_package():
    from netweave.testbed.net.native import package_source

    labels = [p.label for p in PROGRAMS]
    assert len(set(labels)) == len(labels)
    for p in PROGRAMS:
        text = package_source(p.source).read_text()
        assert f"int {p.function}(" in text, (p.label, p.source)
        assert p.hook in ("tc", "xdp", "ip")
        assert all(isinstance(v, int) for v in (p.define_values() or {}).values())
    assert all(program(label).label == label for label in GNN_KERNEL_PLANE)
    assert {program(label).function for label in GNN_KERNEL_PLANE} == {"gnn_switch", "ecn_mark", "pass"}
