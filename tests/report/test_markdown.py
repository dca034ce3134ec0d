"""The Markdown report links each section's PNG, keeps units in its headers and says what a row means."""

from netweave.report import markdown_report, write_report


def test_links_each_png_and_shows_skips(sections, tmp_path):
    path = write_report(sections, tmp_path, "netweave compare")
    text = path.read_text()
    assert path.name == "report.md"
    for s in sections[:2]:
        assert f"![{s.name}]({s.name}.png)" in text and (tmp_path / f"{s.name}.png").read_bytes()[:4] == b"\x89PNG"
        assert s.note in text and s.differs in text
    assert "![training]" not in text and not (tmp_path / "training.png").exists()
    assert sections[2].skipped in text


def test_headers_carry_units(sections):
    text = markdown_report(sections, "r")
    assert "| planner | cost model | predicted time (ms) | stages | total (MB) | speedup (×) |" in text
    assert "| traffic (MB) |" in text and "| completion (µs) |" in text
