"""The first paint: a page shows its first screen before it asks for a stylesheet or a script.

A stock page of this theme holds thirteen stylesheets and ten scripts in its ``<head>``, each of
which the browser must fetch (and each script run) before it paints anything: the landing page
painted nearly five times later than a bare page served by the same server. After the build,
every page is rewritten here:

- The stylesheets, then the external scripts, are attached by a small inline script once the
  first paint that shows text has been presented (Paint Timing's ``first-contentful-paint``; after
  the first frame where a browser has none), or once the page is parsed if it is not shown (a tab
  opened in the background paints nothing). A ``<noscript>`` copy of each stylesheet keeps them as
  they were where no script runs. Scripts that were deferred keep their order (``async = false``)
  and an async one stays async. So the page's ``load`` event can come before them: the attribute
  ``data-assets-loading`` on ``<html>`` stays until every file attached has loaded (or failed),
  which is what the browser tests wait for.
- Why the scripts too: deferred, they were fetched while the page was parsed (twelve requests at
  once, which a 2-core machine serves while it parses), the first two ran before the first frame,
  and the rest (the theme's bootstrap.js the longest) on the main thread while the frame's tiles
  were rasterised and drawn, beside it on the other core (Chromium's traces of the landing
  page). Attached after the paint, the landing page painted 13 % sooner on a laptop and 21 % on a
  phone, side by side with the page as it was (25 loads each; where the rest of its time goes:
  below). A script that listens for ``DOMContentLoaded`` without asking
  ``document.readyState`` first (sphinx-design's ``design-tabs.js``, which ``page_weight.py``
  keeps off pages without tabs) would miss it, so it stays deferred; every other one starts on a
  parsed page as well.
- Until the stylesheets have all loaded, a small inline stylesheet (``CRITICAL_CSS``) lays out
  what the first screen shows: the page's colours in either scheme, the header's title, the
  article in its column in the theme's text face (``system-ui``, so the text does not change face
  when the theme arrives), its code blocks in the browser's generic ``monospace`` face, the
  article's blocks below the first screen skipped until they come
  near it (``content-visibility: auto``: in Chromium's traces of the landing page, a sixth less
  work in its renderer before the first paint); the navigation that the full styles place in the
  sidebars, the print-only copy of the title and contents, and the copy buttons wait for them.
  Only generic font families: while it lays out the first frame, a fresh renderer looks each named
  family up with a request to the browser and waits for the answer, and a name the system lacks
  costs one for nothing. The theme's list for code names six faces (ui-monospace to DejaVu Sans Mono); on a
  Linux system with the last, the landing page made eight such requests for font data before its
  first paint with that list and three with ``monospace`` (Chromium's traces, three loads of four
  on a laptop and on a phone; in the fourth the theme's rules had arrived before the frame was
  shown, and both made more), each a wait for the browser's thread on a busy machine. Where the
  theme's list finds another face than the browser's generic one (on a Mac or on Windows, for
  instance), code changes face when the theme arrives, with the rest of the layout. Its rules apply
  only while ``<html data-css-loading>`` is set, which an inline script sets first and removes
  when the last stylesheet has loaded (or failed): then the page is the theme's, unchanged.
  (Merely non-blocking stylesheets, ``media="print"`` switched to ``all``, arrive from a near
  server before the first frame, and the browser styles the whole page with them before painting
  it; attached at the first frame, their requests and the theme's 400 kB of rules were fetched and
  parsed while that frame was still being drawn.)
- ``documentation_options.js`` (a few hundred bytes), which the inline lines after it extend
  (``DOCUMENTATION_OPTIONS.pagename = ...``), is written into the page in its place; on a page
  with a quiz, ``quiz.js`` stays as it is, since it must run before the quiz's own inline script
  in the page's body (as does the quiz's library there).

Where the landing page's time went, measured with ``scripts/first_paint.py`` and Chromium's traces
of its loads (Playwright's tracing; the CPU time of the page's renderer before its first paint,
median of 7 traced loads on a laptop: the bare page's 16 ms, the landing page's 83 ms before and
58 ms after the changes above, its main thread's 45 and 33 ms): besides the scripts, the whole
article was laid out, shaped and painted, not only its first screen (now skipped below it). What
is left is the page itself: parsing its 54 kB (the theme's sidebars and dialogs, hidden until the
theme arrives, come before the article), the first screen's layout, fonts and text, and rasterising
a screenful of text (about 9 ms of the renderer's time, against under 1 ms for the bare page's two
lines). Two runs of 21 loads of each build, in turns, at a load average of 10 to 17: the ratio was
2.18 and 2.36 on a laptop, 2.08 and 2.20 on a phone before those changes, 1.67 and 2.00, 1.91 and
1.40 after.

What is left, from one traced load of each page on a laptop (the landing page's first paint 94 ms
after its renderer started, the bare page's 57 ms): the navigation's commit and the parse take
about the same wall time for both (the landing page is parsed to its last lines in one slice of the
main thread, 5 ms of CPU time). Then its first frame: 19.5 ms of wall time for 9.7 ms of CPU time,
against 1.5 ms for the bare page, with style and layout run three times (content-visibility: auto
lays the article's blocks out locked, unlocks those near the screen, then settles) and, while it
was laid out, twelve requests to the browser for fonts, each waited for (fourteen before the first
paint, against four for the bare page). Then rasterising the first screen, about fourteen tiles on
the renderer's one raster thread: 18 ms of wall time for 8 ms of CPU time, alongside the end of the
parse on the main thread, against one tile for the bare page; then the draw and its presentation (9
ms, 6 for the bare page). Five of the fourteen font requests looked for code faces that the system
lacks (the theme's list, now generic families: above). The rest is a screenful of text and the
next half screen's, in six sizes and weights (two faces), laid out and rasterised: in 5 traced loads of each, the landing page's raster before its first paint was 21
tiles and 10 ms of CPU time (medians) on a laptop, 8 tiles and 6 ms on a phone, the bare page's one
tile and under 1 ms. The content-visibility rule stays as it is: set on the subsections' blocks
only, or on every block but the subsections, the landing page painted more before its first paint
(2.6 and 2.1 ms of CPU time against 1.0 on a laptop, 2.1 and 1.8 against 0.9 on a phone, medians
of 5 traced loads), and without it 2.3 ms against 1.0 on a laptop (another run of 5).

The parts of the page before the article do not show in the wall times. Copies of intro.html served
beside it, 15 loads each in turns at a load average of 5 to 9, as a ratio to the bare page on a
laptop and a phone: the page 2.29 and 1.53; without the primary sidebar 2.14 and 1.80; without the
table of scenarios 1.79 and 1.80; cut after its first screen 1.86 and 1.20; without what comes
before the header (skip link, search dialog, banners) 1.86 and 1.80; without the article's header
2.14 and 1.87. In another run of 21 loads (laptop, load 7): the page 1.77, cut after its first
screen 2.00, the header and the article without anything before them 1.62, and the header and the
first screen alone with the critical rules and no other head (7 kB) 1.46. No part moves the ratio
by more than a run's spread, and a page of the first screen alone is not far under the landing
page.

The font change against the build before it, with ``--before``, 21 loads in turns (the landing
page now and then, in times the bare page's first paint), three runs one after the other at a load
average of 11 to 17: 1.56 and 1.78, 2.00 and 1.71, 2.19 and 2.38 on a laptop; 1.40 and 1.48, 1.50 and 1.56,
1.04 and 1.00 on a phone (in the last, the bare page's median was 104 ms). The change was ahead in
four of six, by 0.06 to 0.22, and behind in two, by 0.29 and 0.04: the effect of five font requests
is under what this machine's load moves, and neither build stays under 2 on a laptop from run to
run. Run alone one after the other at a load of 10 to 12, the build before the change gave 1.74 and
1.32 and the build after 2.27 and 1.47; at the start of that session (load 2 to 6) the build before
gave 2.07 and 1.88.

The 404 page (its files are written by scripts, see ``site_entrances.py``) and the site root's
redirect are left alone.
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
# Every external script's start tag: group 1 its attributes, group 2 its address.
SCRIPT_ANY = re.compile(r'<script\b([^>]*\bsrc="([^"]*)"[^>]*)>')
EMPTY_SCRIPT = "<script data-attached-late>"   # what a script attached late leaves, removed with its </script>

# The first screen while the stylesheets load: colours (light, dark, and the reader's system's
# for "auto"), the header's title, the article in a column, code blocks, in generic font
# families (pydata-sphinx-theme's --pst-font-family-base-system for the text; see the module's
# docstring for the code's); the
# article's blocks laid out, shaped and painted only when near the screen (content-visibility:
# auto, each standing in for 10rem until then). Nothing here outlives the loading: every rule sits
# under html[data-css-loading].
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
html[data-css-loading] :is(pre,code,kbd){font-family:monospace}
html[data-css-loading] pre{white-space:pre-wrap;overflow-wrap:anywhere;margin:.3rem 0 .6rem;padding:.4rem .6rem;font-size:.8rem;line-height:1.35;background:#f3f4f5;border:1px solid #d1d5da;border-radius:.25rem}
html[data-css-loading][data-theme=dark] pre{background:#29313d;border-color:#48566b}
@media (max-width:600px){html[data-css-loading] h1{font-size:1.3rem;margin-top:0}html[data-css-loading] pre{font-size:.7rem}}
html[data-css-loading] table{border-collapse:collapse}
html[data-css-loading] img,html[data-css-loading] svg{max-width:100%;height:auto}
html[data-css-loading] .bd-article section>:not(h1){content-visibility:auto;contain-intrinsic-size:auto 10rem}
"""
LOADING = "data-assets-loading"
START = ('<style data-critical-css>\n' + CRITICAL_CSS + '</style>\n'
         f'<script>document.documentElement.setAttribute("{MARK}", "");'
         f' document.documentElement.setAttribute("{LOADING}", "");</script>\n')
