"""Reports: a :class:`Section` of measured rows as a rich table, a figure, Markdown and a
self-contained HTML file. ``compare``, ``repro`` and ``sim`` hand their results here; nothing here
computes a result."""

from .columns import cell, header, split_unit
from .html import html_report
from .markdown import markdown_report
from .plots import png_bytes, save_png, section_figure
from .series import Panel, bars_figure, series_figure
from .section import Section
from .tables import section_table
from .write import write_report

__all__ = ["Section", "cell", "header", "split_unit", "html_report", "markdown_report", "png_bytes", "save_png",
           "section_figure", "series_figure", "Panel", "bars_figure", "section_table", "write_report"]
