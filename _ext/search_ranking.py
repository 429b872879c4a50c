"""Search: the page that names the query in its title or headings comes first, each result with a
snippet, and results cost no downloads.

Sphinx's search scores a page by its best word (in a heading 15, in the text 5), so every page
with "detach" in one of its headings ties with the page about ``detach()``, and ties are ordered
by name: that page came tenth. The scorer below (Sphinx's ``html_search_scorer``, written here at
each build) adds a bonus to every result of a page that names the whole query: in its heading
(the ``<h1>``, in the search index), in the title that search engines and link previews show
(``_ext/pages.yml``), and in its section headings, in that order of weight. The three bonuses add
up, and each is far above any score Sphinx gives, so a page that names the query in its title
comes before one that names it only in a section.

"Names" compares whole words, in lower case, letters and digits: a run of consecutive words of the
title, joined, against the query's words, joined. So "in-place", "inplace" and "in place" name each
other (the error message says "inplace", the book "in-place"), as "retain_graph" names
"retain_graph=True" and "hidden state" names "RNN hidden state ...". A run whose Porter stem (the
stemmer Sphinx's search uses) equals the query's counts half: "accumulate" names "The accumulating
loss" at half weight, which still puts that page before one whose section says "accumulate"; and
"detach" names "What detach() does" in full but "a non-detached fake" at half.

Snippets. Sphinx shows a snippet by downloading every result's page (``html_show_search_summary``,
turned off in ``_config.yml``): "retain_graph" downloaded 35 pages, 7.3 MB. Each result here gets
its page's description (``_ext/pages.yml``, the text a search engine shows) under its link, from
this same script: nothing more is fetched.
"""

from __future__ import annotations

import json
from pathlib import Path

from sphinx.application import Sphinx

from page_meta import load_pages

HEADING_BONUS = 300   # the page's own heading (<h1>) names the query
TITLE_BONUS = 200     # the title of pages.yml names it
SECTION_BONUS = 100   # one of the page's section headings names it
# (a stemmed match counts half; Sphinx's own scores stay under 100)

SCORER_JS = """\
var Scorer = {
  // Sphinx's own weights (sphinx/themes/basic/static/searchtools.js), unchanged.
  objNameMatch: 11, objPartialMatch: 6, objPrio: {0: 15, 1: 5, 2: -5}, objPrioDefault: 0,
  title: 15, partialTitle: 7, term: 5, partialTerm: 2,
  // Each page's title (search engines, link previews) and description (the snippet): pages.yml.
  pages: %(pages)s,
  words: (text) => (text || "").replace(/<[^>]*>/g, " ").toLowerCase().split(/[^a-z0-9]+/).filter(Boolean),
  stem: (word) => (Scorer._stemmer = Scorer._stemmer || new Stemmer()).stemWord(word),
  // 1 when a run of consecutive words of `text` spells the query, 0.5 when only their stems
  // agree, 0 otherwise.
  names: (text, query) => {
    const words = Scorer.words(text), wanted = query.join(""), stem = Scorer.stem(wanted);
    let best = 0;
    for (let i = 0; i < words.length; i++) {
      let run = "";
      for (let j = i; j < words.length && run.length < wanted.length + 6; j++) {
        run += words[j];
        if (run === wanted) return 1;
        if (Scorer.stem(run) === stem) best = 0.5;
      }
    }
    return best;
  },
  query: () => Scorer.words(new URLSearchParams(window.location.search).get("q")),
  // The section headings of each page (the search index's titles, without the page's own).
  sections: (file) => {
    if (!Scorer._sections) {
      Scorer._sections = {};
      for (const [title, places] of Object.entries(Search._index.alltitles || {}))
        for (const [f] of places) (Scorer._sections[f] = Scorer._sections[f] || []).push(title);
    }
    const own = Search._index.titles[file];
    return (Scorer._sections[file] || []).filter(title => title !== own);
  },
  bonus: (docname) => {
    const query = Scorer.query();
    if (!query.length || typeof Search === "undefined" || !Search._index) return 0;
    Scorer._bonus = Scorer._bonus || {};
    const key = docname + "|" + query.join(" ");
    if (!(key in Scorer._bonus)) {
      const file = Search._index.docnames.indexOf(docname);
      const page = Scorer.pages[docname] || {};
      Scorer._bonus[key] = %(heading)d * Scorer.names(Search._index.titles[file], query)
        + %(title)d * Scorer.names(page.title, query)
        + %(section)d * Math.max(0, ...Scorer.sections(file).map(title => Scorer.names(title, query)));
    }
    return Scorer._bonus[key];
  },
  score: (result) => result[4] + Scorer.bonus(result[0]),
};

// The snippet under each result: its page's description, added as the result is shown.
(function () {
  "use strict";
  function docname(link) {
    const root = new URL(document.documentElement.dataset.content_root || "./", window.location.href);
    const path = new URL(link.getAttribute("href"), window.location.href).pathname;
    return decodeURIComponent(path.slice(root.pathname.length)).replace(/\\.html$/, "");
  }
  function snippet(item) {
    const link = item.querySelector(":scope > a");
    const page = link && Scorer.pages[docname(link)];
    if (!page || item.querySelector(":scope > p.context")) return;
    const text = document.createElement("p");
    text.className = "context";
    text.textContent = page.description;
    item.append(text);
  }
  function watch() {
    const results = document.getElementById("search-results");
    if (!results) return;
    new MutationObserver(() => results.querySelectorAll("ul.search > li").forEach(snippet))
      .observe(results, {childList: true, subtree: true});
  }
  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", watch);
  else watch();
})();
"""


def scorer_js(pages: dict[str, dict]) -> str:
    shown = {name: {"title": entry.get("title", ""), "description": entry.get("description", "")}
             for name, entry in sorted(pages.items())}
    return SCORER_JS % {"pages": json.dumps(shown, indent=None), "heading": HEADING_BONUS,
                        "title": TITLE_BONUS, "section": SECTION_BONUS}


def _write_scorer(app: Sphinx, config) -> None:
    target = Path(app.doctreedir) / "search_scorer.js"
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(scorer_js(load_pages()))
    config.html_search_scorer = str(target)


def setup(app: Sphinx) -> dict:
    app.connect("config-inited", _write_scorer)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
