"""The HTML report: every section with its title and note, one inlined PNG per section that ran,
nothing fetched from elsewhere."""

import base64
import re

from netweave.report import html_report, write_report

IMG = re.compile(r'<img src="data:image/png;base64,([A-Za-z0-9+/=]+)"')


def test_every_section_title_note_and_inlined_figure(sections, tmp_path):
    write_report(sections, tmp_path, "netweave compare", "Dataset cora, seed 0.")
    text = (tmp_path / "report.html").read_text()
    for s in sections:
        assert f'<section id="{s.name}">' in text and f"<h2>{s.title}</h2>" in text
    for s in sections[:2]:
        body = text.split(f'<section id="{s.name}">')[1].split("</section>")[0]
        assert s.note in body and "differs from the paper" in body and "</table>" in body
        (png,) = IMG.findall(body)
        assert base64.b64decode(png) == (tmp_path / f"{s.name}.png").read_bytes()
    skipped = text.split('<section id="training">')[1].split("</section>")[0]
    assert sections[2].skipped.replace("'", "&#x27;") in skipped and "<img" not in skipped
    assert len(IMG.findall(text)) == 2 == text.count("<img")


def test_nothing_external(sections):
    text = html_report(sections, {s.name: b"\x89PNG" for s in sections if not s.skipped}, "report")
    assert not re.search(r"""(src|href)\s*=\s*["']?\s*(https?:)?//""", text, re.I)
    assert "<script" not in text and "<link" not in text and "@import" not in text
    assert all(h.startswith("#") for h in re.findall(r'href="([^"]*)"', text))


def test_text_is_escaped(sections):
    sections[0].note = "P2P <b>sends</b> more & waits"
    assert "P2P &lt;b&gt;sends&lt;/b&gt; more &amp; waits" in html_report(sections, {}, "r")


def test_a_sections_paper_figure_is_named_in_html_and_markdown(sections, tmp_path):
    import dataclasses

    from netweave.report.section import PaperFigure

    sections[1] = dataclasses.replace(sections[1], paper=PaperFigure("SwitchGNN Fig. 18", "traffic_MB",
                                                                     {"host": 1.0, "switchgnn": 0.19}, "host"))
    write_report(sections, tmp_path, "netweave compare")
    html, md = (tmp_path / "report.html").read_text(), (tmp_path / "report.md").read_text()
    line = "SwitchGNN Fig. 18: traffic (MB) relative to host: host 1 (netweave 1), switchgnn 0.19 (netweave 0.3)."
    assert f"<b>The paper:</b> {line}" in html and f"**The paper:** {line}" in md
    assert html.count("<b>The paper:</b>") == 1
