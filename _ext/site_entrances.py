"""The two pages a reader may arrive at outside the book's own: the site root and the 404 page.

- ``index.html``: Jupyter Book's table of contents extension writes a bare redirect there (one
  ``<meta>`` line, no title, no description), which is what a link to the site's root shows in a
  search result or a link preview. It is written here first, as a page with a title and a
  description of its own (the entry ``index`` of ``_ext/pages.yml``), the same link-preview card
  as every page (Open Graph and Twitter tags, the book's picture), the site's address as its
  canonical address, and the same redirect; the extension leaves an existing index.html alone.
  The site's address is added to the sitemap too (sphinx-sitemap lists only Sphinx's pages).
- ``404.html``: sphinx-notfound-page makes every address in it absolute under the published path
  (``/<path>/_static/...``), so that it works at any depth there; served from the site's root, as
  the README shows, it found none of its styles and scripts. A first inline script picks the root: the
  published path when the address starts with it, the site's root otherwise; it writes a
  ``<base>`` for the links and the search form, and each style, script and icon tag is written in
  its place by a small script under that root. (A
  ``<base>`` alone would not do: the browser fetches the tags it sees ahead of the parser before
  any script has run, and would ask for every file at a wrong address first.)
"""

from __future__ import annotations

import json
import re
from html import escape
from pathlib import Path
from urllib.parse import urlsplit

from sphinx.application import Sphinx

from page_meta import CARD, CARD_SIZE, SITE_ROOT, load_pages, published_url

INDEX = """<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8" />
<title>{title}</title>
<meta name="description" content="{description}" />
<link rel="canonical" href="{canonical}" />
<meta property="og:title" content="{title}" />
<meta property="og:type" content="website" />
<meta property="og:url" content="{canonical}" />
<meta property="og:site_name" content="{site}" />
<meta property="og:description" content="{description}" />
<meta property="og:image" content="{image}" />
<meta property="og:image:alt" content="{image_alt}" />
<meta property="og:image:width" content="{width}" />
<meta property="og:image:height" content="{height}" />
<meta name="twitter:card" content="summary_large_image" />
<meta http-equiv="Refresh" content="0; url={target}" />
</head>
<body>
<p><a href="{target}">{title}</a></p>
</body>
</html>
"""

# A tag of the 404 page that fetches a file (a stylesheet, a script, the icon).
FETCHING_TAG = re.compile(r'<link\b[^>]*\bhref="{prefix}[^"]*"[^>]*>|<script\b[^>]*\bsrc="{prefix}[^"]*"[^>]*></script>')
ROOT_SCRIPT = """<script>
  const notFoundRoot = window.location.pathname.startsWith({prefix}) ? {prefix} : "/";
  document.write('<base href="' + notFoundRoot + '">');
</script>"""
# Each such tag, in its place (the order of scripts matters), written under that root.
TAG_SCRIPT = '<script>document.write({tag}.split("{marker}").join(notFoundRoot));</script>'
MARKER = "@ROOT@/"


def index_page(root: Path, root_doc: str, site: str, image_alt: str) -> str:
    """The site root: its own title and description, its card, the redirect to ``root_doc``."""
    entry, url = load_pages()[SITE_ROOT], published_url(root)
    return INDEX.format(title=escape(entry["title"]), description=escape(entry["description"]),
                        canonical=escape(url), target=escape(root_doc + ".html"),
                        site=escape(site), image=escape(url + CARD), image_alt=escape(image_alt),
                        width=CARD_SIZE[0], height=CARD_SIZE[1])


def not_found_page(html: str, prefix: str) -> str:
    """The 404 page with its files fetched from the root it is served under."""
    fetching = re.compile(FETCHING_TAG.pattern.format(prefix=re.escape(prefix)))

    def written(match: re.Match) -> str:
        tag = match.group(0).replace(f'="{prefix}', f'="{MARKER}')
        return TAG_SCRIPT.format(tag=json.dumps(tag).replace("</", "<\\/"), marker=MARKER)

    html = fetching.sub(written, html)
    html = re.sub(r'\b(href|action)="' + re.escape(prefix), r'\1="', html)  # links: under the <base>
    return html.replace("<head>", "<head>\n" + ROOT_SCRIPT.format(prefix=json.dumps(prefix)), 1)


def _write(app: Sphinx, exception) -> None:
    if exception is not None or app.builder.name != "html":
        return
    out = Path(app.outdir)
    (out / "index.html").write_text(index_page(Path(app.srcdir), app.config.root_doc,
                                               app.config.ogp_site_name, app.config.ogp_image_alt))
    links = getattr(app.env.app, "sitemap_links", None)   # sphinx-sitemap's queue, read at 500
    if links is not None:
        links.put(("", None))   # the site's address itself: sitemap_url_scheme "{link}"
    not_found = out / "404.html"
    if not_found.is_file():
        prefix = urlsplit(published_url(Path(app.srcdir))).path
        not_found.write_text(not_found_page(not_found.read_text(), prefix))


def setup(app: Sphinx) -> dict:
    # Before sphinx-external-toc's build-finished handler (500), which writes a bare index.html
    # where there is none.
    app.connect("build-finished", _write, priority=400)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
