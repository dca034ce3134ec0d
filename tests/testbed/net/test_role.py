"""Every process role's configuration crosses the process boundary as JSON and comes back as the
same typed value (issue 30: no ``python -m`` role reads an untyped dict)."""

import dataclasses
import importlib
import inspect
import pkgutil

import pytest

import netweave.testbed
from netweave.testbed.agg.agent import AgentConfig
from netweave.testbed.agg.ps import GroupEndpoint, PsConfig
from netweave.testbed.agg.ring import RingConfig
from netweave.testbed.agg.stream_agent import StreamAgentConfig
from netweave.testbed.agg.stream_client import StreamEndpoint, StreamSpec, StreamWorkerConfig
from netweave.testbed.agg.stream_probe import StreamProbeConfig
from netweave.testbed.agg.stream_xdp import StreamSwitch
from netweave.testbed.agg.worker import WorkerConfig
from netweave.testbed.gnn.probe import ProbeConfig
from netweave.testbed.gnn.switch import SwitchConfig
from netweave.testbed.gnn.worker import WorkerConfig as GnnWorkerConfig
from netweave.testbed.net.background import BackgroundConfig
from netweave.testbed.net.multicast import Route, RouterConfig
from netweave.testbed.net.role import RoleConfig

COMMON = dict(seed=1, batch=64, model="lenet5", data="digits", epochs=2, lr=0.05, momentum=0.9, timeout_s=60.0,
              port=47000, steps=None, eval_samples=512)
EXAMPLES = [
    AgentConfig(agg_id=3, port=47000, workers={1: "fp8", 2: "fp16", 1003: "fp32"}, timeout_s=0.2, memory_bytes=1 << 20,
                dataplane="user", address="10.79.0.1", addresses={1: "10.78.0.2", 2: "10.78.0.3"},
                ps=("10.78.0.1", 47000), parent=(1, 1003), parent_address=("10.79.0.2", 47000)),
    PsConfig(**COMMON, address="10.78.0.1", control_port=47001, interface="e0",
             groups={1: GroupEndpoint(("10.79.0.1", 47000), {1: "fp8"}), 0: GroupEndpoint(None, {2: "fp32"})},
             wires={1: "fp8", 2: "fp32"}, worker_addresses={1: ("10.78.0.2", 47000)}, retry_s=0.5,
             multicast=("239.78.0.1", 47100), multicast_bps=9e8),
    WorkerConfig(**COMMON, rank=0, workers=2, wor_id=1, precision="fp8", wire="fp16", agg_id=1,
                 target=("10.79.0.1", 47000), address="10.78.0.2", interface="e1", ps_control=("10.78.0.1", 47001),
                 multicast=("239.78.0.1", 47100), multicast_timeout_s=2.0, rate_bps=1e8),
    RingConfig(**COMMON, rank=1, workers=2, master="10.78.0.2", control_port=47001, interface="e2"),
    StreamAgentConfig(switch=StreamSwitch(agg_id=2, port=47000, results_port=47002, group="239.78.0.2",
                                          address="10.79.0.2", members={1: "fp8", 1003: "fp8"}, memory_bytes=1 << 20,
                                          parent=(1, 1002), parent_address="10.79.0.1", up="e0", down=("e1", "e2")),
                      dataplane="user", address="10.79.0.2", workers={1: "10.78.0.2", 2: "10.78.0.3"}),
    StreamWorkerConfig(**COMMON, endpoint=StreamEndpoint(
        rank=0, workers=2, wor_id=1, agg_id=2, target=("10.79.0.2", 47000), port=47000, stream=1,
        streams=(StreamSpec(1, "fp8", 1, "10.79.0.1"), StreamSpec(1, "fp16", 1, "10.79.0.1")), address="10.78.0.2",
        interface="e1", results_group="239.78.0.2", results_port=47002, retransmit_s=0.1, timeout_s=60.0)),
    StreamProbeConfig(endpoint=StreamEndpoint(
        rank=1, workers=2, wor_id=2, agg_id=2, target=("10.79.0.2", 47000), port=47000, stream=1,
        streams=(StreamSpec(1, "fp32", 1, "10.79.0.1"),), address="10.78.0.3", interface="e2",
        results_group="239.78.0.2", results_port=47002, retransmit_s=0.1, timeout_s=60.0),
        size=10_000, steps=3, seed=0, out="/tmp/probe"),
    RouterConfig(routes=(Route("10.78.0.1", "239.78.0.1", "e0", ("e1", "e2")),), interfaces=("e0", "e1", "e2")),
    SwitchConfig(address="10.79.0.1", port=47200, workers=4, memory_bytes=200_000, plans=None),
    SwitchConfig(address="10.79.0.1", port=47200, workers=2, memory_bytes=200_000, plans="/tmp/x/plans.npz",
                 dataplane="xdp", ports={0: ("e0", "10.78.0.1", "02:00:00:00:00:01", "02:00:00:00:00:02")},
                 data_port=47202, worker_port=47203, overlap=True, ecn_bytes=64_000, link_kbit=100_000),
    ProbeConfig(rank=1, address="10.78.0.3", switch=("10.79.0.1", 47200), directory="/tmp/x", memory_bytes=1 << 20,
                overlap=True, rounds=2, seed=3, out="/tmp/x/probe1.npz", timeout_s=30.0, retransmit_s=0.05),
    GnnWorkerConfig(rank=2, workers=4, address="10.78.0.4", peers={0: "10.78.0.2", 3: "10.78.0.5"},
                    switch=("10.79.0.1", 47200), exchange="ina", directory="/tmp/x", dims=(1433, 16, 7),
                    num_train=140, epochs=3, lr=0.01, weight_decay=5e-4, dropout=0.5, seed=0, timeout_s=300.0,
                    congestion_control=True, fast_pull=False),
    BackgroundConfig(address="10.78.0.2", peers=("10.78.0.3", "10.78.0.4"), load=0.3, link_gbps=0.1, seed=5,
                     duration_s=30.0),
]


@pytest.mark.parametrize("config", EXAMPLES, ids=lambda c: type(c).__qualname__)
def test_a_config_comes_back_as_the_same_value(config):
    back = type(config).from_json(config.to_json())
    assert back == config and type(back) is type(config)
    for f in dataclasses.fields(config):  # the same types, not just equal values (tuples stay tuples, int keys ints)
        assert type(getattr(back, f.name)) is type(getattr(config, f.name)), f.name


def test_unknown_fields_are_refused():
    text = RingConfig(**COMMON, rank=1, workers=2, master="m", control_port=1, interface="e0").to_json()
    with pytest.raises(TypeError, match="unknown fields"):
        RingConfig.from_json(text.replace('"rank"', '"rnak"'))


def test_every_role_config_is_covered():
    """Every RoleConfig subclass in the testbed has an example above."""
    found = set()
    for info in pkgutil.walk_packages(netweave.testbed.__path__, "netweave.testbed."):
        module = importlib.import_module(info.name)
        found |= {cls for _, cls in inspect.getmembers(module, inspect.isclass)
                  if issubclass(cls, RoleConfig) and cls is not RoleConfig and cls.__module__ == info.name
                  and not [s for s in cls.__subclasses__()]}
    assert found == {type(c) for c in EXAMPLES}
