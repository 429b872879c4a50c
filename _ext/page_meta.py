"""Each page's HTML title and description from one data file, and the site's published address
from the one place it is written.

``pages.yml`` beside this module holds, per page, the ``<title>`` a search result or link preview
shows, a description of at most 160 characters, and the labels of the sections that prove it (see
the file's header). One data file rather than front matter: the notebooks' cells and metadata are
edited by others all the time, and a page's search wording is easier to keep consistent when all
of them sit side by side. A page of the book without an entry, a description over the limit or
used twice, and a ``proof`` label that does not exist are build warnings (errors under ``-W``).

The published address is ``Documentation`` in ``pyproject.toml``'s ``[project.urls]``. From it come
``html_baseurl`` (Sphinx's canonical links; sphinx-sitemap's addresses), ``ogp_site_url``
(sphinxext-opengraph's absolute URLs) and ``notfound_urls_prefix`` (sphinx-notfound-page's links,
which must work from any missing address), plus the 404 page's text with its three ways back.

The descriptions reach the page the way sphinxext-opengraph documents for per-page overrides (the
page's metadata, ``og:description``), plus a ``<meta name="description">``. The card's picture is
the book's card on every page, drawn here once per build: the graph drawings in the notebooks are
SVG, which link previews (GitHub, Slack, Discord, X) do not show, and which sphinxext-opengraph's
own first-image option skips (its list of image types has no SVG); its generated per-page cards
would cost a Matplotlib figure per page on every build.
"""

from __future__ import annotations

import tomllib
from html import escape
from pathlib import Path
from urllib.parse import urlsplit

import yaml
from sphinx.application import Sphinx
from sphinx.util import logging

logger = logging.getLogger(__name__)

HERE = Path(__file__).resolve().parent
DATA = HERE / "pages.yml"
LIMIT = 160
GENERATED = {"search", "genindex", "py-modindex"}  # Sphinx's pages with no source of their own
SITE_ROOT = "index"   # the site root's index.html, written by site_entrances.py: an entry, no source
CARD = "_static/card.png"
CARD_SIZE = (1200, 630)  # pixels: the size link previews show large


def published_url(root: Path) -> str:
    """The site's address, ending in a slash, from pyproject.toml's [project.urls]."""
    with open(root / "pyproject.toml", "rb") as f:
        url = tomllib.load(f)["project"]["urls"]["Documentation"]
    return url if url.endswith("/") else url + "/"


def load_pages(path: Path = DATA) -> dict[str, dict]:
    """The entries of pages.yml, each with ``proof`` as a list."""
    pages = yaml.safe_load(path.read_text()) or {}
    for entry in pages.values():
        proof = entry.get("proof", [])
        entry["proof"] = [proof] if isinstance(proof, str) else list(proof)
    return pages


def not_found_body(prefix: str) -> str:
    """The 404 page: three ways back into the book, by absolute path (it is served at any depth)."""
    return f"""<h1>Page not found</h1>
<p>There is no page at this address. The book may have moved the page, or the link may be mistyped.</p>
<ul>
  <li><a href="{prefix}intro.html">The landing page</a>: the error, the one-minute answer, and a table
      from your code to the scenario that explains it.</li>
  <li><a href="{prefix}chapters/which_fix.html">The decision guide</a>: one question at a time, to the fix.</li>
  <li><a href="{prefix}search.html">Search the book</a>:</li>
</ul>
<form class="notfound-search" action="{prefix}search.html" method="get">
  <input type="search" name="q" aria-label="Search the book" placeholder="Search the book">
  <button type="submit">Search</button>
</form>"""


def _configure(app: Sphinx, config) -> None:
    """Everything that follows from the published address, set before the extensions read it."""
    url = published_url(Path(app.srcdir))
    prefix = urlsplit(url).path
    config.html_baseurl = url
    config.ogp_site_url = url
    config.notfound_urls_prefix = prefix
    config.notfound_context = {"title": "Page not found", "body": not_found_body(prefix)}
    config.ogp_image = CARD  # relative to the site's root: sphinxext-opengraph makes it absolute
    config.ogp_custom_meta_tags = [
        '<meta property="og:image:width" content="%d" />' % CARD_SIZE[0],
        '<meta property="og:image:height" content="%d" />' % CARD_SIZE[1],
        '<meta name="twitter:card" content="summary_large_image" />',
    ]
    config.page_meta_pages = load_pages()  # a config value: a changed entry rewrites every page
    site = config.html_title or config.project
    config.ogp_site_name = site
    config.ogp_image_alt = f"{site}: RuntimeError: Trying to backward through the graph a second time"


