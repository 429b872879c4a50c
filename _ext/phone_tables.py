"""Tables a phone can read: every data cell carries its column's heading.

A table of three or more columns does not fit a phone's column (about 360 px) without pushing its
last columns off-screen. Each such table gets the class ``stack-on-phone`` and each of its body
cells a ``data-label`` attribute holding the heading of its column; ``_static/book.css`` then lays
every row out as a block on a narrow screen, each cell under its heading (``td::before``). Two-
column tables are left as tables: they wrap.

Markdown tables of the notebooks pass through the same page body, so they are covered too. Only
the ``<table>`` elements of the body are parsed (with Beautiful Soup, which the theme already
depends on); the rest of the page is left byte for byte as Sphinx wrote it.
"""

from __future__ import annotations

import re

from bs4 import BeautifulSoup
from sphinx.application import Sphinx

TABLE = re.compile(r"<table\b.*?</table>", re.DOTALL)
MIN_COLUMNS = 3


def label_cells(table_html: str) -> str:
    """The table with ``data-label`` on each body cell, when it has a header of MIN_COLUMNS or more."""
    soup = BeautifulSoup(table_html, "html.parser")
    table, head = soup.table, soup.find("thead")
    if table is None or head is None:
        return table_html
    labels = [th.get_text(" ", strip=True) for th in head.find_all("th")]
    if len(labels) < MIN_COLUMNS:
        return table_html
    table["class"] = [*table.get("class", []), "stack-on-phone"]
    for row in table.find_all("tr"):
        if row.find_parent("thead") is not None:
            continue
        for label, cell in zip(labels, row.find_all(["td", "th"], recursive=False)):
            cell["data-label"] = label
    return str(soup)


def _label_tables(app: Sphinx, pagename, templatename, context, doctree) -> None:
    body = context.get("body")
    if body and "<table" in body:
        context["body"] = TABLE.sub(lambda m: label_cells(m.group(0)), body)


def setup(app: Sphinx) -> dict:
    app.connect("html-page-context", _label_tables)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
