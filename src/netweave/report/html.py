"""A report as one self-contained HTML file: inline CSS, every figure inlined as a base64
``data:image/png`` URI, no scripts and nothing fetched from elsewhere, so it opens offline and can
be mailed as one file. Per section: title, note, the line on the paper, the table (headers with
units, baseline rows grey), the figure and the time the section took.

Checked by eye in a headless browser (Debian's ``chromium`` package; not a dependency)::

    chromium --headless --no-sandbox --disable-gpu --screenshot=/tmp/rep16.png \\
        --window-size=1200,3000 file:///tmp/rep16/report.html
"""

from __future__ import annotations

import base64
from html import escape

from .columns import cell, header, is_number, paper_line
from .section import Section

CSS = """
body { font: 15px/1.45 system-ui, -apple-system, "Segoe UI", sans-serif; max-width: 1100px; margin: 2em auto;
       padding: 0 1em; color: #222; }
h1 { font-size: 1.6em; } h2 { font-size: 1.2em; margin-top: 2.2em; border-bottom: 1px solid #ddd; }
nav a { margin-right: 1em; }
table { border-collapse: collapse; margin: .8em 0; font-variant-numeric: tabular-nums; }
th, td { border: 1px solid #ccc; padding: .25em .6em; vertical-align: top; }
th { background: #f3f3f3; text-align: left; }
td.num { text-align: right; }
tr.baseline td { color: #666; background: #f7f7f7; }
p.note { font-weight: 500; }
p.differs, p.time, p.skipped, p.run, p.inputs { color: #555; }
p.run { font-size: .85em; }
figure { margin: 1em 0; } img { max-width: 100%; height: auto; }
"""


def html_report(sections: list[Section], figures: dict[str, bytes], heading: str, intro: str = "",
                run: str = "") -> str:
    """The whole report; ``figures`` maps a section's name to its PNG bytes (inlined); ``run`` (the
    run's metadata as a sentence) under the heading."""
    nav = " ".join(f'<a href="#{escape(s.name)}">{escape(s.name)}</a>' for s in sections)
    body = "\n".join(section_html(s, figures.get(s.name)) for s in sections)
    return (f'<!DOCTYPE html>\n<html lang="en">\n<head>\n<meta charset="utf-8">\n<title>{escape(heading)}</title>\n'
            f"<style>{CSS}</style>\n</head>\n<body>\n<h1>{escape(heading)}</h1>\n"
            + (f"<p>{escape(intro)}</p>\n" if intro else "")
            + (f'<p class="run"><b>Run:</b> {escape(run)}</p>\n' if run else "")
            + f"<nav>{nav}</nav>\n{body}\n</body>\n</html>\n")


def section_html(s: Section, png: bytes | None) -> str:
    """One ``<section>``: title, then its reason if skipped, else note, paper line, table, figure, time."""
    parts = [f'<section id="{escape(s.name)}">', f"<h2>{escape(s.title)}</h2>"]
    if s.skipped:
        return "\n".join(parts + [f'<p class="skipped">{escape(s.skipped)}</p>', "</section>"])
    if s.inputs:
        parts.append(f'<p class="inputs"><b>Inputs:</b> {escape(s.inputs)}.</p>')
    if s.note:
        parts.append(f'<p class="note">{escape(s.note)}</p>')
    if s.differs:
        parts.append(f'<p class="differs"><b>Where netweave differs from the paper:</b> {escape(s.differs)}</p>')
    if paper := paper_line(s):
        parts.append(f'<p class="differs"><b>The paper:</b> {escape(paper)}</p>')
    parts.append(html_table(s))
    if png is not None:
        src = "data:image/png;base64," + base64.b64encode(png).decode("ascii")
        parts.append(f'<figure><img src="{src}" alt="{escape(s.name)}: {escape(s.title)}"></figure>')
    baseline = f"; grey rows: the baseline, {escape(s.baseline)}" if s.baseline else ""
    parts += [f'<p class="time">Measured in this run in {s.seconds:.1f} s{baseline}.</p>', "</section>"]
    return "\n".join(parts)


def html_table(s: Section) -> str:
    """The rows of ``s`` as an HTML table; numeric cells right-aligned."""
    head = "".join(f"<th>{escape(header(c))}</th>" for c in s.columns)
    rows = []
    for r in s.rows:
        cells = "".join(f'<td class="num">{escape(cell(r[c]))}</td>' if is_number(r[c]) else f"<td>{escape(cell(r[c]))}</td>"
                        for c in s.columns)
        rows.append(f'<tr class="baseline">{cells}</tr>' if s.is_baseline(r) else f"<tr>{cells}</tr>")
    return f"<table>\n<thead><tr>{head}</tr></thead>\n<tbody>\n" + "\n".join(rows) + "\n</tbody>\n</table>"
