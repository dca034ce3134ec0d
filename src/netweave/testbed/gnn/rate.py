"""A worker's sending rate under SwitchGNN's congestion control (switchgnn.txt §3.4: "SwitchGNN
continuously sends vertices according to the scheduling order and adjusts the sending rate
according to the Explicit Congestion Notification (ECN) marking, similar to DCQCN. Upon receiving
an ECN marking, the sending rate is halved. If the network is not congested, the sending rate
increases additively.")

The switch marks a packet that joins a queue longer than its threshold (:mod:`.ecn`); its
receiver answers with a CNP to the packet's sender (DCQCN's notification point), which calls
:meth:`RateControl.on_cnp`. A burst of CNPs caused by one queue halves the rate once: a cut is
followed by ``hold_s`` in which further CNPs change nothing (the queue needs that long to see the
cut; DCQCN gets the same effect by sending at most one CNP per flow per 50 µs). Without a CNP for ``increase_s`` the rate grows by
``step_bps``, up to the line rate. :meth:`RateControl.pace` spaces a sender's packets at the rate.
"""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass
class RateControl:
    """Attributes:
        line_bps: the link's rate (bits of UDP payload per second), the start and the ceiling;
        hold_s: how long after a cut further CNPs are ignored; increase_s: the additive-increase
        period; step_bps: its step (default: a 32nd of the line); floor_bps: the lowest rate
        (default: a 64th of the line); rate_bps: the current rate.
    """

    line_bps: float
    hold_s: float = 0.005
    increase_s: float = 0.005
    step_bps: float = 0.0
    floor_bps: float = 0.0
    rate_bps: float = field(init=False)
    cuts: int = field(default=0, init=False)
    cnps: int = field(default=0, init=False)
    lowest_bps: float = field(init=False)

    def __post_init__(self):
        if self.line_bps <= 0:
            raise ValueError(f"the line rate must be positive, not {self.line_bps!r}")
        self.step_bps = self.step_bps or self.line_bps / 32
        self.floor_bps = self.floor_bps or self.line_bps / 64
        self.rate_bps = self.lowest_bps = self.line_bps
        self._cut = -float("inf")  # when the rate was last halved
        self._changed = None        # when the rate last changed (None: never paced yet)
        self._next = 0.0            # when the next packet may go

    def on_cnp(self, now: float) -> None:
        """A CNP came (a packet this worker sent met a queue above the threshold): halve the rate,
        unless it was halved less than ``hold_s`` ago."""
        self.cnps += 1
        self._grow(now)
        if now - self._cut < self.hold_s:
            return
        self.rate_bps = max(self.floor_bps, self.rate_bps / 2)
        self.lowest_bps = min(self.lowest_bps, self.rate_bps)
        self._cut = self._changed = now
        self.cuts += 1

    def _grow(self, now: float) -> None:
        """The additive increases due since the last change: one ``step_bps`` per ``increase_s``
        without a cut."""
        if self._changed is None:
            self._changed = now
            return
        steps = int((now - self._changed) / self.increase_s)
        if steps > 0:
            self.rate_bps = min(self.line_bps, self.rate_bps + steps * self.step_bps)
            self._changed += steps * self.increase_s

    def pace(self, now: float, bits: int) -> float:
        """Seconds to wait from ``now`` before sending ``bits`` at the current rate; the packets
        after them are spaced behind them (a sender that was idle starts at once)."""
        self._grow(now)
        start = max(now, self._next)
        self._next = start + bits / self.rate_bps
        return start - now
