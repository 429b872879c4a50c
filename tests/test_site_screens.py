"""The built site on a laptop (1366x768) and on a phone (390x844), as a new reader meets it.

Run after `make book` (`make test-site` runs it beside tests/test_site.py, whose server, site
fixture and list of pages it reuses; BOOK_SITE=/path/to/html checks another copy of a built site).

- The landing page's first screen, on both sizes: the error, what it means, the three most common
  causes with their fixes as code, and the command with the library's install line.
- On a phone nothing is hidden without a cue: no table, code block, output or picture runs past
  the column, and nothing scrolls sideways inside its own box.
- axe-core (vendored in tests/vendor/axe-core, injected by the test, never loaded by the site) on
  every page in both colour schemes: no critical and no serious violation.
- Each page's weight (every byte it loads, uncompressed) within its budget.
- Search: the page whose title names the query comes first, and no result page is downloaded.
- The exercises are numbered in reading order, each page's exercise by the page's own number.

One browser run visits every page, three tabs at a time; the tests below read what it found.
"""

from __future__ import annotations

import asyncio
import json
import re
import statistics
from pathlib import Path

import pytest

from browser import LAUNCH_ARGS, chromium_or_skip
from test_site import (ACTION_TIMEOUT_MS, NAVIGATION_TIMEOUT_MS, ROOT, SITE, _other_hosts,  # noqa: F401
                       pages, server, site)

AXE = ROOT / "tests" / "vendor" / "axe-core" / "axe.min.js"
LAPTOP = {"width": 1366, "height": 768}
PHONE = {"width": 390, "height": 844}
TABS = 3

# Weight budgets, in bytes as the browser receives them uncompressed (the landing page is what a
# reader from a search result meets first, often on a phone).
LANDING = "intro.html"
LANDING_BUDGET = 1_000_000
PAGE_BUDGET = 1_500_000
INLINE_SCRIPT_LIMIT = 10_000  # characters: a quiz's own questions fit; a library does not


def install_line() -> str:
    """The install line of the notebooks' set-up cell: the library from the repository's address."""
    from setup_cell import project_urls

    return f'pip install "autograd_lens @ git+{project_urls()["Repository"]}"'


# The landing page's first screen: what of the arrival is visible without scrolling, whole, and
# not cut at the right edge (a box that scrolls sideways hides the rest of its line).
FIRST_SCREEN_JS = """
(install) => {
  const vw = window.innerWidth, vh = window.innerHeight;
  const whole = el => {
    if (!el) return false;
    const r = el.getBoundingClientRect();
    return r.height > 0 && r.top >= 0 && r.bottom <= vh && r.left >= 0 && r.right <= vw
           && el.scrollWidth <= el.clientWidth + 1;
  };
  const article = document.querySelector("article.bd-article") || document.body;
  const h1 = article.querySelector("h1");
  const error = Array.from(article.querySelectorAll("pre")).find(
      p => p.textContent.includes("RuntimeError: Trying to backward through the graph a second time"));
  const errorUnderHeading = !!(h1 && error && h1.nextElementSibling && h1.nextElementSibling.contains(error));
  const meaning = Array.from(article.querySelectorAll("p")).find(p => p.textContent.startsWith("What it means"));
  const sentences = meaning ? meaning.textContent.replace(/\\([^)]*\\)/g, "").split(/[.!?](\\s|$)/)
                                .filter(s => s && s.trim().length > 3).length - 1 : 0;
  const list = article.querySelector("ul");
  const fixes = list ? Array.from(list.children).map(li => ({
      text: li.textContent.trim().slice(0, 60), code: li.querySelectorAll("code").length > 0,
      seen: whole(li)})) : [];
  const command = Array.from(article.querySelectorAll("pre")).find(
      p => p.textContent.includes(install) && p.textContent.includes("python -m autograd_lens"));
  return {
    heading: h1 ? h1.textContent.replace(/#$/, "").trim() : null,
    headingSeen: whole(h1),
    errorSeen: whole(error),
    errorUnderHeading: errorUnderHeading || !!(h1 && h1.textContent.includes("backward through the graph a second time")
                                               && error && whole(error)),
    meaningSeen: whole(meaning),
    meaningSentences: sentences,
    fixes: fixes,
    installSeen: whole(command),
    installFound: !!command,
  };
}
"""

