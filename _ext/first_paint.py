"""The first paint: a page shows its first screen without waiting for every stylesheet and script.

A stock page of this theme holds thirteen stylesheets and ten scripts in its ``<head>``, each of
which the browser must fetch (and each script run) before it paints anything: the landing page
painted nearly five times later than a bare page served by the same server. After the build, the
head of every page is rewritten here:

- The stylesheets are attached by a small inline script, in their order, once the first paint
  that shows text has been presented (Paint Timing's ``first-contentful-paint``; after the first
  frame where a browser has none), or when the page has been parsed, if that comes first (so that
  the ``load`` event always waits for them); a ``<noscript>`` copy of each keeps them as they were
  where no script runs. (Merely non-blocking stylesheets, ``media="print"`` switched to ``all``,
  arrive from a near server before the first frame, and the browser styles the whole page with
  them before painting it. Attached at the first frame, as they were at first, their requests and
  the theme's 400 kB of rules were fetched and parsed while that frame was still being drawn, and
  the first paint could be the header's line alone, the text coming a frame later. Waiting for the
  text's paint, the first paint comes no later, the full styles arrive as early, and the scripts
  run sooner: the landing page's DOMContentLoaded at about 60 % of its time before, side by side
  in one run.)
- Until they have all loaded, a small inline stylesheet (``CRITICAL_CSS``) lays out what the first
  screen shows: the page's colours in either scheme, the header's title, the article in its column
  in the theme's own fonts (so the text does not change face when the theme arrives), its code
  blocks; the navigation that the full styles place in the sidebars, the print-only copy of the
  title and contents, and the copy buttons wait for them. Its rules apply only while
  ``<html data-css-loading>`` is set, which an inline script sets first and removes when the last
  stylesheet has loaded (or failed): then the page is the theme's, unchanged.
- External scripts get ``defer``: fetched at once, run in their order after the page is parsed,
  before ``DOMContentLoaded`` (the theme's own two scripts at the end of the page were deferred
  already). ``documentation_options.js`` (a few hundred bytes), which the inline lines after it
  extend (``DOCUMENTATION_OPTIONS.pagename = ...``), is written into the page in its place; on a
  page with a quiz, ``quiz.js`` stays as it is, since it must run before the quiz's own inline
  script in the page's body.

The 404 page (its files are written by scripts, see ``site_entrances.py``) and the site root's
redirect are left alone.

What the first paint still waits for is the page itself: in Chromium's Resource Timing every
stylesheet and script of the landing page is "non-blocking", and the landing page with every
external file taken out paints as late as with them. Its own head (the theme's inline scripts,
whose first starts the page's JavaScript engine), the theme's header, sidebars and dialogs that
come before the article in the HTML, and the first screen's text are parsed, laid out and
rasterised before anything shows; on a busy 2-core machine that alone takes two to two and a
half times a bare page's time.
"""

from __future__ import annotations

import json
import re
from html import unescape
from pathlib import Path

from sphinx.application import Sphinx

SKIP_DIRS = ("_static/", "_sources/", "_images/", "student/")
SKIP_PAGES = {"404.html", "index.html"}
INLINED = "documentation_options.js"
QUIZ_SCRIPT = "quiz.js"
HAS_QUIZ = "jupyterquiz.js"   # the quizzes' library, loaded in the body of a page with a quiz
MARK = "data-css-loading"

STYLESHEET = re.compile(r'<link\b(?=[^>]*\brel="stylesheet")(?![^>]*\bmedia=)[^>]*>')
SCRIPT = re.compile(r'<script\b(?![^>]*\b(?:async|defer)\b)([^>]*\bsrc="([^"]*)"[^>]*)>')

