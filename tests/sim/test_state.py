"""The simulator's named structures: options built by name from SimConfig, counters and timeline
columns exported by name, and no function of sim/ with more than 8 positional parameters (issue 30)."""


import numpy as np
import pytest

from netweave.graph import load_dataset
from netweave.ina import boundary_relation
from netweave.ina.plan import ina_plan
from netweave.partition import metis_partition
from netweave.sim import SimConfig, sim_network, simulate
from netweave.sim.simulate import _capacity, _kernel_plan, _options
from netweave.sim.engine import COLUMN, COUNTER, Column, Counter
from netweave.sim.state import Network, Options, State
from netweave.topology import load_topology_spec



def _layer(strategy="switchgnn", memory=20 * 2 * 128, overlap=False):
    g = load_dataset("cora")
    rel = boundary_relation(g, metis_partition(g, 8, seed=0))
    plan = ina_plan(rel, strategy, 256, memory, order="gamr", blocking="destination" if overlap else "paper",
                    overlap=overlap)
    return plan, sim_network(load_topology_spec("star:n=8,gbps=100,latency_us=3"))


def test_every_option_is_taken_from_its_config_field_by_name():
    plan, net = _layer()
    config = SimConfig(buffer_bytes=123e3, congestion_control=True, ecn_bytes=45e3, ai_gbps=2.0, ai_every_us=7.0,
                       decrease_every_us=33.0, min_gbps=3.0, loss=0.01, timeout_us=250.0, background_load=0.2, seed=9,
                       bin_us=5.0, horizon_s=2.0, control_bytes=80, mtu_bytes=1000)
    opt = _options(plan, net, config, 3, 2, 11)
    assert isinstance(opt, Options) and len(opt) == len(Options._fields)
    expected = {"hosts": 8, "leaves": 1, "spines": 0, "blocks": plan.num_blocks, "feature_bytes": 256,
                "control_bytes": 80, "mtu_bytes": 1000, "dim": 3, "chunks": 2, "bins": 11, "seed": 9, "recover": True,
                "congestion_control": True, "overlap": plan.num_blocks > 1 and plan.overlap, "buffer_bytes": 123e3,
                "ecn_bytes": 45e3, "loss": 0.01, "timeout_s": 250e-6, "ai_rate": 2.0e9 / 8, "ai_every_s": 7e-6,
                "decrease_every_s": 33e-6, "min_rate": 3.0e9 / 8, "bin_s": 5e-6, "horizon_s": 2.0,
                "cnp_delay_s": 2 * 3e-6}
    for name, value in expected.items():
        assert getattr(opt, name) == pytest.approx(value, rel=1e-12), name
    assert opt.background_gap_s > 0
    unlimited = _options(plan, net, SimConfig(), 0, 2, 11)
    assert unlimited.buffer_bytes == np.inf and not unlimited.recover and unlimited.background_gap_s == 0


def test_counters_and_timeline_columns_are_exported_by_name():
    assert COUNTER == tuple(range(len(Counter._fields))) and COLUMN == tuple(range(len(Column._fields)))
    plan, net = _layer()
    r = simulate(plan, net, SimConfig(loss=0.02, seed=3))
    assert tuple(r.counters) == Counter._fields
    assert r.counters["lost_messages"] > 0 and r.counters["events"] > 0
    assert r.counters["control_bytes"] > 0 and r.counters["background_bytes"] == 0


def test_state_has_one_copy_per_block_parity():
    for overlap in (False, True):
        plan, net = _layer(overlap=overlap)
        kernel_plan = _kernel_plan(plan, net, np.zeros((plan.parts.size, 0)))
        opt = _options(plan, net, SimConfig(), 0, 2, 4)
        network = Network(net.leaf_of, net.rate, net.delay, np.ones(1, dtype=np.int64), np.ones(1))
        state = State.new(opt, network, kernel_plan, _capacity(plan, net, 2, kernel_plan.dest_vertex.size))
        parities = 2 if opt.overlap else 1
        assert opt.overlap == overlap
        assert state.hosts.remaining.shape == (8, parities) and state.destinations.got.shape[0] == parities
        assert state.switches.slot.shape == (1, parities, kernel_plan.dest_vertex.size)
        assert state.timeline.shape == (4, len(COLUMN)) and state.counters.shape == (len(COUNTER),)
