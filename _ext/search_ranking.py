"""Search: the page whose title names the query comes first, and results cost no downloads.

Sphinx's search scores a page by its best word (in a heading 15, in the text 5), so every page
with "detach" in one of its headings ties with the page about ``detach()``, and ties are ordered
by name: that page came tenth. The scorer below (Sphinx's ``html_search_scorer``, written here at
each build) adds a bonus to every result of a page whose own title names the whole query: first
its heading (the ``<h1>``, in the search index), then the title that search engines and link
previews show (``_ext/pages.yml``). Titles and query are compared as sequences of whole words
(lower case; letters, digits and underscores), so "in-place" names "... in-place error", "hidden
state" names "RNN hidden state ...", and "detach" does not name "... a non-detached fake".

Sphinx also downloads every result's page to show a snippet under it (``html_show_search_summary``,
turned off in ``_config.yml``): "retain_graph" downloaded 35 pages, 7.3 MB.
"""

from __future__ import annotations

import json
from pathlib import Path

from sphinx.application import Sphinx

from page_meta import load_pages

HEADING_BONUS = 200   # more than any score Sphinx gives: these pages come first
TITLE_BONUS = 100

SCORER_JS = """\
var Scorer = {
  // Sphinx's own weights (sphinx/themes/basic/static/searchtools.js), unchanged.
  objNameMatch: 11, objPartialMatch: 6, objPrio: {0: 15, 1: 5, 2: -5}, objPrioDefault: 0,
  title: 15, partialTitle: 7, term: 5, partialTerm: 2,
  // The title each page shows in search engines and link previews (_ext/pages.yml).
  pageTitles: %(titles)s,
  words: (text) => " " + (text || "").toLowerCase().split(/[^a-z0-9_]+/).filter(Boolean).join(" ") + " ",
  score: (result) => {
    const [docname, , , , score] = result;
    const query = Scorer.words(new URLSearchParams(window.location.search).get("q"));
    if (!query.trim() || typeof Search === "undefined" || !Search._index) return score;
    const heading = Search._index.titles[Search._index.docnames.indexOf(docname)];
    if (Scorer.words(heading).includes(query)) return score + %(heading)d;
    if (Scorer.words(Scorer.pageTitles[docname]).includes(query)) return score + %(title)d;
    return score;
  },
};
"""


def scorer_js(pages: dict[str, dict]) -> str:
    titles = {name: entry.get("title", "") for name, entry in sorted(pages.items())}
    return SCORER_JS % {"titles": json.dumps(titles, indent=None), "heading": HEADING_BONUS,
                        "title": TITLE_BONUS}


def _write_scorer(app: Sphinx, config) -> None:
    target = Path(app.doctreedir) / "search_scorer.js"
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(scorer_js(load_pages()))
    config.html_search_scorer = str(target)


def setup(app: Sphinx) -> dict:
    app.connect("config-inited", _write_scorer)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
