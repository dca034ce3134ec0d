"""A report as Markdown: the run that made it, then per section its title, note, the line on the
paper, the table under headers with units, a link to its figure (``NAME.png`` beside the file) and
its time."""

from __future__ import annotations

from .columns import cell, header, is_number, paper_line
from .section import Section


def markdown_report(sections: list[Section], heading: str, intro: str = "", run: str = "") -> str:
    """The whole report; a skipped section shows its reason in place of table and figure; ``run``
    (the run's metadata as a sentence) under the heading."""
    lines = [f"# {heading}", ""] + ([intro, ""] if intro else []) + ([f"_Run: {run}_", ""] if run else [])
    for s in sections:
        lines += [f"## {s.title}", ""]
        if s.skipped:
            lines += [s.skipped, ""]
            continue
        lines += [f"**Inputs:** {s.inputs}.", ""] if s.inputs else []
        lines += [s.note, ""] if s.note else []
        lines += [f"**Where netweave differs from the paper:** {s.differs}", ""] if s.differs else []
        lines += [f"**The paper:** {paper}", ""] if (paper := paper_line(s)) else []
        lines += markdown_table(s) + ["", f"![{s.name}]({s.name}.png)", "",
                                      f"_{s.seconds:.1f} s; baseline: {s.baseline or 'none'}_", ""]
    return "\n".join(lines)


def markdown_table(s: Section) -> list[str]:
    """The rows of ``s`` as Markdown table lines; numeric columns right-aligned."""
    align = ["---:" if any(is_number(r[c]) for r in s.rows) else "---" for c in s.columns]
    lines = ["| " + " | ".join(header(c) for c in s.columns) + " |", "| " + " | ".join(align) + " |"]
    return lines + ["| " + " | ".join(cell(r[c]).replace("|", "\\|") for c in s.columns) + " |" for r in s.rows]