# The first screen while the stylesheets load: colours (light, dark, and the reader's system's
# for "auto"), the header's title, the article in a column, code blocks, in the theme's font
# families (pydata-sphinx-theme's --pst-font-family-base-system and -monospace-system). Nothing
# here outlives the loading: every rule sits under html[data-css-loading].
CRITICAL_CSS = """\
html[data-css-loading] body{margin:0;font-family:system-ui,sans-serif;font-size:1rem;line-height:1.65;color:#222832;background:#fff}
html[data-css-loading][data-theme=dark] body{color:#ced6dd;background:#14181e}
@media (prefers-color-scheme:dark){html[data-css-loading][data-theme=auto] body{color:#ced6dd;background:#14181e}}
html[data-css-loading] :is(.skip-link,.bd-sidebar-primary,.bd-sidebar-secondary,.bd-header-article,.bd-header .navbar-header-items,.bd-header button,.pst-js-only,.search-button__wrapper,.bd-footer,.bd-footer-article,.prev-next-area,.headerlink,.bd-header-announcement,#pst-back-to-top,dialog,.onlyprint,.d-none,.copybtn){display:none!important}
html[data-css-loading] .bd-header{display:flex;align-items:center;min-height:4rem;padding:0 1rem;border-bottom:1px solid #d1d5da}
html[data-css-loading] .bd-header a{color:inherit;text-decoration:none;font-weight:600}
html[data-css-loading] .bd-header img{display:none}
html[data-css-loading] .bd-main{max-width:60rem;margin:0 auto;padding:1rem 1rem 0}
html[data-css-loading] a{color:#0a6bb0}
html[data-css-loading] h1{font-size:1.9rem;line-height:1.2;margin:1rem 0 .4rem}
html[data-css-loading] :is(pre,code,kbd){font-family:ui-monospace,"Cascadia Code","Source Code Pro",Menlo,Consolas,"DejaVu Sans Mono",monospace}
html[data-css-loading] pre{white-space:pre-wrap;overflow-wrap:anywhere;margin:.3rem 0 .6rem;padding:.4rem .6rem;font-size:.8rem;line-height:1.35;background:#f3f4f5;border:1px solid #d1d5da;border-radius:.25rem}
html[data-css-loading][data-theme=dark] pre{background:#29313d;border-color:#48566b}
@media (max-width:600px){html[data-css-loading] h1{font-size:1.3rem;margin-top:0}html[data-css-loading] pre{font-size:.7rem}}
html[data-css-loading] table{border-collapse:collapse}
html[data-css-loading] img,html[data-css-loading] svg{max-width:100%;height:auto}
"""
START = ('<style data-critical-css>\n' + CRITICAL_CSS + '</style>\n'
         f'<script>document.documentElement.setAttribute("{MARK}", "");</script>\n')
# In place of the stylesheets: each attached once the first paint with text has been presented
# (after the first frame where Paint Timing is missing), or once the page is parsed if that comes
# first (so that the load event waits for them; a tab opened in the background paints nothing);
# the critical rules gone when all have loaded or failed.
ATTACH = """<script>(function () {
  const root = document.documentElement, hrefs = %s;
  let attached = false;
  function attach() {
    if (attached) return;
    attached = true;
    let left = hrefs.length;
    const one = () => { if (--left <= 0) root.removeAttribute("%s"); };
    for (const href of hrefs) {
      const link = document.createElement("link");
      link.rel = "stylesheet";
      link.href = href;
      link.addEventListener("load", one);
      link.addEventListener("error", one);
      document.head.append(link);
    }
  }
  document.addEventListener("DOMContentLoaded", attach);
  const Observer = window.PerformanceObserver;
  if (Observer && (Observer.supportedEntryTypes || []).includes("paint"))
    new Observer((list, observer) => {
      if (!list.getEntriesByName("first-contentful-paint").length) return;
      observer.disconnect();
      setTimeout(attach);
    }).observe({type: "paint", buffered: true});
  else
    requestAnimationFrame(() => setTimeout(attach));
})();</script>
"""


def rewrite_head(html: str, options_js: str = "") -> str:
    """The page with its stylesheets loading without blocking behind the critical rules, and its
    external scripts deferred, ``documentation_options.js`` (whose text is ``options_js``)
    written in (see the module's docstring)."""
    end = html.find("</head>")
    if end < 0 or MARK in html[:end]:
        return html
    head, rest = html[:end], html[end:]
    sheets = STYLESHEET.findall(head)
    if not sheets:
        return html

    hrefs = [unescape(re.search(r'\bhref="([^"]*)"', tag).group(1)) for tag in sheets]
    first = head.find(sheets[0])
    attach = ATTACH % (json.dumps(hrefs), MARK)
    after = STYLESHEET.sub("", head[first:])   # the stylesheets' tags, taken out where they were
    head = head[:first] + START + attach + "<noscript>" + "".join(sheets) + "</noscript>\n" + after

    quiz = HAS_QUIZ in rest

    def defer(match: re.Match) -> str:
        name = match.group(2).split("?")[0]
        if name.endswith(INLINED) and options_js:
            return "<script>" + options_js.strip() + "\n"   # its </script> follows
        if name.endswith(INLINED) or (quiz and name.endswith(QUIZ_SCRIPT)):
            return match.group(0)
        return "<script defer" + match.group(1) + ">"

    head = SCRIPT.sub(defer, head)
    return head + rest


def _rewrite(app: Sphinx, exception) -> None:
    if exception is not None or app.builder.format != "html":
        return
    out = Path(app.outdir)
    options = out / "_static" / INLINED
    options_js = options.read_text() if options.is_file() else ""
    for page in out.rglob("*.html"):
        rel = page.relative_to(out).as_posix()
        if rel.startswith(SKIP_DIRS) or rel in SKIP_PAGES:
            continue
        html = page.read_text()
        new = rewrite_head(html, options_js)
        if new != html:
            page.write_text(new)


def setup(app: Sphinx) -> dict:
    # After every writer of pages (site_entrances at 400, sphinx-external-toc's index at 500).
    app.connect("build-finished", _rewrite, priority=900)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