# In place of the stylesheets and the external scripts: the stylesheets, then the scripts, attached
# once the first paint with text has been presented (after the first frame where Paint Timing is
# missing), or once the page is parsed if it is not shown (a tab opened in the background paints
# nothing); the critical rules gone when every stylesheet has loaded or failed, LOADING when every
# stylesheet and script has. Scripts that were deferred run in their order (async = false), as
# they did; an async one stays async.
ATTACH = """<script>(function () {
  const root = document.documentElement, sheets = %s, scripts = %s;
  let attached = false;
  function attach() {
    if (attached) return;
    attached = true;
    let sheetsLeft = sheets.length, left = sheets.length + scripts.length;
    const one = () => { if (--left <= 0) root.removeAttribute("%s"); };
    const sheet = () => { if (--sheetsLeft <= 0) root.removeAttribute("%s"); one(); };
    for (const href of sheets) {
      const link = document.createElement("link");
      link.rel = "stylesheet";
      link.href = href;
      link.addEventListener("load", sheet);
      link.addEventListener("error", sheet);
      document.head.append(link);
    }
    for (const attributes of scripts) {
      const script = document.createElement("script");
      for (const [name, value] of Object.entries(attributes)) script.setAttribute(name, value);
      if (!("async" in attributes)) script.async = false;
      script.addEventListener("load", one);
      script.addEventListener("error", one);
      document.head.append(script);
    }
  }
  document.addEventListener("DOMContentLoaded", () => { if (document.visibilityState === "hidden") attach(); });
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
ATTRIBUTE = re.compile(r'([^\s=/>"\']+)(?:\s*=\s*"([^"]*)")?')


def _attributes(tag_inside: str) -> dict[str, str]:
    """A start tag's attributes (the text between ``<script`` and ``>``), values unescaped."""
    return {name.lower(): unescape(value or "") for name, value in ATTRIBUTE.findall(tag_inside)}