# On a phone: everything of the article fits its column, and nothing scrolls sideways in its own box.
PHONE_JS = """
() => {
  const SLACK = 1;
  const problems = [];
  const article = document.querySelector("article.bd-article");
  if (!article) return problems;
  const edge = article.getBoundingClientRect().right + 1;
  const name = el => el.nodeName.toLowerCase() + (el.id ? "#" + el.id : "") +
    (el.className && typeof el.className === "string" ? "." + el.className.trim().split(/\\s+/).slice(0, 2).join(".") : "");
  const what = el => (el.textContent || "").trim().replace(/\\s+/g, " ").slice(0, 50);
  for (const table of article.querySelectorAll("table")) {
    const r = table.getBoundingClientRect();
    if (r.right > edge || table.scrollWidth > table.clientWidth + 1)
      problems.push("a table wider than the column (" + Math.round(r.width) + " px): " + what(table));
    for (const cell of table.querySelectorAll("td, th")) {
      const head = cell.closest("thead");
      if (head && head.getBoundingClientRect().width <= 1) continue;  // said by each cell instead
      const c = cell.getBoundingClientRect();
      if (c.width > 0 && (c.right > edge || cell.scrollWidth > cell.clientWidth + 1)) {
        problems.push("a table cell cut off: " + what(cell));
        break;
      }
    }
  }
  // A formula's box (span.math) is cut when the formula in it is (MathJax's copy for screen readers,
  // clipped to nothing, would count in the box's scroll width).
  const cut = (el, r) => {
    const formula = el.matches(".math") ? el.querySelector("math, mjx-math") : null;
    return formula ? formula.getBoundingClientRect().right > r.right + 1 : el.scrollWidth > el.clientWidth + SLACK;
  };
  // The cue of a box that scrolls: shadows drawn by gradients that stay put (scroll) under covers
  // that move with the content (local), so a shadow shows on each side where something is hidden.
  const cued = style => /gradient/.test(style.backgroundImage) && /local/.test(style.backgroundAttachment)
                        && /scroll/.test(style.backgroundAttachment);
  for (const el of article.querySelectorAll("*")) {
    if (el.closest("table, mjx-container, math, svg")) continue;
    const r = el.getBoundingClientRect();
    if (r.width === 0 || r.height === 0) continue;
    const style = getComputedStyle(el);
    if (style.visibility === "hidden" || style.position === "fixed") continue;
    // overflow does not apply to an inline box (a formula in a sentence, a word of code)
    const boxed = style.display !== "inline";
    if (r.right > edge + 1) problems.push("past the column's right edge: " + name(el) + " " + what(el));
    else if (boxed && ["auto", "scroll", "hidden", "clip"].includes(style.overflowX) && cut(el, r)
             && !(["auto", "scroll"].includes(style.overflowX) && cued(style)))
      problems.push("cut off, or scrolls sideways without a cue: " + name(el) + " " + what(el));
  }
  return problems;
}
"""

# Every byte the page loaded, uncompressed (Resource Timing's decoded body sizes: the page itself,
# its scripts, styles, fonts, pictures and the SVG objects), once the network has been quiet.
# Also what each page loads that it may not use: MathJax (formulas are MathML, written at build
# time), the search index, and the longest inline script (a library copied into the page).
WEIGHT_JS = r"""
() => {
  const entries = [...performance.getEntriesByType("navigation"), ...performance.getEntriesByType("resource")];
  const files = entries.map(e => [e.name, e.decodedBodySize]).sort((a, b) => b[1] - a[1]);
  const loads = pattern => files.some(f => pattern.test(new URL(f[0]).pathname));
  return {bytes: files.reduce((sum, f) => sum + f[1], 0), requests: files.length, biggest: files.slice(0, 3),
          formulas: document.querySelectorAll(".math").length, mathjax: loads(/\/mathjax\//),
          searchIndex: loads(/\/searchindex\.js$/),
          inlineScript: Math.max(0, ...Array.from(document.querySelectorAll("script:not([src])")).map(s => s.text.length))};
}
"""

