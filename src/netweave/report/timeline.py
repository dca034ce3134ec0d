"""The simulator's time series as a three-panel figure like switchgnn.txt Figure 2: throughput
delivered to the hosts (all and aggregated results), aggregator memory in use, and the largest
switch output queue. Each timeline is ``(T, 5)`` as in :class:`netweave.sim.SimResult`."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from .plots import pyplot, save_png


def plot_timelines(timelines: dict[str, np.ndarray], path: str | Path) -> None:
    """One line per labelled run on each of the three panels; writes a PNG."""
    fig, axes = pyplot().subplots(1, 3, figsize=(14, 3.6))
    for label, tl in timelines.items():
        ms = tl[:, 0] * 1e3
        line, = axes[0].plot(ms, tl[:, 1], label=f"{label} total")
        axes[0].plot(ms, tl[:, 2], ls="--", color=line.get_color(), label=f"{label} aggregated")
        axes[1].plot(ms, tl[:, 3] / 1e6, label=label)
        axes[2].plot(ms, tl[:, 4] / 1e6, label=label)
    for ax, ylabel in zip(axes, ("throughput to hosts (Gb/s)", "aggregators in use (MB)", "largest queue (MB)")):
        ax.set_xlabel("time (ms)")
        ax.set_ylabel(ylabel)
        ax.grid(alpha=0.3)
    axes[0].legend(fontsize=7)
    axes[1].legend(fontsize=7)
    save_png(fig, path, dpi=120)
