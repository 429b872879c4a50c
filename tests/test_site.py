"""The built site as a reader sees it: every page in headless Chromium, and every internal link.

Run after `make book` (`make test` and `make test-site` do). The browser is Debian's (or the
system's) Chromium driven by the `playwright` package; no browser is ever downloaded. Without a
Chromium the browser tests are skipped with a note saying how to install one, except in CI
(CI=true), where they fail instead.

Every page must load with no uncaught error, no console error and no request to another host (the
site, MathJax included, is served from itself), and its formulas must be typeset. The site is
served on the loopback and both the browser and LinkChecker read it over HTTP, so the checks work
for any user wherever the clone is (LinkChecker run as root drops to `nobody`, who cannot read a
private directory).
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import os
import re
import shutil
import subprocess
import sys
import threading
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import unquote, urlsplit

import pytest

ROOT = Path(__file__).resolve().parent.parent
SITE = ROOT / "_build" / "html"
IN_CI = os.environ.get("CI", "").lower() == "true"

CHROMIUM_NAMES = ["chromium", "chromium-browser", "google-chrome", "google-chrome-stable"]
# Flags that keep Chromium from reaching the network on its own (updates, sync, field trials).
LAUNCH_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
               "--disable-component-update", "--disable-sync", "--no-first-run"]

# No console error is allowed. The three that a stock Jupyter Book 1 page logs have their causes
# removed in the build: the doubled thebe script (_ext/inline_scripts_once.py), "Got invalid theme
# mode" (html_context's default_mode in _config.yml) and the favicon 404 (html.favicon).
#
# Requests to other hosts are blocked (the test runs offline by design) and each one is a failure:
# a page that needs another host (a CDN's MathJax, a web font) does not work in a workshop room
# without a network.


def find_chromium() -> str | None:
    explicit = os.environ.get("CHROMIUM")
    if explicit:
        return explicit if Path(explicit).exists() else None
    for name in CHROMIUM_NAMES:
        found = shutil.which(name)
        if found:
            return found
    return None


def pages() -> list[str]:
    """Every HTML page of the built site, as a path relative to the site root."""
    skip = ("_static/", "_sources/", "_images/")
    return sorted(p.relative_to(SITE).as_posix() for p in SITE.rglob("*.html")
                  if not p.relative_to(SITE).as_posix().startswith(skip)
                  and not _is_redirect(p))


def _is_redirect(path: Path) -> bool:
    """index.html only sends the reader on to the landing page (a meta refresh)."""
    return 'http-equiv="Refresh"' in path.read_text(errors="replace")[:2000]


@pytest.fixture(scope="module")
def site() -> Path:
    if not (SITE / "index.html").exists():
        message = "The site is not built: run `make test-site` (it builds the book first)."
        if IN_CI:
            pytest.fail(message)
        pytest.skip(message)
    return SITE


@contextlib.contextmanager
def serve(directory: Path):
    """Serve `directory` on a free port of 127.0.0.1 from this process; yields the base URL."""

    class Quiet(SimpleHTTPRequestHandler):
        def log_message(self, *args):
            pass

        def end_headers(self):
            # Like a real host: the theme's scripts and styles are fetched once, not per page.
            self.send_header("Cache-Control", "max-age=600")
            super().end_headers()

    httpd = ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(Quiet, directory=str(directory)))
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{httpd.server_address[1]}"
    finally:
        httpd.shutdown()
        httpd.server_close()


@pytest.fixture(scope="module")
def server(site):
    with serve(site) as base:
        yield base


def start_linkchecker(base: str) -> subprocess.Popen:
    """LinkChecker over the site served at `base`, recursively, never leaving that server.

    It reads the site over HTTP, not from disk: run as root, LinkChecker drops its privileges to
    `nobody`, who cannot read files in a private directory (a 0700 temporary directory, root's home),
    while this process, which serves them, can.
    """
    only_this_server = "^https?://(?!" + re.escape(base.split("://", 1)[1]) + "/)"
    command = [str(Path(sys.executable).parent / "linkchecker"), "--no-status", "--no-warnings",
               "--recursion-level=-1", f"--ignore-url={only_this_server}", "--ignore-url=^mailto:",
               f"{base}/index.html"]
    return subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def linkchecker_result(process: subprocess.Popen, timeout: float = 180) -> tuple[int, int, str]:
    """(exit code, URLs checked, output) of a LinkChecker run."""
    out, err = process.communicate(timeout=timeout)
    found = re.search(r"(\d+) links? in (\d+) URLs? checked", out)
    return process.returncode, int(found.group(2)) if found else 0, out[-4000:] + err[-2000:]


@pytest.fixture(scope="module")
def linkchecker(server):
    """LinkChecker over the served site, started at once so that it runs beside the browser test."""
    process = start_linkchecker(server)
    yield process
    if process.poll() is None:
        process.kill()
        process.communicate()


def _chromium_or_skip() -> str:
    executable = find_chromium()
    if executable is None:
        message = ("No Chromium found for the browser test. Install it (Debian/Ubuntu: "
                   "`sudo apt-get install chromium`; `make chromium` tries for you) or point "
                   "CHROMIUM=/path/to/chromium at one.")
        if IN_CI:
            pytest.fail(message + " In CI (CI=true) this test is never skipped.")
        pytest.skip(message)
    return executable


def _is_local(url: str, base: str) -> bool:
    return url.startswith(base) or url.startswith("data:") or url.startswith("blob:") or url == "about:blank"


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
# Formulas, once MathJax (served from the site) has finished: every formula typeset, and no raw TeX
# left in the text a reader sees. Code is left out, since it may hold a `$` or a backslash.
MATH_JS = r"""
async () => {
  if (window.MathJax && MathJax.startup && MathJax.startup.promise) await MathJax.startup.promise;
  const problems = [];
  const formulas = Array.from(document.querySelectorAll(".math"));
  const typeset = formulas.filter(el => el.querySelector("mjx-container")).length;
  if (typeset < formulas.length)
    problems.push("formulas not typeset: " + (formulas.length - typeset) + " of " + formulas.length);
  const text = (document.querySelector("main") || document.body).cloneNode(true);
  text.querySelectorAll("pre, code, .highlight, mjx-container, script, style").forEach(el => el.remove());
  const raw = text.textContent.match(/\\\(|\\\[|\$\$|\$[^$\s][^$\n]*\$/);
  if (raw) problems.push("raw TeX in the text: " + JSON.stringify(raw[0].slice(0, 80)));
  return {problems: problems, typeset: typeset};
}
"""
PHONE = {"width": 390, "height": 844}
DESKTOP = {"width": 1280, "height": 900}
TABS = 3  # pages checked at once: loading overlaps with checking, on two cores too


async def _visit_all(executable: str, base: str, paths: list[str]) -> tuple[list[str], dict[str, int]]:
    """Problems found on the pages, and how many formulas each page has typeset."""
    from playwright.async_api import async_playwright

    problems: list[str] = []
    typeset: dict[str, int] = {}
    queue: asyncio.Queue[str] = asyncio.Queue()
    for path in paths:
        queue.put_nowait(path)

    async def watch(page, current: dict[str, str]):
        """Record every uncaught error, console error and request to another host of `page`."""

        async def route(r):
            if _is_local(r.request.url, base):
                await r.continue_()
            else:
                problems.append(f"{current['path']}: request to another host: {r.request.url[:200]}")
                await r.abort()

        def on_console(msg):
            if msg.type == "error":
                problems.append(f"{current['path']}: console error: {msg.text[:200]}")

        page.on("console", on_console)
        page.on("pageerror", lambda err: problems.append(f"{current['path']}: uncaught error: {str(err)[:200]}"))
        await page.route("**/*", route)

    async def worker(context):
        page = await context.new_page()
        current = {"path": ""}
        await watch(page, current)

        def on_failed(request):
            if _is_local(request.url, base):
                problems.append(f"{current['path']}: request failed: {request.url} ({request.failure})")

        def on_response(response):
            if _is_local(response.url, base) and response.status >= 400:
                problems.append(f"{current['path']}: HTTP {response.status}: {response.url}")

        page.on("requestfailed", on_failed)
        page.on("response", on_response)
        while not queue.empty():
            path = queue.get_nowait()
            current["path"] = path
            await page.set_viewport_size(DESKTOP)
            response = await page.goto(f"{base}/{path}", wait_until="load")
            if response is None or not response.ok:
                problems.append(f"{path}: does not load ({response.status if response else 'no response'})")
                continue
            for problem in await page.evaluate(CHECK_PAGE_JS):
                if problem.startswith("svg-link "):
                    target = urlsplit(problem.split(" ", 1)[1]).path.lstrip("/")
                    if not (SITE / target).is_file():
                        problems.append(f"{path}: a link inside a graph leads nowhere: {target}")
                else:
                    problems.append(f"{path}: {problem}")
            math = await page.evaluate(MATH_JS)
            typeset[path] = math["typeset"]
            problems.extend(f"{path}: {p}" for p in math["problems"])
            await page.set_viewport_size(PHONE)
            problems.extend(f"{path} (phone, dark): {p}" for p in await page.evaluate(PHONE_DARK_JS))
        await page.close()

    async with async_playwright() as p:
        browser = await p.chromium.launch(executable_path=executable, args=LAUNCH_ARGS, headless=True)
        context = await browser.new_context(viewport=DESKTOP)
        # The landing page of the site root only redirects to intro.html.
        page = await context.new_page()
        await watch(page, {"path": "index.html"})
        await page.goto(f"{base}/index.html", wait_until="load")
        await page.wait_for_url(re.compile(r"/intro\.html$"), timeout=10_000)
        await page.close()
        await asyncio.gather(*(worker(context) for _ in range(TABS)))
        await context.close()
        await browser.close()
    return problems, typeset


def test_every_page_in_chromium_desktop_then_phone_in_dark_mode(site, server, linkchecker):
    """Each page loads with no uncaught error, no console error, no failing request and no request
    to another host; its formulas are typeset, with no raw TeX left; its images decode; it shows no
    traceback outside a cell meant to raise; resized to a phone in dark mode, it does not scroll
    sideways and its graphs sit on white."""
    executable = _chromium_or_skip()
    visited = pages()
    assert len(visited) > 5, visited
    problems, typeset = asyncio.run(_visit_all(executable, server, visited))
    assert problems == [], "\n".join(sorted(problems))
    # The first scenario explains the error with formulas: the math check has something to check.
    assert typeset["notebooks/01_backward_twice.html"] > 0, typeset


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
    repo = "through-the-graph/through-the-graph-a-second-time"
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
# every scenario page, and download as notebooks (one by one and as one archive).

SCENARIO_PAGES = sorted(f"notebooks/{p.stem}.html" for p in (ROOT / "notebooks").glob("*.ipynb"))

# Clicks each answer of the page's quiz in turn, and reports what the feedback says and links to.
QUIZ_JS = """
async () => {
  const quizzes = Array.from(document.querySelectorAll(".MultipleChoiceQn"));
  if (quizzes.length !== 1) return {error: quizzes.length + " quizzes on the page"};
  const buttons = Array.from(document.querySelectorAll(".MCButton"));
  if (buttons.length < 2) return {error: buttons.length + " answers to choose from"};
  const seen = [];
  for (const button of buttons) {
    button.click();
    await new Promise(r => setTimeout(r, 50));
    const fb = document.querySelector(".Feedback");
    const link = fb && fb.querySelector("a[href^='#']");
    seen.push({text: fb ? fb.textContent : "", correct: !!(fb && fb.classList.contains("correct")),
               target: link ? link.getAttribute("href").slice(1) : null,
               found: !!(link && document.getElementById(link.getAttribute("href").slice(1)))});
  }
  return {answers: seen};
}
"""


async def _quiz_and_copies(executable: str, base: str):
    """Problems with the quizzes; the student-copy links of each page; the files they lead to."""
    from playwright.async_api import async_playwright

    problems: list[str] = []
    hrefs: dict[str, list[str]] = {}
    bodies: dict[str, bytes] = {}

    async def route(r):
        await (r.continue_() if _is_local(r.request.url, base) else r.abort())

    async with async_playwright() as p:
        browser = await p.chromium.launch(executable_path=executable, args=LAUNCH_ARGS, headless=True)
        context = await browser.new_context(viewport=DESKTOP)
        await context.route("**/*", route)
        page = await context.new_page()
        for path in [*SCENARIO_PAGES, "chapters/workshop.html"]:
            await page.goto(f"{base}/{path}", wait_until="load")
            hrefs[path] = await page.evaluate(
                "() => Array.from(document.querySelectorAll('a[href*=\"student/\"], a[href*=\"colab.research\"]'))"
                ".map(a => a.href)")
            if path == "chapters/workshop.html":
                continue
            await page.wait_for_selector(".MCButton", timeout=10_000)
            result = await page.evaluate(QUIZ_JS)
            if "error" in result:
                problems.append(f"{path}: {result['error']}")
                continue
            answers = result["answers"]
            if sum(a["correct"] for a in answers) != 1:
                problems.append(f"{path}: {sum(a['correct'] for a in answers)} answers marked correct")
            for a in answers:
                if len(a["text"].strip()) < 20 or not a["found"]:
                    problems.append(f"{path}: feedback {a['text'][:60]!r} does not link to a cell of "
                                    f"the page (#{a['target']})")
        # Follow the student-copy links as a reader would, through the browser's own requests.
        for path, links in hrefs.items():
            for url in links:
                if not _is_local(url, base):
                    continue
                response = await context.request.get(url)
                if not response.ok:
                    problems.append(f"{path}: {url} answers HTTP {response.status}")
                    continue
                bodies[url] = await response.body()
        await context.close()
        await browser.close()
    return problems, hrefs, bodies


@pytest.fixture(scope="module")
def quiz_and_copies(site, server):
    executable = _chromium_or_skip()
    return asyncio.run(_quiz_and_copies(executable, server))


def test_every_scenario_page_has_a_quiz_whose_feedback_links_to_its_proof(quiz_and_copies):
    problems, _, _ = quiz_and_copies
    assert problems == [], "\n".join(problems)


def test_student_copies_are_linked_from_every_scenario_page_and_the_workshop_guide(quiz_and_copies):
    import io
    import zipfile

    import nbformat

    sys.path.insert(0, str(ROOT / "scripts"))
    from student import ARCHIVE, SELF_CHECK_TAG, SOLUTION_TAG, colab_url

    _, hrefs, bodies = quiz_and_copies
    names = [Path(p).stem + ".ipynb" for p in SCENARIO_PAGES]
    for path in [*SCENARIO_PAGES, "chapters/workshop.html"]:
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
                # every student copy, and the script notebook 21 runs beside them
                notebooks = [Path(n).name for n in z.namelist() if n.endswith(".ipynb")]
                assert sorted(notebooks) == sorted(names), url
                assert [n for n in z.namelist() if not n.endswith(".ipynb")] == ["student/scripts/train_rnn.py"]
    assert {Path(urlsplit(u).path).name for u in bodies} == {*names, ARCHIVE}
