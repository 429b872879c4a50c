"""What axe-core found on the stock pages that the theme's templates and CSS cannot reach: three
pieces of markup written by extensions, mended in each page's body.

- myst-nb's toggles of hidden cells (``<summary aria-label="Toggle hidden content">``): the label
  hid the words the reader sees ("Show code cell source"); without it, those words name the toggle.
- MyST's task lists (the workshop's checklists): the checkboxes had no label; each is now labelled
  by its item's text.
- The decision guide's drawing (``<object>`` from sphinx.ext.graphviz): its alternative text was
  only the fallback paragraph inside the object, which a screen reader does not reach while the
  SVG shows; it is now the object's ``aria-label`` too.
"""

from __future__ import annotations

import re
from html import escape, unescape

from sphinx.application import Sphinx

SUMMARY = '<summary aria-label="Toggle hidden content">'
CHECKBOX_ITEM = re.compile(r'(<li class="task-list-item">\s*(?:<p>)?\s*<input class="task-list-item-checkbox")'
                           r'([^>]*>)(.*?)(?=</li>|<ul)', re.DOTALL)
GRAPH = re.compile(r'(<object data="[^"]*" type="image/svg\+xml" class="graphviz")>\s*'
                   r'(<p class="warning">(.*?)</p>)', re.DOTALL)
TAG = re.compile(r"<[^>]+>")


def _text(html: str, limit: int = 120) -> str:
    return " ".join(unescape(TAG.sub("", html)).split())[:limit]


def mend(body: str) -> str:
    body = body.replace(SUMMARY, "<summary>")
    body = CHECKBOX_ITEM.sub(
        lambda m: f'{m.group(1)} aria-label="{escape(_text(m.group(3)))}"{m.group(2)}{m.group(3)}', body)
    return GRAPH.sub(lambda m: f'{m.group(1)} aria-label="{escape(_text(m.group(3), 400))}">{m.group(2)}', body)


def _mend_page(app: Sphinx, pagename, templatename, context, doctree) -> None:
    if context.get("body"):
        context["body"] = mend(context["body"])


def setup(app: Sphinx) -> dict:
    app.connect("html-page-context", _mend_page)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