# axe-core's violations of the page, impact "critical" and "serious" only, with where they are.
# The code blocks' thousands of highlighted tokens made axe take seconds a page, and their colours
# repeat: the rules run on the page without its code, then the colour-contrast rule on one token of
# each kind (its class and colour, in its kind of block): every colour of code on every kind of
# block is checked, once a page.
AXE_JS = """
async (rules) => {
  const only = rules ? {runOnly: {type: "rule", values: rules}} : {};
  const seen = new Set(), tokens = [];
  for (const token of document.querySelectorAll("div.highlight pre span")) {
    if (!token.textContent.trim()) continue;
    const block = token.closest("div.cell_output, div.cell_input, div[class*='highlight-']");
    const kind = token.className + "|" + getComputedStyle(token).color + "|" + (block ? block.className : "");
    if (!seen.has(kind)) { seen.add(kind); tokens.push(token); }
  }
  const page = await axe.run({exclude: [["div.highlight pre"]]}, {resultTypes: ["violations"], ...only});
  const code = tokens.length ? await axe.run({include: tokens},
      {resultTypes: ["violations"], runOnly: {type: "rule", values: ["color-contrast"]}}) : {violations: []};
  return [...page.violations, ...code.violations]
    .filter(v => v.impact === "critical" || v.impact === "serious").map(v => ({
      rule: v.id, impact: v.impact, help: v.help,
      targets: v.nodes.map(n => n.target.join(" ")).slice(0, 50),
    }));
}
"""
# The dark scheme changes colours only (pydata-sphinx-theme's data-theme="dark"): in it axe runs
# the rules that read colours; every other rule reads the same page in both schemes.
COLOUR_RULES = ["color-contrast", "link-in-text-block"]

# Rule and element that axe reports but that the book cannot fix in the theme's templates or CSS,
# each with the reason. Keyed by (rule, a CSS selector that axe reports as the target).
AXE_EXEMPT: dict[tuple[str, str], str] = {}


class Found:
    """What the browser run found, per page."""

    def __init__(self):
        self.phone: dict[str, list[str]] = {}
        self.weight: dict[str, dict] = {}
        self.axe: dict[str, list[dict]] = {}
        self.first_screen: dict[str, dict] = {}
        self.errors: list[str] = []


async def _settle(page) -> None:
    """Until the page's network has been quiet (fonts and pictures may come after the load event)."""
    try:
        await page.wait_for_load_state("networkidle", timeout=ACTION_TIMEOUT_MS)
    except Exception:  # a bound, not a wait: the weight is then what had arrived
        pass


async def _check(page, path: str, axe_source: str, found: Found) -> None:
    await _settle(page)
    found.weight[path] = await page.evaluate(WEIGHT_JS)
    await page.add_script_tag(content=axe_source)
    violations = [dict(v, scheme="light") for v in await page.evaluate(AXE_JS, None)]
    # The theme's colours change with a transition: switched off, the dark colours are there at once.
    await page.add_style_tag(content="*, *::before, *::after { transition: none !important; }")
    await page.emulate_media(color_scheme="dark")
    await page.evaluate("() => { document.documentElement.dataset.theme = 'dark'; }")
    violations += [dict(v, scheme="dark") for v in await page.evaluate(AXE_JS, COLOUR_RULES)]
    found.axe[path] = violations
    await page.evaluate("() => { document.documentElement.dataset.theme = 'light'; }")
    if path == LANDING:
        found.first_screen["laptop"] = await page.evaluate(FIRST_SCREEN_JS, install_line())
    await page.set_viewport_size(PHONE)
    await page.evaluate("() => window.scrollTo(0, 0)")
    if path == LANDING:
        found.first_screen["phone"] = await page.evaluate(FIRST_SCREEN_JS, install_line())
    found.phone[path] = await page.evaluate(PHONE_JS)


