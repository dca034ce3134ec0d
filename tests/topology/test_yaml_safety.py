"""Untrusted YAML/JSON: aliases, nesting and size are refused in one line, before any expansion."""

import pytest

import netweave._files as files
from netweave._files import MAX_DEPTH, read_json, read_yaml
from netweave.errors import NetweaveError
from netweave.topology import load_topology

LAUGHS = "\n".join(['a: &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]']
                   + [f"{n}: &{n} [" + ",".join([f"*{p}"] * 9) + "]" for p, n in zip("abcdefgh", "bcdefghi")])


@pytest.mark.parametrize("text, match", [
    (LAUGHS + "\nnodes: *i\nlinks: []\n", "line 1, column 4 .*anchors and aliases"),
    ("nodes: [{name: A, kind: host, server: &s M0}, {name: B, kind: host, server: *s}]\nlinks: []\n",
     "line 1, column 39 .*anchors and aliases"),
    ("x: &x 1\nnodes: []\nlinks: []\n", "line 1, column 4 .*anchors and aliases"),  # an unused anchor too
    ("nodes: " + "[" * 100_000 + "]" * 100_000 + "\nlinks: []\n", f"nested deeper than {MAX_DEPTH} levels"),
    ("nodes:\n" + "".join("  " * i + "- \n" for i in range(1, 200)) + "links: []\n", "nested deeper than"),
])
def test_topology_bombs_are_refused(tmp_path, text, match):
    path = tmp_path / "t.yaml"
    path.write_text(text)
    with pytest.raises(NetweaveError, match=match) as err:
        load_topology(path)
    assert "\n" not in str(err.value) and str(path) in str(err.value)


def test_nesting_up_to_the_limit_is_accepted(tmp_path):
    path = tmp_path / "deep.yaml"
    path.write_text("[" * (MAX_DEPTH - 1) + "]" * (MAX_DEPTH - 1))
    value = read_yaml(path)
    for _ in range(MAX_DEPTH - 2):
        value = value[0]
    assert value == []


def test_size_is_capped_before_parsing(tmp_path, monkeypatch):
    monkeypatch.setattr(files, "MAX_BYTES", 1000)
    path = tmp_path / "big.yaml"
    path.write_text("nodes: []\nlinks: []\n" + "# padding\n" * 200)
    with pytest.raises(NetweaveError, match="larger than the .* accepted for a topology file; describe a large network"):
        load_topology(path)
    with pytest.raises(NetweaveError, match="accepted for a YAML file; split it"):
        read_yaml(path)


def test_jobs_and_sweep_yaml_go_through_the_same_loader(tmp_path):
    path = tmp_path / "jobs.yaml"
    path.write_text("base: &b {weight: 1}\njobs: [*b]\n")
    with pytest.raises(NetweaveError, match="anchors and aliases"):
        read_yaml(path)
    path.write_text("jobs: [{name: J0, weight: 1.0}]\n")
    assert read_yaml(path) == {"jobs": [{"name": "J0", "weight": 1.0}]}


@pytest.mark.parametrize("content, match", [
    (b"[" * 100_000 + b"]" * 100_000, "nested too deeply"),
    (b"\xff\xfe{}", "not UTF-8"),
    (b"{broken", "not valid JSON"),
])
def test_json_errors_are_one_line(tmp_path, content, match):
    path = tmp_path / "r.json"
    path.write_bytes(content)
    with pytest.raises(NetweaveError, match=match) as err:
        read_json(path)
    assert "\n" not in str(err.value)


def test_devices_and_directories(tmp_path):
    with pytest.raises(NetweaveError, match="is a directory"):
        read_yaml(tmp_path)
    with pytest.raises(NetweaveError, match="not a regular file"):
        read_yaml("/dev/zero")  # a device is refused before anything is read
    with pytest.raises(NetweaveError, match="no such file"):
        read_yaml(tmp_path / "missing.yaml")


def test_a_fifo_is_refused_without_waiting_for_a_writer(tmp_path):
    """Opening a FIFO for reading blocks until someone writes (issue 29: every YAML/JSON reader hung)."""
    import os
    import threading

    fifo = tmp_path / "topology.yaml"
    os.mkfifo(fifo)
    outcome = []
    reader = threading.Thread(target=lambda: outcome.append(pytest.raises(NetweaveError, read_yaml, fifo)), daemon=True)
    reader.start()
    reader.join(timeout=10)
    if reader.is_alive():  # unblock the reader before failing
        os.close(os.open(fifo, os.O_WRONLY | os.O_NONBLOCK))
        pytest.fail("read_yaml waited on a FIFO")
    assert "not a regular file" in str(outcome[0].value)
