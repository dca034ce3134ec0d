"""Destinations the switch should forward rather than aggregate (beyond the paper).

An aggregator saves messages only when several contributions to one destination would otherwise go
down separately. The switch's bypass sends one copy per (sender, destination worker), shared by
every bypassed destination of that sender on that worker, while an aggregated destination costs one
result message of its own. So a destination with a single remote neighbour never gains from an
aggregator (its result replaces at most one copy), and a destination all of whose senders already
send a copy to its worker gains nothing either. Forwarding both kinds never adds a message down,
frees their aggregators for the destinations that do gain, and keeps the sums exact: the host adds
copies as it adds results.
"""

from __future__ import annotations

import numpy as np

from ..graph.counting import run_bounds
from .boundary import BoundaryRelation


def forwarded_destinations(rel: BoundaryRelation) -> np.ndarray:
    """``(n,)`` bool: destinations with one remote neighbour, then every destination whose senders'
    copies to its worker those already require (one pass: forwarding it adds no copy)."""
    sender, owner = rel.senders(), rel.parts[rel.dst]
    forward = rel.need == 1
    if sender.size == 0:
        return forward
    copies = run_bounds(sender, owner)  # the copy (sender, worker) an edge would ride in: edges go by sender
    needed = np.logical_or.reduceat(forward[rel.dst], copies[:-1])  # the copy goes anyway
    covered = np.repeat(needed, np.diff(copies))
    uncovered = np.bincount(rel.dst[~covered], minlength=rel.parts.size)
    return forward | ((rel.need > 1) & (uncovered == 0))