def _check(app: Sphinx, env) -> None:
    """Every page has an entry (the site root too); each description fits and is unique; each
    proof label exists."""
    pages: dict[str, dict] = app.config.page_meta_pages
    labels = env.domaindata["std"]["labels"]
    missing = sorted(set(env.found_docs) - set(pages) - {app.config.notfound_pagename})
    for docname in missing:
        logger.warning("page %s has no entry (title, description) in %s", docname, DATA.name)
    seen: dict[str, str] = {}
    for docname, entry in sorted(pages.items()):  # pages to come too: their entries are ready
        for key in ("title", "description"):
            if not str(entry.get(key, "")).strip():
                logger.warning("%s: the entry of %s has no %s", DATA.name, docname, key)
        description = str(entry.get("description", ""))
        if len(description) > LIMIT:
            logger.warning("%s: the description of %s has %d characters (at most %d)",
                           DATA.name, docname, len(description), LIMIT)
        if description in seen:
            logger.warning("%s: %s has the same description as %s", DATA.name, docname, seen[description])
        seen[description] = docname
        for label in entry["proof"] if docname in env.found_docs or docname == SITE_ROOT else []:
            if label not in labels:
                logger.warning("%s: the proof of %s names %r, which no section defines",
                               DATA.name, docname, label)
    waiting = sorted(set(pages) - set(env.found_docs) - {SITE_ROOT})
    if waiting:
        logger.info("%s: entries for pages not in the book (yet): %s", DATA.name, ", ".join(waiting))


def _page_context(app: Sphinx, pagename: str, templatename: str, context: dict, doctree) -> None:
    """The page's title and description, before sphinxext-opengraph writes its tags."""
    if pagename in GENERATED or pagename == app.config.notfound_pagename:
        # Not pages to list in search results (nor in the sitemap: see _config.yml). The 404 page's
        # context, from sphinx-notfound-page, has no metatags yet.
        context["metatags"] = context.get("metatags", "") + '\n<meta name="robots" content="noindex" />\n'
    entry = app.config.page_meta_pages.get(pagename)
    if entry is None or doctree is None:
        return
    context["title"] = escape(entry["title"], quote=False)
    description = entry["description"]
    context["meta"] = {**(context.get("meta") or {}), "og:description": description}
    context["metatags"] += f'\n<meta name="description" content="{escape(description)}" />\n'


def _draw_card(app: Sphinx, exception) -> None:
    """The book's card (the picture of every page's link preview): the landing page's title."""
    if exception is not None or app.builder.format != "html":
        return
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    title = app.config.page_meta_pages["intro"]["title"]
    width, height = CARD_SIZE
    fig = plt.figure(figsize=(width / 100, height / 100), dpi=100)
    fig.patch.set_facecolor("#1f2a44")
    fig.text(0.06, 0.80, app.config.ogp_site_name, color="#9fb3d9", fontsize=26, ha="left", va="top")
    fig.text(0.06, 0.62, "RuntimeError: Trying to backward\nthrough the graph a second time",
             color="white", fontsize=36, fontweight="bold", ha="left", va="top", family="monospace",
             linespacing=1.3)
    fig.text(0.06, 0.17, title.split(": ", 1)[-1][0].upper() + title.split(": ", 1)[-1][1:],
             color="#ffd479", fontsize=26, ha="left", va="bottom")
    target = Path(app.outdir) / CARD
    target.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(target, dpi=100, facecolor=fig.get_facecolor(), metadata={"Software": None})
    plt.close(fig)


def setup(app: Sphinx) -> dict:
    app.add_config_value("page_meta_pages", {}, "html", types=frozenset({dict}))
    app.connect("config-inited", _configure, priority=100)  # before the extensions validate them
    app.connect("env-updated", _check)  # every build, whether or not a page was read again
    app.connect("html-page-context", _page_context, priority=450)  # before sphinxext-opengraph (500)
    app.connect("build-finished", _draw_card)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
