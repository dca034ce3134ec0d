"""Background traffic (testbed/net/background.py, sim/background.py, switchgnn.txt §6.5): flow sizes
follow the published Hadoop distribution (checked against the table's percentiles as printed,
not against our arrays); a role on an
emulated star sends at about the load asked, drains what comes, and ends when its stdin closes."""

import numpy as np
import pytest

from netweave.sim.background import HADOOP_SIZES, flow_sizes, mean_flow_bytes
from netweave.testbed.net import netns
from netweave.testbed.net.background import BackgroundConfig, run

missing = netns.missing_requirements()
needs_root = pytest.mark.skipif(bool(missing), reason="the testbed needs " + "; ".join(missing))


def test_flow_sizes_follow_the_published_cdf():
    sizes = flow_sizes(np.random.default_rng(1), 400_000)
    for size, percent in [(350, 15), (700, 50), (1000, 60), (50_000, 82), (300_000, 95), (2_000_000, 99)]:
        assert (sizes <= size).mean() * 100 == pytest.approx(percent, abs=0.4), size
    assert sizes.max() <= HADOOP_SIZES[-1] and sizes.min() >= 1
    # the mean by the trapezoid over the table, worked out by hand for its last segment: 1.0 % of flows
    # between 2 and 10 MB contribute 0.01 * 6e6 = 60 KB of the 120 KB
    assert mean_flow_bytes() == pytest.approx(120_420.75)
    assert sizes.mean() == pytest.approx(mean_flow_bytes(), rel=0.05)


def test_a_bad_configuration_is_refused():
    for cfg in (BackgroundConfig("10.0.0.1", ("10.0.0.2",), load=1.2, link_gbps=0.1),
                BackgroundConfig("10.0.0.1", (), load=0.5, link_gbps=0.1)):
        with pytest.raises(ValueError):
            run(cfg)


@needs_root
@pytest.mark.slow
def test_roles_send_about_the_load_and_end_when_told():
    import time

    from netweave.testbed.net.cluster import plan_cluster
    from netweave.testbed.net.lifecycle import Testbed
    from netweave.testbed.net.supervisor import Supervisor
    from netweave.topology import load_topology_spec

    gbps, load, duration = 0.05, 0.5, 60.0
    with Testbed(plan_cluster(load_topology_spec(f"star:n=3,gbps={gbps}"))) as cluster, Supervisor(30) as sup:
        hosts = cluster.hosts
        roles = [sup.start(f"background {h}", cluster.namespace[h], "netweave.testbed.net.background",
                           BackgroundConfig(cluster.address[h], tuple(cluster.address[g] for g in hosts if g != h),
                                            load=load, link_gbps=gbps, seed=7 + i, duration_s=duration))
                 for i, h in enumerate(hosts)]
        time.sleep(6.0)
        t0 = time.monotonic()
        totals = [sup.finish(r) for r in roles]
        assert time.monotonic() - t0 < duration / 4  # they ended when told, long before their own limit
    sent = sum(t["sent_bytes"] for t in totals)
    received = sum(t["received_bytes"] for t in totals)
    assert all(t["flows"] > 20 for t in totals)
    assert received <= sent and received >= 0.7 * sent  # TCP: what was written arrives, less what was in flight
    offered = load * gbps * 1e9 / 8 * 6.0 * len(hosts)
    assert 0.3 * offered < sent < 2.0 * offered  # heavy-tailed sizes: about the load over 6 s
