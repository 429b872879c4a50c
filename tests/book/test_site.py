"""The built site as a reader sees it: every page in headless Chromium, and every internal link.

Run after `make book` (`make test` and `make test-site` do). The browser is Debian's (or the
system's) Chromium driven by the `playwright` package; no browser is ever downloaded. Without a
Chromium the browser tests are skipped with a note saying how to install one, except in CI
(CI=true), where they fail instead. BOOK_SITE=/path/to/html checks another copy of a built site
(for instance one with a fault put in on purpose).

Every page must load with no uncaught error, no console error, no failed request and no request to
another host (the site, MathJax included, is served from itself), and its formulas must be typeset.
Every page a search engine may index has one description, a link-preview card and its canonical
address, and is in the sitemap; a wrong address gets the book's 404 page. The site is served on
the loopback as its host serves it (under the published path, with 404.html for a missing page),
and both the browser and LinkChecker read it over HTTP, so the checks work for any user wherever
the clone is (LinkChecker run as root drops to `nobody`, who cannot read a private directory).

One browser run visits every page once, each in a tab of its own, three tabs at a time; the tests
below read what it found.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import os
import re
import struct
import subprocess
import sys
import tempfile
import threading
import xml.etree.ElementTree as ElementTree
from http import HTTPStatus
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import unquote, urljoin, urlsplit

import pytest
import yaml

from browser import IN_CI, LAUNCH_ARGS, chromium_or_skip
from test_reader_pages import HEADING_GIVES_AWAY
from places import REPOSITORY

ROOT = REPOSITORY
SITE = Path(os.environ.get("BOOK_SITE") or ROOT / "_build" / "html").resolve()

sys.path.insert(0, str(ROOT / "_ext"))
sys.path.insert(0, str(ROOT / "scripts"))
from nbtools import toc_files  # noqa: E402
from page_meta import LIMIT, published_url  # noqa: E402

PUBLISHED = published_url(ROOT)          # https://<host>/<path>/, from pyproject.toml
PREFIX = urlsplit(PUBLISHED).path        # /<path>/: where the host serves the site

# Bounds, not waits: each ends as soon as the thing waited for happens. Generous, so that a busy
# machine (two cores shared with other work) is slow but never red.
NAVIGATION_TIMEOUT_MS = 90_000
ACTION_TIMEOUT_MS = 30_000

# A page attaches its stylesheets and scripts once its first paint with text has been presented
# (_ext/first_paint.py), so its load event can come before them: a test that reads a page as its
# reader sees it, styled and with its scripts run, waits for them as well.
ASSETS_LOADED_JS = "() => !document.documentElement.hasAttribute('data-assets-loading')"


async def assets_loaded(page) -> None:
    """Until every stylesheet and script the page attaches after its first paint has loaded or
    failed (at once on a page that attaches none)."""
    await page.wait_for_function(ASSETS_LOADED_JS, timeout=ACTION_TIMEOUT_MS)

# No console error is allowed. The three that a stock Jupyter Book 1 page logs have their causes
# removed in the build: the doubled thebe script (_ext/inline_scripts_once.py), "Got invalid theme
# mode" (html_context's default_mode in _config.yml) and the favicon 404 (html.favicon).
#
# Requests to other hosts are blocked (the test runs offline by design) and each one is a failure:
# a page that needs another host (a CDN's MathJax, a web font) does not work in a workshop room
# without a network.


def pages() -> list[str]:
    """Every HTML page of the built site, as a path relative to the site root."""
    skip = ("_static/", "_sources/", "_images/", "student/")
    return sorted(p.relative_to(SITE).as_posix() for p in SITE.rglob("*.html")
                  if not p.relative_to(SITE).as_posix().startswith(skip)
                  and not _is_redirect(p))


def _is_redirect(path: Path) -> bool:
    """index.html only sends the reader on to the landing page (a meta refresh)."""
    return 'http-equiv="Refresh"' in path.read_text(errors="replace")[:2000]


def book_pages() -> list[str]:
    """The pages of the table of contents (_toc.yml), as paths relative to the site root."""
    toc = yaml.safe_load((ROOT / "_toc.yml").read_text())
    return sorted(f"{doc}.html" for doc in [toc["root"], *toc_files(toc)])


@pytest.fixture(scope="module")
def site() -> Path:
    if not (SITE / "index.html").exists():
        message = "The site is not built: run `make test-site` (it builds the book first)."
        if IN_CI:
            pytest.fail(message)
        pytest.skip(message)
    return SITE


@contextlib.contextmanager
def serve(directory: Path, prefix: str = "/"):
    """Serve `directory` at `prefix` on a free port of 127.0.0.1 from this process, as the site's
    host does: anything else, and any missing file, answers 404 with the site's 404.html (when
    there is one). Yields the base URL (with the prefix, without its last slash)."""
    not_found = directory / "404.html"

    class Host(SimpleHTTPRequestHandler):
        def log_message(self, *args):
            pass

        def end_headers(self):
            # Like a real host: the theme's scripts and styles are fetched once, not per page.
            self.send_header("Cache-Control", "max-age=600")
            # LinkChecker's documented sign that a server takes its requests at full speed: without
            # it, it waits 0.1 to 0.6 s before each request to one host (a minute for this site).
            self.send_header("LinkChecker", "not rate-limited")
            super().end_headers()

        def translate_path(self, path):
            path = urlsplit(path).path
            if not path.startswith(prefix):
                return str(directory / "__outside_the_published_path__")  # no such file: a 404
            return super().translate_path("/" + path[len(prefix):])

        def send_error(self, code, message=None, explain=None):
            if code != HTTPStatus.NOT_FOUND or not not_found.is_file():
                return super().send_error(code, message, explain)
            body = not_found.read_bytes()
            self.send_response(code)
            self.send_header("Content-Type", "text/html; charset=utf-8")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            if self.command != "HEAD":
                self.wfile.write(body)

    class Server(ThreadingHTTPServer):
        def handle_error(self, request, client_address):
            # A reader (the browser closing a tab) may hang up mid-answer: that is not the site's
            # fault, and the browser side reports what it did not get.
            if not isinstance(sys.exc_info()[1], ConnectionError):
                super().handle_error(request, client_address)

    httpd = Server(("127.0.0.1", 0), functools.partial(Host, directory=str(directory)))
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{httpd.server_address[1]}{prefix.rstrip('/')}"
    finally:
        httpd.shutdown()
        httpd.server_close()


@pytest.fixture(scope="module")
def server(site):
    with serve(site, PREFIX) as base:
        yield base


# LinkChecker's configuration: no rate limit for a server that allows it (ours, by its header).
LINKCHECKER_RC = "[checking]\nmaxrequestspersecond=1000\n"


def start_linkchecker(base: str) -> subprocess.Popen:
    """LinkChecker over the site served at `base`, recursively, never leaving that server.

    It reads the site over HTTP, not from disk: run as root, LinkChecker drops its privileges to
    `nobody`, who cannot read files in a private directory (a 0700 temporary directory, root's home),
    while this process, which serves them, can.
    """
    host = urlsplit(base).netloc
    only_this_server = "^https?://(?!" + re.escape(host) + "/)"
    # A file of our own, read before LinkChecker drops its privileges, removed when it ends.
    rc = tempfile.NamedTemporaryFile("w", suffix=".rc", prefix="linkcheckerrc-", delete=False)
    rc.write(LINKCHECKER_RC)
    rc.close()
    command = [str(Path(sys.executable).parent / "linkchecker"), f"--config={rc.name}",
               "--no-status", "--no-warnings",
               "--recursion-level=-1", f"--ignore-url={only_this_server}", "--ignore-url=^mailto:",
               f"{base}/index.html"]
    process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    process.rc_file = rc.name
    return process


def _end_linkchecker(process: subprocess.Popen) -> None:
    if process.poll() is None:
        process.kill()
        process.communicate()
    Path(process.rc_file).unlink(missing_ok=True)


def linkchecker_result(process: subprocess.Popen, timeout: float = 300) -> tuple[int, int, str]:
    """(exit code, URLs checked, output) of a LinkChecker run."""
    try:
        out, err = process.communicate(timeout=timeout)
    finally:
        _end_linkchecker(process)
    found = re.search(r"(\d+) links? in (\d+) URLs? checked", out)
    return process.returncode, int(found.group(2)) if found else 0, out[-4000:] + err[-2000:]


@pytest.fixture(scope="module")
def linkchecker(server):
    """LinkChecker over the served site, started at once so that it runs beside the browser test."""
    process = start_linkchecker(server)
    yield process
    _end_linkchecker(process)


def _is_local(url: str, base: str) -> bool:
    return url.startswith(base) or url.startswith("data:") or url.startswith("blob:") or url == "about:blank"


def _other_hosts(base: str) -> re.Pattern:
    """Every URL that _is_local rejects, as one pattern: Playwright matches it in the browser's
    driver, so only requests to other hosts are stopped and handed to this process."""
    return re.compile("^(?!" + re.escape(base) + "|data:|blob:|about:blank$)")


# What every page is checked for, in the page itself: images that do not decode, Graphviz objects
# whose SVG did not load, and tracebacks outside the cells meant to raise.
CHECK_PAGE_JS = """
async () => {
  const problems = [];
  for (const img of Array.from(document.images)) {
    img.loading = "eager";
    try { await img.decode(); }
    catch (e) { problems.push("image does not decode: " + img.getAttribute("src")); }
    if (img.complete && img.naturalWidth === 0) problems.push("image is empty: " + img.getAttribute("src"));
  }
  for (const obj of Array.from(document.querySelectorAll("object[type='image/svg+xml']"))) {
    const doc = obj.contentDocument;
    if (!doc || !doc.documentElement || doc.documentElement.localName !== "svg") {
      problems.push("SVG object did not load: " + obj.getAttribute("data"));
      continue;
    }
    // The links inside a Graphviz SVG (the decision guide's leaves): checked by the caller.
    for (const a of Array.from(doc.querySelectorAll("a"))) {
      const href = a.getAttribute("href") || a.getAttributeNS("http://www.w3.org/1999/xlink", "href");
      if (href && !/^[a-z]+:/.test(href)) problems.push("svg-link " + new URL(href, obj.data).href);
    }
  }
  const tracebacks = Array.from(document.querySelectorAll(".output.traceback, .output.error, .output.stderr"))
    .filter(el => /Traceback \\(most recent call last\\)|Error:/.test(el.textContent))
    .filter(el => !el.closest(".tag_raises-exception"));
  for (const el of tracebacks) {
    const cell = el.closest(".cell");
    problems.push("traceback outside a raises-exception cell: " +
                  el.textContent.trim().split("\\n").slice(-1)[0].slice(0, 160) +
                  (cell && cell.id ? " (cell " + cell.id + ")" : ""));
  }
  return problems;
}
"""

# The same page on a phone-sized screen in dark mode (the page is resized and switched, not
# reloaded): it must not scroll sideways, and graphs must sit on a white card.
PHONE_DARK_JS = """
() => {
  document.documentElement.dataset.theme = "dark";
  const problems = [];
  const width = document.documentElement.scrollWidth;
  if (width > window.innerWidth + 1)
    problems.push("wider than a phone screen: " + width + "px for " + window.innerWidth + "px");
  for (const el of Array.from(document.querySelectorAll(
      ".cell_output img[src$='.svg'], .cell_output .text_html svg, div.graphviz object"))) {
    if (getComputedStyle(el).backgroundColor !== "rgb(255, 255, 255)")
      problems.push("graph without a light background in dark mode: " +
                    (el.getAttribute("src") || el.getAttribute("data") || el.nodeName));
  }
  return problems;
}
"""
# Formulas: every one typeset (as MathML, written at build time; or by MathJax, once it has finished),
# and no raw TeX left in the text a reader sees. Code is left out, since it may hold a `$` or a backslash.
MATH_JS = r"""
async () => {
  if (window.MathJax && MathJax.startup && MathJax.startup.promise) await MathJax.startup.promise;
  const problems = [];
  const formulas = Array.from(document.querySelectorAll(".math"));
  const typeset = formulas.filter(el => el.querySelector("mjx-container, math")).length;
  if (typeset < formulas.length)
    problems.push("formulas not typeset: " + (formulas.length - typeset) + " of " + formulas.length);
  const text = (document.querySelector("main") || document.body).cloneNode(true);
  text.querySelectorAll("pre, code, .highlight, mjx-container, math, script, style").forEach(el => el.remove());
  const raw = text.textContent.match(/\\\(|\\\[|\$\$|\$[^$\s][^$\n]*\$/);
  if (raw) problems.push("raw TeX in the text: " + JSON.stringify(raw[0].slice(0, 80)));
  return {problems: problems, typeset: typeset};
}
"""
PHONE = {"width": 390, "height": 844}
DESKTOP = {"width": 1280, "height": 900}
TABS = 3  # pages checked at once: loading overlaps with checking, on two cores too

# The scenario pages, each with a quiz and a link to its student copy; the workshop guide links them all.
SCENARIO_PAGES = sorted(f"notebooks/{p.stem}.html" for p in (ROOT / "notebooks").glob("*.ipynb"))
WORKSHOP_PAGE = "chapters/workshop.html"

# Clicks each answer of the page's quiz in turn, and reports what the feedback says and links to.
QUIZ_JS = """
() => {
  const quizzes = Array.from(document.querySelectorAll(".MultipleChoiceQn"));
  if (quizzes.length !== 1) return {error: quizzes.length + " quizzes on the page"};
  const buttons = Array.from(document.querySelectorAll(".MCButton"));
  if (buttons.length < 2) return {error: buttons.length + " answers to choose from"};
  // The title of the section an element is in (its heading, without the permalink sign).
  const title = el => {
    const section = el && (el.tagName === "SECTION" ? el : el.closest("section"));
    const heading = section && section.querySelector("h1, h2, h3, h4, h5, h6");
    if (!heading) return null;
    const copy = heading.cloneNode(true);
    copy.querySelectorAll(".headerlink").forEach(a => a.remove());
    return copy.textContent.trim();
  };
  const seen = [];
  for (const button of buttons) {
    button.click();  // jupyterquiz writes the feedback in the click handler itself
    const fb = document.querySelector(".Feedback");
    const link = fb && fb.querySelector("a[href^='#']");
    seen.push({text: fb ? fb.textContent : "", correct: !!(fb && fb.classList.contains("correct")),
               target: link ? link.getAttribute("href").slice(1) : null,
               found: !!(link && document.getElementById(link.getAttribute("href").slice(1))),
               links: Array.from(fb ? fb.querySelectorAll("a[href^='#']") : []).map(a => ({
                 text: a.textContent.trim(),
                 section: title(document.getElementById(a.getAttribute("href").slice(1)))}))});
  }
  // Where the quiz sits: the title of its section, and whether a failing cell's output comes first.
  const failing = document.querySelector(".tag_raises-exception");
  return {answers: seen, section: title(quizzes[0]),
          failureFirst: !!failing && !!(failing.compareDocumentPosition(quizzes[0])
                                        & Node.DOCUMENT_POSITION_FOLLOWING)};
}
"""


# What a search result and a link preview read from a page's head.
META_JS = """
() => ({
  title: document.title,
  descriptions: Array.from(document.querySelectorAll('meta[name="description"]')).map(m => m.content),
  robots: Array.from(document.querySelectorAll('meta[name="robots"]')).map(m => m.content).join(","),
  canonical: Array.from(document.querySelectorAll('link[rel="canonical"]')).map(l => l.getAttribute("href")),
  og: Object.fromEntries(Array.from(document.querySelectorAll('meta[property^="og:"]'))
        .map(m => [m.getAttribute("property"), m.content])),
  twitter: Array.from(document.querySelectorAll('meta[name="twitter:card"]')).map(m => m.content),
})
"""
# The ways back into the book that the 404 page offers: its links and its search form.
NOT_FOUND_JS = """
() => ({
  title: document.title,
  links: Array.from(document.querySelectorAll("main a[href], article a[href]")).map(a => a.href),
  search: Array.from(document.querySelectorAll("main form, article form")).map(f => f.action),
})
"""
NOT_FOUND_PATH = "notebooks/no-such-folder/no-such-page.html"  # two levels deep: relative links would break


# What a reader meets on a laptop's first screen (1366 x 768), in document coordinates (CSS px).
LAPTOP = {"width": 1366, "height": 768}
READER_JS = """
async () => {
  const place = el => { const r = el.getBoundingClientRect();
                        return {top: r.top + window.scrollY, bottom: r.bottom + window.scrollY}; };
  // Each graph drawing (an SVG image of a cell's output, or a replay frame drawn inline): its
  // smallest text as rendered, from the SVG's viewBox, its font sizes and its rendered width.
  const smallest = (svg, width) => {
    const box = svg.viewBox && svg.viewBox.baseVal;
    const sizes = Array.from(svg.querySelectorAll("text"))
      .map(t => parseFloat(t.getAttribute("font-size") || "14")).filter(x => x > 0);
    // Graphviz scales a graph bigger than its size attribute inside the SVG: scale(s s) on graph0.
    const group = svg.querySelector("g.graph");
    const scale = group && /scale\\(([\\d.]+)/.exec(group.getAttribute("transform") || "");
    const inner = scale ? parseFloat(scale[1]) : 1;
    return box && box.width && sizes.length ? Math.min(...sizes) * inner * width / box.width : null;
  };
  const drawings = async () => {
    const found = [];
    for (const img of document.querySelectorAll(".cell_output img[src$='.svg']")) {
      const text = await (await fetch(img.src)).text();
      const svg = new DOMParser().parseFromString(text, "image/svg+xml").documentElement;
      const figure = img.closest("figure");
      const caption = figure && figure.querySelector("figcaption");
      found.push({src: img.getAttribute("src"), alt: img.getAttribute("alt") || "",
                  caption: caption ? caption.textContent.trim() : "",
                  graph: !!svg.querySelector("g.graph"),
                  px: smallest(svg, img.getBoundingClientRect().width),
                  toggled: !!img.closest("details"),   // the whole graph, behind a toggle
                  opens: !!img.closest("a.open-full")});
    }
    for (const frames of document.querySelectorAll(".al-frames")) {
      // One picture, its frames applied by the slider's script: step through all of them.
      const slider = frames.querySelector("input[type=range]");
      const svg = frames.querySelector(".al-frame svg");
      const sizes = [], captions = [], px = [];
      for (let k = 0; k <= +slider.max; k++) {
        slider.value = k;
        slider.dispatchEvent(new Event("input"));
        const shown = frames.querySelector(".al-frame svg");
        const r = shown.getBoundingClientRect();
        sizes.push([Math.round(r.width), Math.round(r.height)]);
        captions.push(frames.querySelector(".al-step").textContent);
        px.push(smallest(shown, r.width));
      }
      slider.value = 0;
      slider.dispatchEvent(new Event("input"));
      // The step buttons beside the slider: one on each side, on the slider's line.
      const s = slider.getBoundingClientRect();
      const buttons = Array.from(frames.querySelectorAll(".al-controls button"))
        .map(b => b.getBoundingClientRect());
      const beside = buttons.length === 2 && buttons[0].right <= s.left + 1 && buttons[1].left >= s.right - 1
        && buttons.every(b => b.top < s.bottom && b.bottom > s.top && b.width > 0);
      found.push({replay: true, sizes: sizes, steps: new Set(captions).size, buttons: buttons.length,
                  beside: beside, frames: px,
                  px: px.some(x => x === null) ? null : Math.min(...px)});
    }
    return found;
  };
  const boxes = Array.from(document.querySelectorAll(".fix-box"));
  const box = boxes[0];
  return {
    fixBoxes: boxes.length,
    fixBox: box ? place(box) : null,
    fixCode: box && box.querySelector("pre") ? place(box.querySelector("pre")) : null,
    fixLinks: box ? Array.from(box.querySelectorAll("a[href]")).map(a => a.getAttribute("href")) : [],
    drawings: await drawings(),
    tracebacks: Array.from(document.querySelectorAll(".tag_raises-exception .output.traceback")).map(out => {
      const message = out.querySelector(".short-traceback .traceback-message");
      const details = out.querySelector("details.full-traceback");
      const widest = Math.max(0, ...Array.from(out.querySelectorAll(".short-traceback pre"))
                                      .map(pre => pre.scrollWidth));
      return {
        message: message ? message.textContent : null,
        wrapped: !!message && message.scrollWidth <= message.clientWidth + 1,
        widest: widest,
        column: out.getBoundingClientRect().width,
        fullHidden: !!details && !details.open,
        full: details && details.querySelector("pre") ? details.querySelector("pre").textContent : "",
      };
    }),
  };
}
"""

# The smallest text of an SVG element as shown, from its viewBox, font sizes, Graphviz's inner scale.
SMALLEST_TEXT_JS = """
const smallestText = svg => {
  const box = svg.viewBox && svg.viewBox.baseVal;
  const sizes = Array.from(svg.querySelectorAll("text")).map(t => parseFloat(t.getAttribute("font-size") || "14"));
  const group = svg.querySelector("g.graph");
  const scale = group && /scale\\(([\\d.]+)/.exec(group.getAttribute("transform") || "");
  const width = svg.getBoundingClientRect().width;
  return box && box.width && sizes.length ? Math.min(...sizes) * (scale ? parseFloat(scale[1]) : 1) * width / box.width : null;
};
"""
# On a phone: each backward replay, opened full size with its button (then put back).
PHONE_REPLAY_JS = "() => {" + SMALLEST_TEXT_JS + """
  return Array.from(document.querySelectorAll(".al-frames")).map(frames => {
    const button = frames.querySelector("button.al-open");
    if (!button) return {button: false, px: null};
    button.click();
    const svg = frames.querySelector(".al-frame svg"), box = frames.querySelector(".al-frame");
    const opened = {button: true, px: smallestText(svg), pans: box.scrollWidth > box.clientWidth,
                    pageWidth: document.documentElement.scrollWidth};
    button.click();
    return opened;
  });
}"""
# A drawing opened on its own (what its link opens), as the browser shows it.
OPENED_JS = "() => {" + SMALLEST_TEXT_JS + """
  return {px: smallestText(document.documentElement)};
}"""


async def _open_drawings(executable: str, urls: list[str], viewport: dict) -> dict[str, float | None]:
    """Each drawing's SVG opened on its own in a tab of the given size: its smallest text."""
    from playwright.async_api import async_playwright

    opened = {}
    async with async_playwright() as p:
        browser = await p.chromium.launch(executable_path=executable, args=LAUNCH_ARGS, headless=True)
        page = await browser.new_page(viewport=viewport)
        for url in urls:
            await page.goto(url, wait_until="load")
            opened[url] = (await page.evaluate(OPENED_JS))["px"]
        await browser.close()
    return opened


class Visit:
    """One page in one tab of its own: what it is, and whether the test has left it.

    Requests are the tab's own, so each is charged to the right page. Once the checks of a page
    are done the test closes its tab, and the browser cancels whatever that tab still had in flight
    (typically the favicon, which Chromium fetches only after the load event): such a request fails
    with net::ERR_ABORTED, was abandoned by the test, not by the site, and is fetched again at the
    end to prove that the site serves it. Any other failed request, a request aborted while the test
    is still on the page, and every HTTP error status are failures.
    """

    def __init__(self, path: str, expect_status: int = 200):
        self.path = path
        self.expect_status = expect_status
        self.left = False


async def _browse(executable: str, base: str, paths: list[str]) -> dict:
    """Visit every page once; return what was found (see the tests below)."""
    from playwright.async_api import async_playwright

    found = {"problems": [], "typeset": {}, "meta": {}, "quiz": [], "hrefs": {}, "bodies": {}, "reader": {},
             "phone_replays": {},
             "not_found": None, "abandoned": set()}
    problems = found["problems"]
    queue: asyncio.Queue[Visit] = asyncio.Queue()
    for path in paths:
        queue.put_nowait(Visit(path))
    queue.put_nowait(Visit(NOT_FOUND_PATH, expect_status=404))

    async def open_tab(context, visit: Visit):
        page = await context.new_page()

        async def block(route):
            problems.append(f"{visit.path}: request to another host: {route.request.url[:200]}")
            await route.abort()

        def on_console(msg):
            # The one error a 404 page must log: the browser's note that its address answered 404.
            expected = (visit.expect_status == 404 and msg.location.get("url") == page.url
                        and msg.text.endswith("status of 404 (Not Found)"))
            if msg.type == "error" and not expected:
                problems.append(f"{visit.path}: console error: {msg.text[:200]}")

        def on_failed(request):
            if not _is_local(request.url, base):
                return  # blocked above, and reported there
            if visit.left and request.failure == "net::ERR_ABORTED":
                found["abandoned"].add(request.url)
            else:
                problems.append(f"{visit.path}: request failed: {request.url} ({request.failure})")

        def on_response(response):
            expected = response.request.is_navigation_request() and response.status == visit.expect_status
            if _is_local(response.url, base) and response.status >= 400 and not expected:
                problems.append(f"{visit.path}: HTTP {response.status}: {response.url}")

        page.on("console", on_console)
        page.on("pageerror", lambda err: problems.append(f"{visit.path}: uncaught error: {str(err)[:200]}"))
        page.on("requestfailed", on_failed)
        page.on("response", on_response)
        await page.route(_other_hosts(base), block)
        return page

    async def check_page(page, path: str):
        for problem in await page.evaluate(CHECK_PAGE_JS):
            if problem.startswith("svg-link "):
                target = urlsplit(problem.split(" ", 1)[1]).path
                if not (SITE / target.removeprefix(PREFIX)).is_file():
                    problems.append(f"{path}: a link inside a graph leads nowhere: {target}")
            else:
                problems.append(f"{path}: {problem}")
        math = await page.evaluate(MATH_JS)
        found["typeset"][path] = math["typeset"]
        problems.extend(f"{path}: {p}" for p in math["problems"])
        found["meta"][path] = await page.evaluate(META_JS)
        await read_at_a_glance(page, path)
        if path in SCENARIO_PAGES or path == WORKSHOP_PAGE:
            await quiz_and_links(page, path)
        await page.set_viewport_size(PHONE)
        problems.extend(f"{path} (phone, dark): {p}" for p in await page.evaluate(PHONE_DARK_JS))
        found["phone_replays"][path] = await page.evaluate(PHONE_REPLAY_JS)

    async def read_at_a_glance(page, path: str):
        """The page on a laptop's first screen (see READER_JS and the tests at the end)."""
        await page.set_viewport_size(LAPTOP)
        await page.evaluate("() => window.scrollTo(0, 0)")
        found["reader"][path] = await page.evaluate(READER_JS)
        await page.set_viewport_size(DESKTOP)

    async def quiz_and_links(page, path: str):
        found["hrefs"][path] = await page.evaluate(
            "() => Array.from(document.querySelectorAll('a[href*=\"student/\"], a[href*=\"colab.research\"]'))"
            ".map(a => a.href)")
        if path == WORKSHOP_PAGE:
            return
        await page.wait_for_selector(".MCButton")
        result = await page.evaluate(QUIZ_JS)
        if "error" in result:
            found["quiz"].append(f"{path}: {result['error']}")
            return
        answers = result["answers"]
        if sum(a["correct"] for a in answers) != 1:
            found["quiz"].append(f"{path}: {sum(a['correct'] for a in answers)} answers marked correct")
        for a in answers:
            if len(a["text"].strip()) < 20 or not a["found"]:
                found["quiz"].append(f"{path}: feedback {a['text'][:60]!r} does not link to a cell of "
                                     f"the page (#{a['target']})")
            for link in a["links"]:   # (the page's typographic apostrophes read as plain ones)
                if link["text"] != (link["section"] or "").replace("\u2019", "'"):
                    found["quiz"].append(f"{path}: a feedback link says {link['text']!r} for the section "
                                         f"{link['section']!r}")
        if HEADING_GIVES_AWAY.search(result["section"] or ""):
            found["quiz"].append(f"{path}: the quiz sits under a heading that gives its answer away: "
                                 f"{result['section']!r}")
        if result["failureFirst"]:
            found["quiz"].append(f"{path}: a failing cell's output comes before the quiz")

    async def worker(context):
        while not queue.empty():
            visit = queue.get_nowait()
            page = await open_tab(context, visit)
            try:
                response = await page.goto(f"{base}/{visit.path}", wait_until="load")
                status = response.status if response else None
                if status != visit.expect_status:
                    problems.append(f"{visit.path}: does not load (HTTP {status})")
                elif visit.expect_status == 404:
                    found["not_found"] = await page.evaluate(NOT_FOUND_JS)
                else:
                    await assets_loaded(page)
                    await check_page(page, visit.path)
            finally:
                visit.left = True
                await page.close()

    async with async_playwright() as p:
        browser = await p.chromium.launch(executable_path=executable, args=LAUNCH_ARGS, headless=True)
        context = await browser.new_context(viewport=DESKTOP)
        context.set_default_navigation_timeout(NAVIGATION_TIMEOUT_MS)
        context.set_default_timeout(ACTION_TIMEOUT_MS)
        # The site root's index.html only sends the reader on to the landing page.
        landing = Visit("index.html")
        page = await open_tab(context, landing)
        await page.goto(f"{base}/index.html", wait_until="load")
        await page.wait_for_url(re.compile(r"/intro\.html$"))
        landing.left = True
        await page.close()
        await asyncio.gather(*(worker(context) for _ in range(TABS)))
        # Whatever the test abandoned by closing a tab: the site serves it.
        for url in sorted(found["abandoned"]):
            response = await context.request.get(url)
            if not response.ok:
                problems.append(f"a request abandoned when its tab closed answers HTTP {response.status}: {url}")
        # The student copies, followed as a reader would, through the browser's own requests.
        for path, links in found["hrefs"].items():
            for url in links:
                if not _is_local(url, base):
                    continue
                response = await context.request.get(url)
                if not response.ok:
                    found["quiz"].append(f"{path}: {url} answers HTTP {response.status}")
                    continue
                found["bodies"][url] = await response.body()
        await context.close()
        await browser.close()
    return found


@pytest.fixture(scope="module")
def browsed(site, server, linkchecker):
    """Every page, the 404 page and the student copies, in one browser run (LinkChecker meanwhile)."""
    executable = chromium_or_skip()
    visited = pages()
    assert len(visited) > 5, visited
    return asyncio.run(_browse(executable, server, visited))


def test_every_page_in_chromium_desktop_then_phone_in_dark_mode(browsed):
    """Each page loads with no uncaught error, no console error, no failing request and no request
    to another host; its formulas are typeset, with no raw TeX left; its images decode; it shows no
    traceback outside a cell meant to raise; resized to a phone in dark mode, it does not scroll
    sideways and its graphs sit on white."""
    assert browsed["problems"] == [], "\n".join(sorted(browsed["problems"]))
    assert set(browsed["typeset"]) == set(pages()), "pages not checked"
    # The first scenario explains the error with formulas: the math check has something to check.
    assert browsed["typeset"]["notebooks/01_backward_twice.html"] > 0, browsed["typeset"]


def _png_size(path: Path) -> tuple[int, int]:
    head = path.read_bytes()[:24]
    assert head[:8] == b"\x89PNG\r\n\x1a\n", f"{path.name} is not a PNG"
    return struct.unpack(">II", head[16:24])


def test_every_page_has_one_description_a_card_and_its_canonical_url(browsed):
    """What a search result and a link preview show: on every page of the book one description of
    at most LIMIT characters, unique to the page; an Open Graph card (title, description, picture,
    address) and a Twitter card; one canonical address, at the published URL. The pages Sphinx
    generates (search, index, 404) say noindex instead."""
    meta, problems = browsed["meta"], []
    indexable = sorted(p for p, m in meta.items() if "noindex" not in m["robots"])
    assert indexable == book_pages(), "the pages a search engine may index are not the book's pages"
    owner: dict[str, str] = {}
    for path in indexable:
        m, url = meta[path], PUBLISHED + path
        if len(m["descriptions"]) != 1:
            problems.append(f"{path}: {len(m['descriptions'])} descriptions")
            continue
        description = m["descriptions"][0]
        if not 0 < len(description) <= LIMIT:
            problems.append(f"{path}: a description of {len(description)} characters (at most {LIMIT})")
        if description in owner:
            problems.append(f"{path}: the same description as {owner[description]}")
        owner[description] = path
        if m["canonical"] != [url]:
            problems.append(f"{path}: canonical {m['canonical']}, not [{url}]")
        og = m["og"]
        wanted = {"og:title": m["title"].split(" \u2014 ")[0], "og:description": description, "og:url": url,
                  "og:type": "website"}
        problems += [f"{path}: {k} is {og.get(k)!r}, not {v!r}" for k, v in wanted.items() if og.get(k) != v]
        image = og.get("og:image", "")
        if not image.startswith(PUBLISHED) or not (SITE / image.removeprefix(PUBLISHED)).is_file():
            problems.append(f"{path}: og:image {image!r} is not a picture of the site")
        elif _png_size(SITE / image.removeprefix(PUBLISHED)) != (int(og.get("og:image:width", 0)),
                                                                   int(og.get("og:image:height", 0))):
            problems.append(f"{path}: og:image:width and height are not the picture's size")
        if not og.get("og:image:alt"):
            problems.append(f"{path}: no og:image:alt")
        if m["twitter"] != ["summary_large_image"]:
            problems.append(f"{path}: twitter:card {m['twitter']}")
    assert problems == [], "\n".join(problems)
    assert "backward through the graph a second time" in meta["intro.html"]["title"], meta["intro.html"]["title"]


def _sitemap(site: Path) -> list[str]:
    root = ElementTree.parse(site / "sitemap.xml").getroot()
    namespace = {"s": "http://www.sitemaps.org/schemas/sitemap/0.9"}
    return [loc.text for loc in root.findall("s:url/s:loc", namespace)]


def test_sitemap_lists_every_page_at_the_published_address(site):
    """The book's pages, and the site's address itself (its root, index.html)."""
    assert sorted(_sitemap(site)) == sorted([PUBLISHED] + [PUBLISHED + p for p in book_pages()])


class _Head(HTMLParser):
    """What a search engine and a link preview read in a page's <head>: meta tags and canonical links."""

    def __init__(self):
        super().__init__()
        self.meta: list[tuple[str, str]] = []
        self.canonical: list[str] = []

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        if tag == "meta" and (attrs.get("name") or attrs.get("property")):
            self.meta.append((attrs.get("name") or attrs.get("property"), attrs.get("content") or ""))
        elif tag == "link" and attrs.get("rel") == "canonical":
            self.canonical.append(attrs.get("href") or "")


def _indexable_pages(site: Path) -> dict[str, _Head]:
    """Every HTML page of the site that a search engine may list (no noindex), the site root's
    index.html included, with what its head says."""
    found = {}
    for path in sorted(site.rglob("*.html")):
        rel = path.relative_to(site).as_posix()
        if rel.startswith(("_static/", "_sources/", "_images/", "student/")):
            continue
        head = _Head()
        head.feed(path.read_text(errors="replace"))
        if not any(name == "robots" and "noindex" in content for name, content in head.meta):
            found[rel] = head
    return found


def test_every_page_of_the_site_root_included_has_its_own_description_a_card_and_a_sitemap_entry(site):
    """All the pages a search engine may list, read from the built files (the redirect at the site's
    root too, which the browser run leaves for the landing page): one description each, used by no
    other page, an Open Graph and a Twitter card with that description and the book's picture, one
    canonical address, and that address in the sitemap; the sitemap lists nothing else."""
    pages_found = _indexable_pages(site)
    assert sorted(pages_found) == sorted(["index.html", *book_pages()]), sorted(pages_found)
    problems, owner, canonical = [], {}, []
    for rel, head in pages_found.items():
        meta: dict[str, list[str]] = {}
        for name, content in head.meta:
            meta.setdefault(name, []).append(content)
        descriptions = meta.get("description", [])
        if len(descriptions) != 1 or not 0 < len(descriptions[0]) <= LIMIT:
            problems.append(f"{rel}: descriptions {descriptions}")
            continue
        description = descriptions[0]
        if description in owner:
            problems.append(f"{rel}: the same description as {owner[description]}")
        owner[description] = rel
        card = {k: meta.get(k, []) for k in ("og:title", "og:description", "og:url", "og:image",
                                             "og:image:alt", "og:type", "twitter:card")}
        if card["og:description"] != [description] or len(card["og:title"]) != 1 or not card["og:title"][0]:
            problems.append(f"{rel}: no card with its title and description: {card}")
        if card["og:image"] != [PUBLISHED + "_static/card.png"] or not card["og:image:alt"]:
            problems.append(f"{rel}: the card's picture is {card['og:image']}")
        if card["twitter:card"] != ["summary_large_image"]:
            problems.append(f"{rel}: twitter:card {card['twitter:card']}")
        if len(head.canonical) != 1 or card["og:url"] != head.canonical:
            problems.append(f"{rel}: canonical {head.canonical}, og:url {card['og:url']}")
            continue
        canonical.append(head.canonical[0])
    assert problems == [], "\n".join(problems)
    assert len(owner) == len(pages_found) == len(book_pages()) + 1
    assert sorted(_sitemap(site)) == sorted(canonical), "the sitemap does not list each page's address once"


def test_a_wrong_address_gets_the_404_page_which_leads_back_into_the_book(browsed, server):
    """Served as the host serves it (404.html for any missing address, at any depth), the page
    loads offline with no error (the first test checks its requests and console) and links to the
    landing page, the decision guide and search."""
    not_found = browsed["not_found"]
    assert not_found is not None, "the 404 page was not reached"
    assert not_found["title"].startswith("Page not found"), not_found["title"]
    wanted = [f"{server}/intro.html", f"{server}/chapters/which_fix.html", f"{server}/search.html"]
    for url in wanted:
        assert url in not_found["links"], f"the 404 page has no link to {url}: {not_found['links']}"
        assert (SITE / url.removeprefix(server + "/")).is_file(), url
    assert not_found["search"] == [f"{server}/search.html"], not_found["search"]


def test_internal_links_resolve(site, linkchecker):
    """LinkChecker, over HTTP from the loopback: every link inside the site points to a page or
    file that exists, and the crawl reached every page."""
    code, checked, output = linkchecker_result(linkchecker)
    assert code == 0, output
    assert checked >= len(pages()), output


def test_link_check_reads_a_site_in_a_private_directory(tmp_path):
    """The link check works for the user the suite runs as (root too) on a site in a 0700
    directory, and still finds a broken link there."""
    private = tmp_path / "private"
    private.mkdir(mode=0o700)
    os.chmod(private, 0o700)  # whatever the umask
    (private / "index.html").write_text('<a href="page.html">a page</a> <a href="https://example.com/">out</a>')
    (private / "page.html").write_text('<a href="index.html">back</a>')
    with serve(private) as base:
        code, checked, output = linkchecker_result(start_linkchecker(base), timeout=60)
        assert (code, checked) == (0, 3), output
        (private / "page.html").write_text('<a href="gone.html">a page that does not exist</a>')
        code, checked, output = linkchecker_result(start_linkchecker(base), timeout=60)
    assert code == 1 and "gone.html" in output, output


class _Anchors(HTMLParser):
    """Collects the ids a page defines and the links it makes."""

    def __init__(self):
        super().__init__()
        self.ids: set[str] = set()
        self.links: list[str] = []

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        for key in ("id", "name"):
            if attrs.get(key):
                self.ids.add(attrs[key])
        if tag == "a" and attrs.get("href"):
            self.links.append(attrs["href"])


def test_internal_anchors_resolve(site):
    """Every link to a #fragment of a page of the site names an id that page defines.

    (LinkChecker can check anchors too, but takes over a minute for what this does in a second.)
    """
    parsed: dict[Path, _Anchors] = {}

    def parse(path: Path) -> _Anchors:
        if path not in parsed:
            parser = _Anchors()
            parser.feed(path.read_text(errors="replace"))
            parsed[path] = parser
        return parsed[path]

    broken = []
    for rel in pages():
        page = site / rel
        for href in parse(page).links:
            parts = urlsplit(href)
            if parts.scheme or parts.netloc or not parts.fragment:
                continue
            target = (page.parent / unquote(parts.path)).resolve() if parts.path else page
            if target.suffix != ".html" or not target.is_file():
                continue  # a missing page is LinkChecker's to report
            if unquote(parts.fragment) not in parse(target).ids:
                broken.append(f"{rel}: {href}")
    assert broken == [], "links to anchors that do not exist:\n" + "\n".join(sorted(set(broken)))


def test_notebook_pages_have_launch_and_download_buttons(site):
    """Colab and Binder on every notebook page (scenarios and executed chapters), a download of the
    .ipynb, and the repository and issue buttons."""
    notebooks = sorted((ROOT / "notebooks").glob("*.ipynb")) + sorted((ROOT / "chapters").glob("*.ipynb"))
    assert notebooks
    from nbtools import project_urls

    repo = project_urls()["Repository"].removeprefix("https://github.com/").rstrip("/")
    missing = []
    for source in notebooks:
        doc = source.relative_to(ROOT).with_suffix("").as_posix()   # e.g. notebooks/01_backward_twice
        page = site / f"{doc}.html"
        if not page.exists():
            missing.append(f"{doc}: no page in the site")
            continue
        html = page.read_text()
        wanted = {
            "Colab": f"colab.research.google.com/github/{repo}/blob/main/{doc}.ipynb",
            "Binder": f"mybinder.org/v2/gh/{repo}/main?urlpath=tree/{doc}.ipynb",
            "download .ipynb": f"_sources/{doc}.ipynb",
            "repository": f"https://github.com/{repo}",
            "issues": f"{repo}/issues",
        }
        missing += [f"{doc}: no {what} button" for what, needle in wanted.items() if needle not in html]
        if not (site / "_sources" / f"{doc}.ipynb").exists():
            missing.append(f"{doc}: the downloadable notebook is not in the site")
    assert missing == [], "\n".join(missing)




# ---------------------------------------------------------------------------------------------
# Quizzes and student copies (the workshop kit): every scenario page has a predict-then-run quiz
# that answers when clicked, and the student copies are linked from the workshop guide and from
# every scenario page, and download as notebooks (one by one and as one archive). The browser run
# above clicks the quizzes and follows the links.


def test_every_scenario_page_has_a_quiz_whose_feedback_links_to_its_proof(browsed):
    assert browsed["quiz"] == [], "\n".join(browsed["quiz"])
    assert set(SCENARIO_PAGES) <= set(browsed["hrefs"]), "scenario pages not checked"


def test_student_copies_are_linked_from_every_scenario_page_and_the_workshop_guide(browsed):
    import io
    import zipfile

    import nbformat

    from student import ARCHIVE, SELF_CHECK_TAG, SOLUTION_TAG
    from student_links import colab_url

    hrefs, bodies = browsed["hrefs"], browsed["bodies"]
    names = [Path(p).stem + ".ipynb" for p in SCENARIO_PAGES]
    for path in [*SCENARIO_PAGES, WORKSHOP_PAGE]:
        links = hrefs[path]
        wanted = names if path.startswith("chapters/") else [Path(path).stem + ".ipynb"]
        for name in wanted:
            assert any(l.endswith(f"/student/{name}") for l in links), f"{path}: no link to {name}"
            assert colab_url(name) in links, f"{path}: no Colab link for {name}"
        assert any(l.endswith(f"/student/{ARCHIVE}") for l in links), f"{path}: no link to the archive"
    for url, body in bodies.items():
        if url.endswith(".ipynb"):
            nb = nbformat.reads(body.decode(), as_version=4)
            tags = [t for c in nb.cells for t in c.metadata.get("tags", [])]
            assert SOLUTION_TAG not in tags and tags.count(SELF_CHECK_TAG) == 1, url
        else:
            with zipfile.ZipFile(io.BytesIO(body)) as z:
                # every student copy, and beside them the quizzes' questions and the script
                # notebook 21 runs
                notebooks = [Path(n).name for n in z.namelist() if n.endswith(".ipynb")]
                assert sorted(notebooks) == sorted(names), url
                assert [n for n in z.namelist() if not n.endswith(".ipynb")] == sorted(
                    [f"student/quizzes/{Path(n).stem}.json" for n in names] + ["student/scripts/train_rnn.py"])
    assert {Path(urlsplit(u).path).name for u in bodies} == {*names, ARCHIVE}


# ----- The book at a glance (the reader's first screen, drawings, quizzes, tracebacks) -----
# Measured in the browser run above, at a laptop's 1366 x 768 (READER_JS).

def test_every_scenario_page_opens_with_its_fix_box_on_the_first_screen(browsed):
    reader = browsed["reader"]
    assert set(SCENARIO_PAGES) <= set(reader), "scenario pages not measured"
    problems = []
    for path in SCENARIO_PAGES:
        seen = reader[path]
        if seen["fixBoxes"] != 1 or not seen["fixCode"]:
            problems.append(f"{path}: {seen['fixBoxes']} fix boxes, code shown: {bool(seen['fixCode'])}")
            continue
        if seen["fixBox"]["bottom"] > LAPTOP["height"]:
            problems.append(f"{path}: the fix box ends at {seen['fixBox']['bottom']:.0f} px, below the "
                            f"first {LAPTOP['height']} px")
        if not any(href.startswith("#") for href in seen["fixLinks"]):
            problems.append(f"{path}: the fix box links no section of the page that proves it")
    assert not problems, "\n".join(problems)


def test_tracebacks_show_the_message_wrapped_and_the_full_traceback_one_click_away(browsed):
    """Each failing cell shows the reader's frames and the error message wrapped to the column
    (no line wider than the column, where the raw traceback's message ran to 3,000 px and more),
    and the whole stored traceback, unchanged, in a closed <details>."""
    problems, seen = [], 0
    for path in SCENARIO_PAGES:
        for i, tb in enumerate(browsed["reader"][path]["tracebacks"]):
            seen += 1
            where = f"{path}, failing cell {i + 1}"
            if tb["message"] is None:
                problems.append(f"{where}: no short traceback with the error message")
                continue
            if not tb["wrapped"] or tb["widest"] > tb["column"] + 1:
                problems.append(f"{where}: a line {tb['widest']} px wide in a column of {tb['column']:.0f} px")
            if not tb["fullHidden"] or "Traceback (most recent call last)" not in tb["full"]:
                problems.append(f"{where}: the full traceback is not one click away")
            elif " ".join(tb["message"].split()) not in " ".join(tb["full"].split()):
                problems.append(f"{where}: the message shown is not the stored error's")
    assert seen >= 20, f"only {seen} failing cells found on the scenario pages"
    assert not problems, "\n".join(problems)


MIN_TEXT_PX = 9           # the smallest text of a drawing, as rendered on a laptop
# Every graph drawing on every page is captioned and reads at MIN_TEXT_PX (focused where the whole
# graph is too big; the whole graph then sits behind a toggle and opens full size).
REPLAY_PAGES = {"notebooks/01_backward_twice.html", "notebooks/05_rnn_hidden_state.html",
                "notebooks/12_gan_discriminator.html", "notebooks/21_debugging_your_loop.html",
                "chapters/mental_model.html"}


def _graph_drawings(browsed):
    for path, seen in sorted(browsed["reader"].items()):
        for drawing in seen["drawings"]:
            if drawing.get("graph"):
                yield path, drawing


def test_every_graph_drawing_has_alt_text_from_the_graph_and_opens_full_size(browsed):
    problems, count = [], 0
    for path, d in _graph_drawings(browsed):
        count += 1
        alt = d["alt"]
        if alt.endswith(".svg") or "/" in alt or len(alt) < 30 or not re.search(r"\d+ (nodes|boxes)", alt):
            problems.append(f"{path}: {d['src']}: alt text is not a description of the graph: {alt[:80]!r}")
        if not d["opens"]:
            problems.append(f"{path}: {d['src']}: does not open full size")
    assert count >= 40, f"only {count} graph drawings found"
    assert not problems, "\n".join(problems)


def test_drawings_read_at_the_column_width_and_say_what_to_look_at(browsed):
    sizes = sorted(d["px"] for _, d in _graph_drawings(browsed) if d["px"])
    small = [s for s in sizes if s < MIN_TEXT_PX]
    print(f"graph drawings: {len(sizes)}; smallest text (px) min {sizes[0]:.1f}, median "
          f"{sizes[len(sizes) // 2]:.1f}, under {MIN_TEXT_PX} px: {len(small)}")
    problems, count = [], 0
    for path, d in _graph_drawings(browsed):
        count += 1
        if not d["caption"]:
            problems.append(f"{path}: {d['src']}: no caption saying what to look at")
        if d["toggled"]:
            continue    # a whole graph behind a toggle, beside its focused drawing: opened full size
        if d["px"] is None or d["px"] < MIN_TEXT_PX:
            problems.append(f"{path}: {d['src']}: smallest text {d['px']} px (at least {MIN_TEXT_PX})")
    # The backward replays, in every frame (a big graph's replay is focused, as its drawing is).
    replays = [(path, d["px"]) for path, seen in sorted(browsed["reader"].items())
               for d in seen["drawings"] if d.get("replay")]
    print("backward replays, smallest text (px):", [(p, round(px or 0, 1)) for p, px in replays])
    for path, px in replays:
        if px is None or px < MIN_TEXT_PX:
            problems.append(f"{path}: a backward replay's smallest text {px} px (at least {MIN_TEXT_PX})")
    assert len(replays) >= len(REPLAY_PAGES), f"only {len(replays)} backward replays measured"
    assert set(SCENARIO_PAGES) <= set(browsed["reader"]), "pages not measured"
    assert count >= 40, f"only {count} graph drawings found"
    assert not problems, "\n".join(problems)


def test_the_backward_replay_keeps_its_frames_the_same_size_with_step_buttons(browsed):
    problems = []
    for path in sorted(REPLAY_PAGES):
        replays = [d for d in browsed["reader"][path]["drawings"] if d.get("replay")]
        if not replays:
            problems.append(f"{path}: no backward replay")
        for r in replays:
            if r["steps"] != len(r["sizes"]) or len(r["sizes"]) < 2:
                problems.append(f"{path}: {r['steps']} step captions shown for {len(r['sizes'])} frames")
            if len({tuple(s) for s in r["sizes"]}) != 1:
                problems.append(f"{path}: frames of different sizes {sorted({tuple(s) for s in r['sizes']})}")
            if r["buttons"] != 2 or not r["beside"]:
                problems.append(f"{path}: {r['buttons']} step buttons, beside the slider: {r['beside']} "
                                "(one on each side wanted)")
            if len(set(r["frames"])) != 1:
                problems.append(f"{path}: the text size changes between frames: {sorted(set(r['frames']))}")
    assert not problems, "\n".join(problems)



def test_every_drawing_opens_readable_on_a_phone(browsed, server):
    """At 390x844 each graph drawing's link opens the SVG on its own at its natural size (the
    browser's scrolling pans it, its zoom zooms it), where its smallest text is at least
    MIN_TEXT_PX; each backward replay opens full size with its button, in a box that pans."""
    urls = sorted({urljoin(f"{server}/{path}", d["src"]) for path, d in _graph_drawings(browsed)
                   if d["opens"]})
    opened = asyncio.run(_open_drawings(chromium_or_skip(), urls, PHONE))
    sizes = sorted(px for px in opened.values() if px)
    print(f"drawings opened on a phone: {len(sizes)}; smallest text (px) min {sizes[0]:.1f}, "
          f"median {sizes[len(sizes) // 2]:.1f}")
    problems = [f"{url}: opened on a phone, smallest text {px} px" for url, px in opened.items()
                if px is None or px < MIN_TEXT_PX]
    replays = 0
    for path, found in sorted(browsed["phone_replays"].items()):
        for r in found:
            replays += 1
            if not r["button"] or r["px"] is None or r["px"] < MIN_TEXT_PX:
                problems.append(f"{path}: a backward replay opened full size on a phone reads at {r['px']} px")
            elif not r["pans"] or r["pageWidth"] > PHONE["width"]:
                problems.append(f"{path}: the opened replay does not pan in its own box")
    assert len(urls) >= 40 and replays >= len(REPLAY_PAGES), (len(urls), replays)
    assert not problems, "\n".join(problems)