async def _browse(executable: str, base: str, paths: list[str]) -> Found:
    from playwright.async_api import async_playwright

    found, axe_source = Found(), AXE.read_text()
    queue: asyncio.Queue[str] = asyncio.Queue()
    for path in paths:
        queue.put_nowait(path)

    async def worker(context):
        while not queue.empty():
            path = queue.get_nowait()
            page = await context.new_page()
            # Requests to other hosts are stopped (test_site.py reports them); routing also turns
            # the browser's cache off, so each page's weight counts every file it needs.
            await page.route(_other_hosts(base), lambda route: route.abort())
            try:
                await page.goto(f"{base}/{path}", wait_until="load")
                await _check(page, path, axe_source, found)
            except Exception as error:  # noqa: BLE001 - reported by the tests below, with the page
                found.errors.append(f"{path}: {str(error)[:300]}")
            finally:
                await page.close()

    async with async_playwright() as p:
        browser = await p.chromium.launch(executable_path=executable, args=LAUNCH_ARGS, headless=True)
        context = await browser.new_context(viewport=LAPTOP)
        context.set_default_navigation_timeout(NAVIGATION_TIMEOUT_MS)
        context.set_default_timeout(ACTION_TIMEOUT_MS)
        await asyncio.gather(*(worker(context) for _ in range(TABS)))
        await context.close()
        await browser.close()
    return found


@pytest.fixture(scope="module")
def screens(site, server) -> Found:
    """Every page of the site, on a laptop then on a phone, in one browser run."""
    executable = chromium_or_skip()
    visited = pages()
    assert LANDING in visited, visited
    found = asyncio.run(_browse(executable, server, visited))
    assert found.errors == [], "\n".join(found.errors)
    return found


def test_the_landing_page_first_screen_answers_on_a_laptop_and_a_phone(screens):
    """Without scrolling, on 1366x768 and on 390x844, whole and not cut at the right edge: the
    heading and the error right under it, what it means in two sentences, the three most common
    causes each with its fix as code, and the command with the install line of the notebooks'
    set-up cell."""
    assert set(screens.first_screen) == {"laptop", "phone"}
    for size, seen in screens.first_screen.items():
        assert seen["installFound"], f"the landing page has no block with `{install_line()}` and the command"
        assert seen["headingSeen"] and seen["errorSeen"] and seen["errorUnderHeading"], (size, seen)
        assert "backward through the graph a second time" in seen["heading"], (size, seen["heading"])
        assert seen["meaningSeen"] and seen["meaningSentences"] == 2, (size, seen)
        assert len(seen["fixes"]) == 3 and all(f["code"] and f["seen"] for f in seen["fixes"]), (size, seen["fixes"])
        assert seen["installSeen"], f"{size}: the install line and the command are not on the first screen"


def test_nothing_is_hidden_on_a_phone(screens):
    """At 390 px every table, code block, output, formula and picture fits the column (wide tables
    stack their rows), and nothing scrolls sideways in its own box without a visible cue."""
    problems = [f"{path}: {p}" for path, found in sorted(screens.phone.items()) for p in found]
    assert problems == [], "\n".join(problems)


