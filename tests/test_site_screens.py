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
- The site root's index.html has the landing page's title and description; the 404 page works
  when the site is served from its root; each scenario holds the exercise of its own number.

One browser run visits every page, three tabs at a time; the tests below read what it found.
"""

from __future__ import annotations

import asyncio
import re
from pathlib import Path

import pytest

from browser import LAUNCH_ARGS, chromium_or_skip
from screens_js import (AXE_JS, FIRST_SCREEN_JS, NOT_FOUND_JS, PHONE_JS, RESULTS_JS, SEARCH_DONE_JS,
                        WEIGHT_JS)
from test_site import (ACTION_TIMEOUT_MS, NAVIGATION_TIMEOUT_MS, ROOT, _other_hosts, pages,  # noqa: F401
                       server, site)

AXE = ROOT / "tests" / "vendor" / "axe-core" / "axe.min.js"
LAPTOP = {"width": 1366, "height": 768}
PHONE = {"width": 390, "height": 844}
TABS = 3

# Weight budgets, in bytes as the browser receives them uncompressed (the landing page is what a
# reader from a search result meets first, often on a phone).
LANDING = "intro.html"
LANDING_BUDGET = 1_000_000
PAGE_BUDGET = 1_500_000
# Characters of code in one inline script: a quiz's own questions fit; a library does not. A data
# block (<script type="application/json">, the replay's frames) is the page's content, not code
# copied into every page: its bytes count in the page's weight instead.
INLINE_SCRIPT_LIMIT = 10_000


def install_line() -> str:
    """The install line of the notebooks' set-up cell: the library from the repository's address."""
    from setup_cell import project_urls

    return f'pip install "autograd_lens @ git+{project_urls()["Repository"]}"'


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

def test_the_site_root_index_has_its_own_title_and_description_and_leads_to_the_landing_page(site):
    """The site's address, as people share it: a title and a description of its own (its entry
    in pages.yml, not the landing page's, which would make two pages with one description), its
    own address as canonical, and the redirect to the landing page."""
    from html import unescape

    from page_meta import SITE_ROOT, load_pages
    from test_site import PUBLISHED

    html = (site / "index.html").read_text()
    entries = load_pages()
    assert 'http-equiv="Refresh" content="0; url=intro.html"' in html, html[:500]
    description = re.search(r'<meta name="description" content="([^"]*)"', html)
    assert description, "index.html has no description"
    assert unescape(description.group(1)) == entries[SITE_ROOT]["description"], description.group(1)
    assert entries[SITE_ROOT]["description"] != entries["intro"]["description"]
    assert f"<title>{entries[SITE_ROOT]['title']}</title>" in unescape(html), html[:500]
    assert f'<link rel="canonical" href="{PUBLISHED}" />' in html, html[:500]


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
