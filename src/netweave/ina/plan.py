"""``ina_plan``: the plan of one layer's propagation through INA switches, with the command line's defaults.

``netweave ina``, :class:`~netweave.scenarios.InaScenario` and this function agree on every
default (``tests/test_defaults.py`` checks it): GAMR order (§3.2.2), ``blocking="auto"`` (every
candidate blocking priced on :mod:`.choose`'s cost model, the fastest predicted runs; beyond the
paper, and :func:`~netweave.ina.choose.choose_plan` returns the whole choice), 100 MB of aggregator
memory per switch (:data:`~netweave.ina.strategies.SWITCH_MEMORY_BYTES`; ``None`` is unlimited), and
an explicit blocking other than ``paper`` forwarding what no aggregator can help (:mod:`.forward`).

The value is :class:`~.layer_plan.InaPlan` (re-exported here with :data:`STRATEGIES` and
:data:`BLOCKINGS`); :mod:`.build` makes it for one explicit blocking.
"""

from __future__ import annotations

import numpy as np

from ..errors import NetweaveError
from .blocks import Bound
from .boundary import BoundaryRelation
from .build import build_plan, switchgnn_blocks
from .choose import PathModel, choose_plan
from .layer_plan import BLOCKINGS, STRATEGIES, InaPlan
from .strategies import SWITCH_MEMORY_BYTES

AUTO = "auto"  # the blocking the cost model chooses (the default everywhere)


def ina_plan(rel: BoundaryRelation, strategy: str, feature_bytes: int,
             memory_bytes: int | np.ndarray | None = SWITCH_MEMORY_BYTES, order: str = "gamr", seed: int = 0,
             start: int | None = None, edge_memory: np.ndarray | None = None, blocking: str = AUTO,
             overlap: bool = False, max_blocks: int | None = None, forward: bool | None = None,
             bound: Bound | None = None, net=None) -> InaPlan:
    """Build the :class:`InaPlan` of ``strategy`` on the boundary relation ``rel``.

    ``order`` (``gamr`` | ``random``) is each worker's sending order (per block for ``switchgnn``);
    ``memory_bytes`` is the switches' aggregator memory, one int or one per switch (``switchgnn``
    needs a finite one; ``None`` is unlimited, the strawman's UL). ``switchgnn`` sizes its blocks to
    ``edge_memory`` ``(C,)`` when given: per cross edge of ``rel``, the smallest memory among the
    switches that aggregate it (:meth:`~netweave.sim.network.SimNetwork.edge_memory`); else to the
    smallest switch.

    ``blocking`` is how ``switchgnn`` cuts blocks: ``auto`` (the default) plans every candidate and
    returns the fastest on the cost model of :mod:`.choose`, priced on ``net`` (a
    :class:`~netweave.sim.network.SimNetwork`; default: a star of ``rel``'s workers at 100 Gb/s with
    2 µs links, the command line's default topology) — possibly host exchange; or one of
    :data:`BLOCKINGS`, built as given. ``overlap`` double-buffers an explicit blocking (each block is
    sized to half the memory; see :attr:`InaPlan.overlap`); ``max_blocks`` stops an explicit
    blocking that needs more, ``bound`` (:class:`~netweave.ina.blocks.Bound`) one that can no longer
    be picked (:class:`~netweave.ina.blocks.TooManyBlocks`). ``forward`` lets the switches forward
    the destinations that gain nothing from an aggregator (:func:`~netweave.ina.forward.forwarded_destinations`);
    only the others are blocked. ``None`` (the default) forwards for every explicit blocking but
    ``paper``, as ``netweave ina --blocking`` does. ``host`` and ``straw`` ignore the blocking.

    >>> from netweave.graph import load_dataset
    >>> from netweave.ina import boundary_relation
    >>> from netweave.partition import metis_partition
    >>> g = load_dataset("cora")
    >>> rel = boundary_relation(g, metis_partition(g, 8, seed=0))
    >>> ina_plan(rel, "switchgnn", 4 * 128, 40_000).strategy
    'switchgnn'
    """
    if strategy not in STRATEGIES:
        raise NetweaveError(f"unknown strategy {strategy!r}; use one of {', '.join(STRATEGIES)}")
    if blocking != AUTO and blocking not in BLOCKINGS:
        raise NetweaveError(f"unknown blocking {blocking!r}; use {AUTO} or one of {', '.join(BLOCKINGS)}")
    if strategy == "switchgnn" and blocking == AUTO:
        extra = [name for name, given in (("overlap", overlap), ("max_blocks", max_blocks is not None),
                                          ("forward", forward is not None), ("bound", bound is not None)) if given]
        if extra:
            raise NetweaveError(f"{extra[0]} goes with an explicit blocking; blocking='auto' tries every "
                                "candidate with and without it")
        if feature_bytes < 1:
            raise NetweaveError(f"feature size {feature_bytes} B must be positive")
        model = PathModel.of(net, feature_bytes) if net is not None else PathModel.star(rel.num_workers, feature_bytes)
        return choose_plan(rel, model, feature_bytes, memory_bytes, edge_memory, order, seed, start).plan
    explicit = blocking if blocking != AUTO else "paper"
    if forward is None:
        forward = blocking not in (AUTO, "paper")
    return build_plan(rel, strategy, feature_bytes, memory_bytes, order, seed, start, edge_memory, explicit, overlap,
                      max_blocks, forward, bound)


__all__ = ["AUTO", "BLOCKINGS", "STRATEGIES", "InaPlan", "ina_plan", "switchgnn_blocks"]
