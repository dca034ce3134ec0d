"""``InaPlan``: what every host sends, block by block, for one layer's propagation (the value;
:mod:`.build` makes it for one blocking, :mod:`.choose` picks a blocking, :mod:`.plan` is the entry point).

The plan is the input of the switch simulator (:mod:`netweave.sim`). Three strategies:

* ``host`` (BNS-GCN, p = 1): a host sends one copy of ``u`` per remote worker owning a neighbour
  of ``u`` (a *unicast unit* ``(u, w)``); switches only forward; the destination host sums.
* ``straw`` (§2.3.2): each boundary vertex goes up once (a *multicast unit*); the switch adds it
  into its destinations' aggregators, best effort. One block; ``memory_bytes=None`` is ``UL``.
* ``switchgnn`` (§3): the cross edges are split into multi-level blocks that fit the switch
  (:func:`~netweave.ina.blocks.multilevel_blocks`); in each block every sender goes up once in
  GAMR order (or random); blocks are synchronised (§3.3 last paragraph).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

STRATEGIES = ("host", "straw", "switchgnn")
# How ``switchgnn`` cuts the cross edges into blocks (§3.3 and beyond; see :func:`~.build.switchgnn_blocks`)
BLOCKINGS = ("paper", "multilevel", "destination", "hybrid", "single", "multicast")


@dataclass(frozen=True, eq=False)
class InaPlan:
    """Edges, units and destinations of one layer's propagation.

    Attributes:
        strategy: one of :data:`STRATEGIES`.
        num_workers, num_blocks: ``M`` and ``B`` (1 unless ``switchgnn``).
        feature_bytes: bytes of one feature (``D × 4``).
        memory_bytes: aggregator memory of the switches: one int for every switch, a
            ``(switches,)`` array per switch (leaves then spines, as in
            :class:`~netweave.sim.network.SimNetwork`), or ``None`` (unlimited).
        src, dst, block: ``(C,)`` cross edges ``src -> dst`` sorted by (block, src, owner of dst, dst).
        unit_lo, unit_hi: ``(U,)`` edge range of every unit (one message of ``feature_bytes``).
        unit_to: ``(U,)`` destination worker of a unicast unit, ``-1`` for a multicast unit.
        unit_ptr: ``(M*B + 1,)`` units of worker ``h`` in block ``b`` are ``unit_ptr[h*B+b]:unit_ptr[h*B+b+1]``,
            in sending order.
        in_edges: ``(C,)`` edge ids sorted by (block, dst, owner of src).
        dest_v, dest_lo, dest_hi: ``(K,)`` per (block, destination vertex): the vertex and its range
            in ``in_edges`` (its ``need`` is ``hi - lo`` cross edges).
        dest_ptr: ``(M*B + 1,)`` destinations of worker ``h`` in block ``b``.
        levels: ``(B,)`` multi-level partitioning level of every block (zeros otherwise).
        overlap: blocks are double-buffered (beyond the paper): each block fits half the memory, and a
            host sends block ``b + 1`` while block ``b`` drains; block ``b + 2`` waits until every
            host holds block ``b``'s sums. ``False``: the paper's barrier between blocks (§3.3).
        forward: ``(n,)`` bool, destinations the switches forward unaggregated (beyond the paper, see
            :mod:`~netweave.ina.forward`); their edges ride their sender's first block. ``None``: none.
    """

    strategy: str
    num_workers: int
    num_blocks: int
    feature_bytes: int
    memory_bytes: int | np.ndarray | None
    parts: np.ndarray
    src: np.ndarray
    dst: np.ndarray
    block: np.ndarray
    unit_lo: np.ndarray
    unit_hi: np.ndarray
    unit_to: np.ndarray
    unit_ptr: np.ndarray
    in_edges: np.ndarray
    dest_v: np.ndarray
    dest_lo: np.ndarray
    dest_hi: np.ndarray
    dest_ptr: np.ndarray
    levels: np.ndarray
    overlap: bool = False
    forward: np.ndarray | None = None

    @property
    def synchronised(self) -> bool:
        """Blocks wait for each other: the simulator synchronises whenever there is more than one."""
        return self.num_blocks > 1

    @property
    def num_units(self) -> int:
        return int(self.unit_lo.size)
