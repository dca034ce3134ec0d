"""Transports: the constants of the α–β cost model belong to what carries the bytes, not to the plan.

The α–β model (:mod:`.cost`) prices a stage ``t^k = α + o·n^k + max_i(λ_i + ℓ + t_i^k / η)``.
``α`` (the fixed cost of one synchronous stage), ``o`` (the cost of one message, paid one after
another by the busiest rank), ``ℓ`` (the latency of one message, paid on all links at once) and
``η`` (achieved / nominal bandwidth) differ by orders of magnitude between transports: gloo over
TCP pays a millisecond per stage and serves its peers one after another from CPU threads; an NCCL
kernel over NVLink pays microseconds and serves its peers in parallel channels. Each
:class:`Transport` carries its constants and where they come from:

* ``gloo`` — CPU tensors, gloo over TCP. Fitted here (non-negative least squares) by
  ``benchmarks/calibrate_cost.py`` to the 18 graph allgathers of ``benchmarks/results/netns_recal.json``
  (gloo over tc-shaped veth links between network namespaces); ``cost_calibration.json`` records
  the fit and ``tests/plan/test_cost_models.py`` keeps the two equal.
* ``nccl`` — GPU tensors inside one server (NVLink, PCIe, QPI). No GPU is available to measure,
  so the constants are taken from cited figures: ``α`` and ``o`` are NCCL's own latency constants
  (NVIDIA/nccl ``src/graph/tuning.cc``, "Latencies in us": ``baseLat`` of a Simple-protocol launch,
  8.4 µs, the fixed cost of one grouped send/receive kernel, i.e. one stage, is ``α``; ``hwLat`` of
  one NVLink step with the Simple protocol, 3.4 µs, the latency of one message, is ``ℓ``; ``o = 0``
  since the peers of a grouped call run in parallel channels), and ``η = 1`` because GPU topologies
  (``dgx1``, ``dgx1x2``, ``pcie8``) carry DGCL Table 1's *measured* link speeds, which already are
  what a transfer achieves. ``tests/plan/test_transport.py`` recomputes DGCL's Table 1 speeds and
  Table 3's QPI contention figures from these constants.

A topology whose workers are GPUs gets ``nccl``; one whose workers are hosts gets ``gloo``
(:func:`transport_for`). ``--transport`` overrides the choice.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..errors import NetweaveError


@dataclass(frozen=True)
class Transport:
    """The α–β constants of one transport and their source.

    Attributes:
        name: ``gloo`` or ``nccl`` (as on the command line).
        stage_overhead_s: ``α``, seconds per stage.
        message_overhead_s: ``o``, seconds per message of the busiest rank in a stage, paid in sequence.
        message_latency_s: ``ℓ``, seconds every message adds on its own link, paid in parallel.
        bandwidth_efficiency: ``η`` in (0, 1], achieved / nominal bandwidth of the topology's links.
        source: where the three numbers come from (a measurement here, or a citation).
    """

    name: str
    stage_overhead_s: float
    message_overhead_s: float
    message_latency_s: float
    bandwidth_efficiency: float
    source: str

    def constants(self) -> dict:
        """The four constants, with units in their keys (what ``plan --json`` reports)."""
        return {"stage_overhead_s": self.stage_overhead_s, "message_overhead_s": self.message_overhead_s,
                "message_latency_s": self.message_latency_s, "bandwidth_efficiency": self.bandwidth_efficiency}


# Refitted (issue 20) to the receive-first exchange, re-measured over the same shaped links
# (benchmarks/results/netns_recal.json): RMS relative error over the 18 fitted points 11.5 % (§5.1:
# 39.5 %). The first fit (α = 1.562 ms, o = 0, η = 0.54) described the older send-first exchange,
# which lost half the bandwidth. On the 18 small allgathers (widths 4–48) measured after this fit
# (netns_validation_recal.json) its RMS relative error is 106 % against 61 % for §5.1: those are
# latency-bound (1.7–14 ms), vary up to 3× between runs on this loaded machine, and the fitted
# per-message cost o (3 ms per stage at 3 peers) overestimates the smallest of them.
GLOO = Transport(
    "gloo", stage_overhead_s=0.000764, message_overhead_s=0.00102, message_latency_s=0.0, bandwidth_efficiency=0.96,
    source="measured here: fitted by benchmarks/calibrate_cost.py to 18 graph allgathers of "
           "benchmarks/results/netns_recal.json (gloo over TCP between network namespaces, tc-shaped links); "
           "RMS relative error 11.5 % (benchmarks/results/cost_calibration.json)")

# NCCL's tuning model, NVIDIA/nccl src/graph/tuning.cc at commit 01afd20a77b5804e0ecf1042509dd9d20ebf9e93
# (NCCL 2.7.5): baseLat[Ring][Simple] = 8.4 us, hwLat[NVLINK][Ring][Simple] = 3.4 us (hwLat[PCI] = 5.7 us:
# netweave uses one l for every message, the NVLink one, as DGCL's relays run over NVLink; the
# PCIe-QPI-PCIe messages this underprices by 2.3 us are bandwidth-bound, tens of microseconds).
NCCL_TUNING_URL = ("https://github.com/NVIDIA/nccl/blob/01afd20a77b5804e0ecf1042509dd9d20ebf9e93/"
                   "src/graph/tuning.cc")
NCCL = Transport(
    "nccl", stage_overhead_s=8.4e-6, message_overhead_s=0.0, message_latency_s=3.4e-6, bandwidth_efficiency=1.0,
    source=f"cited: alpha = NCCL's base latency of a Simple-protocol launch (8.4 us) and l = its NVLink step "
           f"latency (3.4 us), both from NCCL 2.7.5's tuning model ({NCCL_TUNING_URL}, 'Latencies in us'); "
           "o = 0 (a grouped call serves its peers in parallel channels); eta = 1 because the GPU topologies "
           "carry DGCL Table 1's measured link speeds (dgcl.txt §3)")

TRANSPORTS = {t.name: t for t in (GLOO, NCCL)}


def transport(name: str) -> Transport:
    """The transport called ``name``, or a one-line error."""
    if name not in TRANSPORTS:
        raise NetweaveError(f"unknown transport {name!r}; choose one of {', '.join(TRANSPORTS)} "
                            "(or leave it out: GPU topologies get nccl, host topologies gloo)")
    return TRANSPORTS[name]


def transport_for(topology, name: str | None = None) -> Transport:
    """``name``'s transport, or by default the one a topology's workers use: ``nccl`` for GPUs,
    ``gloo`` for hosts (``topology``: a :class:`~netweave.topology.Topology`)."""
    if name is not None:
        return transport(name)
    gpu = any(topology.node(w).kind == "gpu" for w in topology.workers)
    return NCCL if gpu else GLOO