def test_every_page_loads_what_it_uses_within_its_budget(screens):
    """Every page within its budget (every byte it loads, uncompressed); no MathJax (formulas are
    MathML), the search index only on the search page, and no library copied into a page (the
    quizzes' library is one file of its own)."""
    problems = []
    for path, w in sorted(screens.weight.items()):
        budget = LANDING_BUDGET if path == LANDING else PAGE_BUDGET
        if w["bytes"] > budget:
            biggest = ", ".join(f"{Path(name).name} {size:,}" for name, size in w["biggest"])
            problems.append(f"{path}: {w['bytes']:,} bytes in {w['requests']} files, over its budget of "
                            f"{budget:,} (the biggest: {biggest})")
        if w["mathjax"]:
            problems.append(f"{path}: MathJax loaded (for {w['formulas']} formulas)")
        if w["searchIndex"] != (path == "search.html"):
            problems.append(f"{path}: the search index {'loaded' if w['searchIndex'] else 'not loaded'}")
        if w["inlineScript"] > INLINE_SCRIPT_LIMIT:
            problems.append(f"{path}: an inline script of {w['inlineScript']:,} characters")
    assert problems == [], "\n".join(problems)
    assert screens.weight[LANDING]["bytes"] > 0, "the weight was not measured"


def test_axe_finds_nothing_critical_or_serious_in_either_colour_scheme(screens):
    """axe-core on every page, light (every rule) and dark (the colour rules): no violation of
    impact critical or serious, except the ones named in AXE_EXEMPT with their reason."""
    problems = []
    for path, violations in sorted(screens.axe.items()):
        for v in violations:
            targets = [t for t in v["targets"] if (v["rule"], t) not in AXE_EXEMPT]
            if targets:
                problems.append(f"{path} ({v['scheme']}): {v['impact']} {v['rule']} ({v['help']}): "
                                + "; ".join(targets[:5]))
    assert problems == [], "\n".join(problems)
    assert set(screens.axe) == set(pages()), "pages not checked"


# ---------------------------------------------------------------------------------------------
# Search, in the browser: the page whose title names the query comes first, and searching fetches
# nothing beyond the search page and its index (Sphinx would download each result's page for a
# snippet).

SEARCHES = {
    "detach": "notebooks/10_detach.html",
    "hidden state": "notebooks/05_rnn_hidden_state.html",
    "retain_graph": "notebooks/08_retain_step_backward.html",
    "in-place": "notebooks/08_retain_step_backward.html",   # its title: "... in-place error or stale gradient"
    "GAN": "notebooks/12_gan_discriminator.html",
    "checkpoint": "notebooks/18_checkpoint.html",
    "zero_grad": "notebooks/07_zero_grad.html",
}
SEARCH_DONE_JS = """
() => { const s = document.querySelector("#search-results .search-summary");
        return !!s && /finished|did not match/i.test(s.textContent); }
"""
RESULTS_JS = """
() => Array.from(document.querySelectorAll("#search-results ul.search li > a")).map(a => a.href)
"""


async def _search(executable: str, base: str, queries: list[str]) -> dict[str, dict]:
    from urllib.parse import quote

    from playwright.async_api import async_playwright

    found: dict[str, dict] = {}
    async with async_playwright() as p:
        browser = await p.chromium.launch(executable_path=executable, args=LAUNCH_ARGS, headless=True)
        context = await browser.new_context(viewport=LAPTOP)
        context.set_default_navigation_timeout(NAVIGATION_TIMEOUT_MS)
        context.set_default_timeout(ACTION_TIMEOUT_MS)
        for query in queries:
            page = await context.new_page()
            await page.route(_other_hosts(base), lambda route: route.abort())
            fetched: list[str] = []
            page.on("request", lambda request, fetched=fetched: fetched.append(request.url))
            await page.goto(f"{base}/search.html?q={quote(query)}", wait_until="load")
            await page.wait_for_function(SEARCH_DONE_JS)
            await _settle(page)
            results = [url.removeprefix(base + "/").split("#")[0] for url in await page.evaluate(RESULTS_JS)]
            pages_fetched = [u.removeprefix(base + "/") for u in fetched
                             if re.search(r"\.html$|/_sources/", u.split("?")[0]) and "/search.html" not in u]
            found[query] = {"results": results, "fetched": pages_fetched}
            await page.close()
        await context.close()
        await browser.close()
    return found


