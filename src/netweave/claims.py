"""A paper's claims next to netweave's numbers: :class:`Check`, one metric each, and the sentences and
tables that say where they agree and where they do not.

A reproduction (:mod:`netweave.repro`) checks every metric its paper quotes (and the direction of
every comparison it claims), so that its summary names each disagreement instead of leaving the
reader to find it in the CSV. A verdict is one of :data:`VERDICTS`: ``agrees`` (within the stated
tolerance), ``differs``, or ``not comparable`` (netweave ran another setting, e.g. a reduced scale,
so the number cannot be held against the paper's; it is still shown).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

VERDICTS = ("agrees", "differs", "not comparable")


@dataclass(frozen=True)
class Check:
    """One metric: what the paper says, what netweave measured, the verdict and the rule behind it.

    >>> Check("traffic reduction at 10 MB", "23 %", "47 %", "differs", "within 15 points").sentence()
    'traffic reduction at 10 MB (paper 23 %, netweave 47 %)'
    """

    metric: str
    paper: str
    netweave: str
    verdict: str
    rule: str = ""

    def __post_init__(self) -> None:
        if self.verdict not in VERDICTS:
            raise ValueError(f"verdict {self.verdict!r} is not one of {VERDICTS}")

    def sentence(self) -> str:
        return f"{self.metric} (paper {self.paper}, netweave {self.netweave})"

    def summary(self) -> dict:
        return asdict(self)


def within(ours: float, theirs: float, tolerance: float) -> str:
    """``agrees`` when ``|ours − theirs| <= tolerance``, else ``differs``."""
    return "agrees" if abs(ours - theirs) <= tolerance else "differs"


def verdict_line(checks: list[Check]) -> str:
    """One sentence: every metric that differs, then those not comparable, then how many agree."""
    parts = []
    differs = [c for c in checks if c.verdict == "differs"]
    unsure = [c for c in checks if c.verdict == "not comparable"]
    agrees = [c for c in checks if c.verdict == "agrees"]
    if differs:
        parts.append("differs from the paper on " + "; ".join(c.sentence() for c in differs))
    if unsure:
        parts.append("not comparable at this scale: " + "; ".join(c.sentence() for c in unsure))
    if agrees:
        parts.append(f"agrees on {', '.join(c.metric for c in agrees)}")
    return ". ".join(p[0].upper() + p[1:] for p in parts) + ("." if parts else "")


def checks_markdown(checks: list[Check]) -> list[str]:
    """The checks as Markdown table lines: metric, paper, netweave, verdict, rule."""
    lines = ["| metric | paper | netweave | verdict | rule |", "|---|---|---|---|---|"]
    return lines + [f"| {c.metric} | {c.paper} | {c.netweave} | **{c.verdict}** | {c.rule} |".replace("\n", " ")
                    for c in checks]
