"""An emulated cluster for real training through in-network aggregation, in three wings.

* :mod:`.net` — the emulated network: namespaces, shaped links, impairments, multicast forwarding,
  batched I/O, BPF compilation, and one supervisor for the processes of a run.
* :mod:`.agg` — data-parallel training through gradient aggregation (PAHInA, ATP, GRID, ARO, the
  PS, gloo's ring): control-plane placement, the XDP aggregator and its agent, the endpoints.
* :mod:`.gnn` — full-graph GNN training through the SwitchGNN exchange (or peer to peer).

``agg`` and ``gnn`` use ``net`` and never each other.
"""

from .net import ClusterPlan, Impairment, Shaping, Testbed, down, new_prefix, plan_cluster, remove, up

__all__ = ["ClusterPlan", "Impairment", "Shaping", "plan_cluster", "new_prefix", "Testbed", "up", "down", "remove"]