@pytest.fixture(scope="module")
def searched(site, server) -> dict[str, dict]:
    return asyncio.run(_search(chromium_or_skip(), server, list(SEARCHES)))


def test_search_puts_the_page_that_the_query_names_first_and_downloads_no_page(searched):
    problems = []
    for query, page in SEARCHES.items():
        results, fetched = searched[query]["results"], searched[query]["fetched"]
        if not results or results[0] != page:
            where = results.index(page) + 1 if page in results else "not found"
            problems.append(f"{query!r}: first {results[:3]}, and {page} is {where}")
        if fetched:
            problems.append(f"{query!r}: searching downloaded {len(fetched)} pages: {fetched[:3]}")
    assert problems == [], "\n".join(problems)


# ---------------------------------------------------------------------------------------------
# The entrances, from the built files and the browser.

def test_the_site_root_index_has_the_landing_page_title_and_description(site):
    from page_meta import load_pages

    html = (site / "index.html").read_text()
    entry = load_pages()["intro"]
    assert 'http-equiv="Refresh" content="0; url=intro.html"' in html, html[:500]
    description = re.search(r'<meta name="description" content="([^"]*)"', html)
    assert description, "index.html has no description"
    assert description.group(1).replace("&#x27;", "'") == entry["description"], description.group(1)
    assert "<title>" in html and 'rel="canonical"' in html, html[:500]


NOT_FOUND_JS = """
() => ({
  title: document.title,
  styles: Array.from(document.querySelectorAll("link[rel=stylesheet]")).map(l => [l.href, !!l.sheet]),
  themed: getComputedStyle(document.body).fontFamily,
  links: Array.from(document.querySelectorAll("article a[href], main a[href]")).map(a => a.href),
})
"""


async def _not_found_from_root(executable: str, base: str) -> tuple[dict, list[str]]:
    from playwright.async_api import async_playwright

    failed: list[str] = []
    async with async_playwright() as p:
        browser = await p.chromium.launch(executable_path=executable, args=LAUNCH_ARGS, headless=True)
        page = await browser.new_page(viewport=LAPTOP)
        await page.route(_other_hosts(base), lambda route: route.abort())
        page.on("response", lambda r: failed.append(f"HTTP {r.status}: {r.url}")
                if r.status >= 400 and not r.request.is_navigation_request() else None)
        page.on("requestfailed", lambda r: failed.append(f"failed: {r.url}"))
        response = await page.goto(f"{base}/no-such-folder/no-such-page.html", wait_until="load")
        assert response.status == 404
        await _settle(page)
        seen = await page.evaluate(NOT_FOUND_JS)
        await browser.close()
    return seen, failed


def test_the_404_page_works_when_the_site_is_served_from_its_root(site):
    """As the README serves it (the built folder at the root of a local server): the 404 page
    loads its styles and scripts, and its links lead into the book at that root."""
    from test_site import serve

    with serve(site, "/") as base:
        seen, failed = asyncio.run(_not_found_from_root(chromium_or_skip(), base))
    assert seen["title"].startswith("Page not found"), seen["title"]
    assert failed == [], failed
    assert seen["styles"] and all(loaded for _, loaded in seen["styles"]), seen["styles"]
    assert f"{base}/intro.html" in seen["links"], seen["links"]


def test_each_scenario_holds_the_exercise_of_its_own_number(site):
    """Exercises are numbered in reading order (_toc.yml), and page NN holds Exercise NN."""
    problems = []
    for page in sorted((site / "notebooks").glob("[0-9][0-9]_*.html")):
        numbers = sorted(set(re.findall(r"Exercise (\d+)", page.read_text())))
        if numbers != [str(int(page.name[:2]))]:
            problems.append(f"{page.name}: Exercise {', '.join(numbers) or 'none'}")
    assert problems == [], "\n".join(problems)