def _always_late(src: str) -> bool:
    return True


def rewrite_head(html: str, options_js: str = "", can_start_late=_always_late) -> str:
    """The page with its stylesheets and external scripts attached after its first paint, behind
    the critical rules, ``documentation_options.js`` (whose text is ``options_js``) written in
    (see the module's docstring). ``can_start_late(src)`` says whether a script may run after
    DOMContentLoaded; one that may not stays deferred."""
    end = html.find("</head>")
    if end < 0 or MARK in html[:end]:
        return html
    head, rest = html[:end], html[end:]
    sheets = STYLESHEET.findall(head)
    if not sheets:
        return html

    hrefs = [unescape(re.search(r'\bhref="([^"]*)"', tag).group(1)) for tag in sheets]
    first = head.find(sheets[0])
    after = STYLESHEET.sub("", head[first:])   # the stylesheets' tags, taken out where they were
    quiz = HAS_QUIZ in rest
    late: list[dict[str, str]] = []

    def in_head(match: re.Match) -> str:
        name = match.group(2).split("?")[0]
        if name.endswith(INLINED) and options_js:
            return "<script>" + options_js.strip() + "\n"   # its </script> follows
        if name.endswith(INLINED) or (quiz and name.endswith(QUIZ_SCRIPT)):
            return match.group(0)
        return _late_or_deferred(match, can_start_late, late)

    def in_body(match: re.Match) -> str:
        attributes = _attributes(match.group(1))
        if "defer" not in attributes and "async" not in attributes:
            return match.group(0)   # a script the page's own inline scripts need (the quiz's library)
        return _late_or_deferred(match, can_start_late, late)

    before = SCRIPT_ANY.sub(in_head, head[:first])
    after = SCRIPT_ANY.sub(in_head, after)
    rest = SCRIPT_ANY.sub(in_body, rest)
    attach = ATTACH % (_js(hrefs), _js(late), LOADING, MARK)
    # The critical rules and the script that attaches the rest where the first stylesheet was
    # (after the theme's colour-scheme script).
    head = before + START + attach + "<noscript>" + "".join(sheets) + "</noscript>\n" + after
    return _drop_empty_script_tags(head + rest)


