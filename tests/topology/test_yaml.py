import pytest

from netweave.errors import NetweaveError
from netweave.topology import load_topology, load_topology_spec, save_topology, topology_to_dict
from netweave.topology.yaml_io import format_bytes, parse_bytes

EXAMPLE = """
name: small-leaf-spine
nodes:
  - {name: L0, kind: switch, ina: true, pipelines: 4, aggregator_memory: 100MB,
     ina_capacity_gbps: {fp8: 6, fp16: 24}}
  - {name: S0, kind: switch}
  - {name: W0, kind: host}
  - {name: W1, kind: host}
  - {name: G0, kind: gpu, server: M0}
  - {name: CPU0, kind: cpu, server: M0}
links:
  - {a: W0, b: L0, gbps: 100, latency_us: 1, b_pipeline: 0}
  - {a: W1, b: L0, gbps: 100, b_pipeline: 3}
  - {a: L0, b: S0, gbps: 400}
  - {a: G0, b: CPU0, gbps: 89.04}
  - {a: CPU0, b: S0, gbps: 100}
"""


def test_design_example_loads(tmp_path):
    (tmp_path / "t.yaml").write_text(EXAMPLE)
    t = load_topology(tmp_path / "t.yaml")
    l0 = t.node("L0")
    assert l0.ina and l0.pipelines == 4 and l0.aggregator_memory == 100_000_000
    assert l0.ina_capacity_gbps == {"fp8": 6.0, "fp16": 24.0}
    assert t.workers == ["G0"]  # GPUs are the workers when there are any
    assert t.port_pipeline("L0", 1) == 3 and t.port_pipeline("L0", 2) == 2 * 4 // 3


@pytest.mark.parametrize("spec", ["dgx1", "dgx1x2", "fattree:k=4,ina=0.5,pipelines=2,memory=8MiB",
                                  "leafspine:leaves=3,spines=2,hosts=2,ina=1", "random:switches=6,degree=3,hosts=6"])
def test_roundtrip(tmp_path, spec):
    t = load_topology_spec(spec)
    save_topology(t, tmp_path / "t.yaml")
    u = load_topology(tmp_path / "t.yaml")
    assert topology_to_dict(u) == topology_to_dict(t)
    assert [t.port_pipeline(l.a, e) for e, l in enumerate(t.links) if t.node(l.a).kind == "switch"] == \
           [u.port_pipeline(l.a, e) for e, l in enumerate(u.links) if u.node(l.a).kind == "switch"]


def test_sizes():
    assert parse_bytes("100MB", "x") == 10**8 and parse_bytes("4MiB", "x") == 4 * 2**20
    assert parse_bytes(123, "x") == 123 and format_bytes(4 * 2**20) == "4MiB"
    assert format_bytes(10**8) == "100MB" and format_bytes(1001) == 1001
    with pytest.raises(NetweaveError, match="not a size"):
        parse_bytes("12 parsecs", "x")


BAD = [
    ("nodes: [{name: A, kind: host}, {name: A, kind: host}]\nlinks: []", "duplicate node name 'A'"),
    ("nodes: [{name: A, kind: host}, {name: B, kind: host}]\nlinks: [{a: A, b: C, gbps: 1}]", "unknown node 'C'"),
    ("nodes: [{name: A, kind: host}, {name: Bee, kind: host}]\nlinks: [{a: A, b: Be, gbps: 1}]", "did you mean 'Bee'"),
    ("nodes: [{name: A, kind: host}, {name: B, kind: host}]\nlinks: [{a: A, b: B, gbps: -5}]", "gbps must be a positive"),
    ("nodes: [{name: A, kind: host}, {name: B, kind: host}]\nlinks: [{a: A, b: B, gbps: 0}]", "gbps must be a positive"),
    ("nodes: [{name: A, kind: host}, {name: B, kind: host}]\nlinks: [{a: A, b: B, gbps: fast}]", "gbps must be a number"),
    ("nodes: [{name: A, kind: host}, {name: B, kind: host}, {name: C, kind: host}]\nlinks: [{a: A, b: B, gbps: 1}]",
     "workers C cannot reach A"),
    ("nodes: [{name: A, kind: router}]\nlinks: []", "unknown kind 'router'"),
    ("nodes: [{name: A, kind: host, colour: red}]\nlinks: []", "unknown key 'colour'"),
    ("nodes: [{name: A, kind: host}, {name: S, kind: switch, pipelines: 2}]\nlinks: [{a: A, b: S, gbps: 1, b_pipeline: 2}]",
     "pipeline 2 of 'S' outside 0..1"),
    ("nodes: [{name: A, kind: host}, {name: B, kind: host}]\nlinks: [{a: A, b: B, gbps: 1, a_pipeline: 0}]", "not a switch"),
    ("nodes: [{name: A, kind: host}, {name: B, kind: host}]\nlinks: [{a: A, b: B, gbps: 1}, {a: B, b: A, gbps: 2}]",
     "duplicate of link 0"),
    ("nodes: [{name: A, kind: host}]\nlinks: [{a: A, b: A, gbps: 1}]", "two different nodes"),
    ("nodes: [{name: A, kind: host, ina: true}]\nlinks: []", "only switches"),
    ("nodes: [{name: S, kind: switch, ina_capacity_gbps: {fp64: 3}}]\nlinks: []", "unknown precision 'fp64'"),
    ("nodes: [{name: A, kind: host}]", "needs top-level"),
    ("nodes: [{name: A, kind: host}\nlinks: [", "invalid YAML at line"),
]


@pytest.mark.parametrize("text, match", BAD)
def test_validation_errors_are_one_clear_line(tmp_path, text, match):
    path = tmp_path / "bad.yaml"
    path.write_text(text)
    with pytest.raises(NetweaveError, match=match) as err:
        load_topology(path)
    assert "\n" not in str(err.value) and str(path) in str(err.value)


# Node names reach the emulated cluster (issue 29): a conservative set, refused in one line naming the node.
BAD_NAMES = [
    '"H0\\nnetns exec nwtx-n0 touch /tmp/pwned"',  # a newline would add a line to `ip -batch`
    '"H0\\0"', '"with space"', '"-leading-dash"', '"semi;colon"', '"sl/ash"', '"caf\\u00e9"', "'" + "x" * 65 + "'",
    '".hidden"', '"$(id)"',
]


@pytest.mark.parametrize("name", BAD_NAMES)
def test_node_names_outside_the_rule_are_refused_in_one_line(tmp_path, name):
    path = tmp_path / "names.yaml"
    path.write_text(f"nodes: [{{name: A, kind: host}}, {{name: {name}, kind: host}}]\nlinks: []\n")
    with pytest.raises(NetweaveError, match=r"node 1: the name .* is not allowed; a node name is 1 to 64 letters") as err:
        load_topology(path)
    assert "\n" not in str(err.value) and "\0" not in str(err.value)


@pytest.mark.parametrize("name", ["A", "0", "h-1.b_2", "x" * 64, "CPU0"])
def test_node_names_inside_the_rule_load(tmp_path, name):
    path = tmp_path / "names.yaml"
    path.write_text(f"nodes: [{{name: A0, kind: host}}, {{name: '{name}', kind: host}}]\nlinks: [{{a: A0, b: '{name}', gbps: 1}}]\n")
    assert load_topology(path).nodes[1].name == name
