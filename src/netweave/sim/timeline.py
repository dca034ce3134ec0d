"""The simulator's time series as CSV (its figure, like switchgnn.txt Figure 2, is
:func:`netweave.report.timeline.plot_timelines`)."""

from __future__ import annotations

from pathlib import Path

import numpy as np

COLUMNS = ("time_s", "delivered_gbps", "aggregated_gbps", "aggregator_bytes", "max_queue_bytes")


def save_timeline_csv(timeline: np.ndarray, path: str | Path) -> None:
    """``timeline`` ``(T, 5)`` as in :class:`~netweave.sim.SimResult`, one row per bin."""
    np.savetxt(path, timeline, delimiter=",", header=",".join(COLUMNS), comments="", fmt="%.9g")