def _js(value) -> str:
    """A value as a JavaScript literal that cannot end the inline script it stands in."""
    return json.dumps(value).replace("</", "<\\/")


def _late_or_deferred(match: re.Match, can_start_late, late: list) -> str:
    attributes = _attributes(match.group(1))
    src = attributes.get("src", "")
    if can_start_late(src):
        attributes.pop("defer", None)
        if "async" in attributes:
            attributes["async"] = ""
        late.append(attributes)
        return EMPTY_SCRIPT
    if "defer" in attributes or "async" in attributes:
        return match.group(0)
    return "<script defer" + match.group(1) + ">"


def _drop_empty_script_tags(text: str) -> str:
    return re.sub(r"[ \t]*" + re.escape(EMPTY_SCRIPT) + r"\s*</script>[ \t]*\n?", "", text)


def _script_starts_late(out: Path, page: Path):
    """Whether a script of `page` copes with starting after DOMContentLoaded: it does unless its
    file listens for that event without asking document.readyState first (sphinx-design's
    design-tabs.js); a file not in the build is not attached late."""
    cache: dict[Path, bool] = {}

    def can_start_late(src: str) -> bool:
        path = (page.parent / src.split("?")[0].split("#")[0]).resolve()
        if path not in cache:
            text = path.read_text(errors="replace") if path.is_file() and path.is_relative_to(out.resolve()) else None
            cache[path] = text is not None and ("DOMContentLoaded" not in text or "readyState" in text)
        return cache[path]

    return can_start_late


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
        new = rewrite_head(html, options_js, _script_starts_late(out, page))
        if new != html:
            page.write_text(new)


def setup(app: Sphinx) -> dict:
    # After every writer of pages (site_entrances at 400, sphinx-external-toc's index at 500).
    app.connect("build-finished", _rewrite, priority=900)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
