"""Rich tables at 80 columns keep every unit in view and wrap rather than cut; the caption carries
the note."""

import pytest
from rich.console import Console

from netweave.report import Section, header, section_table, split_unit


def render(section, width=80) -> str:
    console = Console(width=width, record=True, color_system=None)
    console.print(section_table(section, width))
    return console.export_text()


def words_by_column(text: str) -> str:
    """The header rows of a rendered table, each column's lines joined, so a header that wraps over
    two lines reads as one string again."""
    rows = [line.strip("┃") for line in text.splitlines() if line.startswith("┃")]
    cols = zip(*(r.split("┃") for r in rows))
    return " | ".join(" ".join(part.strip() for part in col if part.strip()) for col in cols)


@pytest.mark.parametrize("index", [0, 1])
def test_units_stay_in_headers_at_80_columns(sections, index):
    s = sections[index]
    text = render(s)
    assert max(len(line) for line in text.splitlines()) <= 80
    assert "…" not in text and "_" not in words_by_column(text)
    assert words_by_column(text) == " | ".join(header(c) for c in s.columns)
    for r in s.rows:  # whole values, none folded
        assert any(str(r[s.columns[0]]) in line for line in text.splitlines())


def test_a_wide_header_wraps_onto_two_lines():
    s = Section("ina", "t", ("strategy", "memory", "traffic_MB", "traffic_reduction", "completion_us", "max_queue_KB",
                             "blocks"), rows=[{"strategy": "switchgnn", "memory": "200 KB", "traffic_MB": 12.25,
                                               "traffic_reduction": 0.6938, "completion_us": 451.2, "max_queue_KB": 3.125,
                                               "blocks": 4}], baseline="host")
    text = render(s)
    header_lines = [line for line in text.splitlines() if line.startswith("┃")]
    assert len(header_lines) >= 2 and "(fraction)" in text and "(µs)" in text and "(KB)" in text


def test_caption_says_what_to_see_and_baseline(sections):
    text = render(sections[0])
    assert sections[0].note in text and "differs from the paper" in text and "Baseline (dimmed rows): p2p." in text


def test_skipped_section_prints_its_reason_verbatim(sections):
    assert "pip install -e '.[train]'" in render(sections[2], 120)


@pytest.mark.parametrize("column, expected", [
    ("predicted_time_ms", ("predicted time", "ms")), ("traffic_MB", ("traffic", "MB")),
    ("completion_us", ("completion", "µs")), ("rate_gbps", ("rate", "Gb/s")), ("rate_x_ps", ("rate", "× PS")),
    ("exchange_MB_per_epoch", ("exchange", "MB/epoch")), ("paper_memory_mb", ("paper memory", "MB")),
    ("speedup", ("speedup", "×")),
    ("traffic_reduction", ("traffic reduction", "fraction")), ("stages", ("stages", "")), ("cost_model", ("cost model", "")),
])
def test_split_unit(column, expected):
    assert split_unit(column) == expected
