"""The tables the loader writes into the kernel switch's maps have the program's own layout, field
for field, as the compiled object's BTF describes its structs (``bpftool btf dump``): a field that
moved on one side only (an 8-byte array after an odd number of 4-byte fields, say) would have the
program read every packet's cuts and subsets shifted, which only a run as root would show, as
sums that never come. Needs clang or a compiled object, and bpftool; no root."""

import json
import shutil
import subprocess

import pytest

from netweave.testbed.gnn import kswitch
from netweave.testbed.net.bpf import can_build, compile_program
from netweave.testbed.programs import program

SWITCH = program("gnn switch, pinned")
pytestmark = pytest.mark.skipif(shutil.which("bpftool") is None or not can_build(SWITCH.source, SWITCH.define_values()),
                                reason="needs bpftool, and clang or the switch's compiled object")


def _types() -> list[dict]:
    """The compiled switch's BTF types."""
    obj = compile_program(SWITCH.source, SWITCH.define_values())
    out = subprocess.run(["bpftool", "-j", "btf", "dump", "file", str(obj)], capture_output=True, text=True, check=True)
    return json.loads(out.stdout)["types"]


def _structs() -> dict[str, dict]:
    return {t["name"]: t for t in _types() if t.get("kind") == "STRUCT" and t.get("name")}


def _layout(t: dict) -> list[tuple[str, int]]:
    return [(m["name"], m["bits_offset"] // 8) for m in t["members"]]


@pytest.mark.parametrize("name", ["layer", "unit", "packet", "touch"])
def test_each_tables_dtype_is_the_programs_struct(name):
    from netweave.testbed.gnn.tables import LAYER, UNIT
    from netweave.testbed.gnn.touches import PACKET, TOUCH

    dtype = {"layer": LAYER, "unit": UNIT, "packet": PACKET, "touch": TOUCH}[name]
    t = _structs()[name]
    assert dtype.itemsize == t["size"]
    assert [(f, dtype.fields[f][1]) for f in dtype.names] == _layout(t)


def test_the_config_a_port_and_the_addends_are_the_programs_structs():
    from netweave.testbed.gnn.touches import SUBS

    structs = _structs()
    assert kswitch.CONFIG.size == structs["config"]["size"]
    assert kswitch.PORT.size == structs["port"]["size"]
    assert structs["addends"]["size"] == 8 * SUBS  # int64 lanes: the tables' sub · lanes stay inside
    # the 8-byte mask after four 4-byte fields, the CPUs last
    assert dict(_layout(structs["config"]))["all_mask"] == 16 and _layout(structs["config"])[-1][0] == "cpu"


def test_a_field_out_of_place_is_caught():
    import numpy as np

    from netweave.testbed.gnn.touches import PACKET

    t = _structs()["packet"]
    unpadded = np.dtype([(f, PACKET.fields[f][0]) for f in PACKET.names if f != "pad"])  # used right after conv
    assert [(f, unpadded.fields[f][1]) for f in unpadded.names] != _layout(t)


def test_the_counters_are_the_programs_in_its_order():
    """``kswitch.COUNTERS`` names the program's counters enum (``C_UNITS`` .. ``C_MAX``) in order,
    and its per-CPU array holds as many (``max_entries``, from the BTF): a counter added in C alone
    would shift every name after it, and the runs would report the touches as subsets."""
    import re

    from netweave.testbed.net.bpf import package_source

    text = package_source(SWITCH.source).read_text()
    enum = re.search(r"enum\s*\{\s*(C_UNITS[^}]*)\}", text).group(1)
    names = [n.strip() for n in enum.split(",") if n.strip()]
    assert names[-1] == "C_MAX" and [n[2:].lower() for n in names[:-1]] == list(kswitch.COUNTERS)
    types = {t["id"]: t for t in _types()}
    maps = next(t for t in types.values() if t.get("kind") == "DATASEC" and t.get("name") == ".maps")
    var = next(types[v["type_id"]] for v in maps["vars"] if types[v["type_id"]]["name"] == "counters")
    member = next(m for m in types[var["type_id"]]["members"] if m["name"] == "max_entries")
    pointer = types[member["type_id"]]
    assert types[pointer["type_id"]]["nr_elems"] == len(kswitch.COUNTERS)
