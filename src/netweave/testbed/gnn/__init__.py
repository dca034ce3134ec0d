"""Full-graph GNN training through the SwitchGNN exchange on the testbed (switchgnn.txt §3, §5).

:mod:`.wire` is the protocol the switch agent and the workers share, :mod:`.plans` the plans'
arrays, :mod:`.switch` the switch agent, :mod:`.worker` a worker (and its transports), :mod:`.job`
what the launcher prepares and the single-process reference, :mod:`.launch` a whole run. It uses
:mod:`netweave.testbed.net` and never :mod:`netweave.testbed.agg`.
"""

from .launch import EXCHANGES, GnnTestbedRun, train_gnn_on_testbed

__all__ = ["EXCHANGES", "GnnTestbedRun", "train_gnn_on_testbed"]
