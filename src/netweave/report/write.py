"""A report on disk: ``report.md``, the self-contained ``report.html`` and one ``NAME.png`` per
section that ran, in one directory."""

from __future__ import annotations

from pathlib import Path

from .html import html_report
from .markdown import markdown_report
from .plots import save_png, section_figure
from .section import Section


def write_report(sections: list[Section], directory: str | Path, heading: str, intro: str = "",
                 run: dict | None = None) -> Path:
    """Write the figures, ``report.md`` and ``report.html`` into ``directory``; returns ``report.md``'s
    path. Both end with the run's metadata (``run``, default :func:`netweave.run_info.run_metadata`)."""
    from ..run_info import run_line

    d = Path(directory)
    d.mkdir(parents=True, exist_ok=True)
    figures = {s.name: save_png(section_figure(s), d / f"{s.name}.png") for s in sections if not s.skipped}
    made = run_line(run)
    (d / "report.md").write_text(markdown_report(sections, heading, intro, made), encoding="utf-8")
    (d / "report.html").write_text(html_report(sections, figures, heading, intro, made), encoding="utf-8")
    return d / "report.md"
