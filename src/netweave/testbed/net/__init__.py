"""The emulated network: a :class:`~netweave.topology.Topology` as Linux network namespaces.

:mod:`.cluster` plans the namespaces, shaped veth links and routes (pure, testable without root);
:mod:`.lifecycle` brings a cluster up and removes it on every exit path (and ``testbed down``
removes only what netweave recorded making); :mod:`.netns` holds the ``ip``/``tc`` primitives;
:mod:`.impair` loses, duplicates and reorders packets with a tc-BPF program; :mod:`.multicast`
forwards IPv4 multicast through the switch namespaces; :mod:`.batchio` moves datagrams in batches;
:mod:`.bpf` and :mod:`.native` compile what runs in the kernel and in C; :mod:`.supervisor` runs
the processes of a run, whose typed configurations derive from :class:`~.role.RoleConfig`;
:mod:`.ports` holds the MTU, the ports and the datagram sizes. Nothing here knows what the
processes compute: gradient aggregation is :mod:`netweave.testbed.agg`, the SwitchGNN exchange
:mod:`netweave.testbed.gnn`.
"""

from .cluster import ClusterPlan, Shaping, new_prefix, plan_cluster
from .impair import Impairment
from .lifecycle import Testbed, down, remove, up

__all__ = ["ClusterPlan", "Impairment", "Shaping", "plan_cluster", "new_prefix", "Testbed", "up", "down", "remove"]
