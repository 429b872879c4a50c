"""The built site on a laptop (1366x768) and on a phone (390x844), as a new reader meets it.

Run after `make book` (`make test-site` runs it beside tests/book/test_site.py, whose server, site
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
from screens_js import (AXE_JS, CODE_LINES_JS, DECISION_START_JS, FIRST_SCREEN_JS, FOCUS_RING_JS,
                        MAGNIFIER_JS, NOT_FOUND_JS, PHONE_JS, RESULTS_JS, SEARCH_DONE_JS, SNIPPETS_JS,
                        VIEWER_JS, WEIGHT_JS)
from test_site import (ACTION_TIMEOUT_MS, NAVIGATION_TIMEOUT_MS, ROOT, _other_hosts, assets_loaded, pages,  # noqa: F401
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
    from nbtools import project_urls

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
        self.code: dict[str, list[str]] = {}
        self.errors: list[str] = []


async def _settle(page) -> None:
    """Until the page's stylesheets and scripts have loaded and its network has been quiet (fonts
    and pictures may come after the load event)."""
    await assets_loaded(page)
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
    code = [f"light: {p}" for p in await page.evaluate(CODE_LINES_JS)]
    await page.evaluate("() => { document.documentElement.dataset.theme = 'dark'; }")
    found.code[path] = code + [f"dark: {p}" for p in await page.evaluate(CODE_LINES_JS)]


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


def test_code_and_diffs_keep_their_lines_on_a_phone_and_scroll_with_a_cue(screens):
    """At 390 px, light and dark, on every page: no code block, diff or output wraps a line (a
    wrapped diff line loses its + or -, wrapped Python its indentation); one wider than the column
    scrolls sideways in its box with the formulas' cue, drawn in the block's own colour."""
    problems = [f"{path}: {p}" for path, found in sorted(screens.code.items()) for p in found]
    assert problems == [], "\n".join(problems)
    assert set(screens.code) == set(pages()), "pages not checked"


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

# The error's own words, and the page that names each in its title or headings.
SEARCHES = {
    "inplace": "notebooks/08_retain_step_backward.html",    # the error message's word; the title says "in-place"
    "in-place": "notebooks/08_retain_step_backward.html",   # its title: "... in-place error or wrong gradient"
    "retain_graph": "notebooks/08_retain_step_backward.html",
    "detach": "notebooks/10_detach.html",
    "hidden state": "notebooks/05_rnn_hidden_state.html",
    "accumulate": "notebooks/06_accumulating_loss.html",    # its heading: "The accumulating loss"
    "checkpoint": "notebooks/18_checkpoint.html",
    "zero_grad": "notebooks/07_zero_grad.html",
    "GAN": "notebooks/12_gan_discriminator.html",
    "DDP": "chapters/debugging.html",                        # its section "Inside a framework (... DDP)"
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
            found[query] = {"results": results, "fetched": pages_fetched,
                            "snippets": await page.evaluate(SNIPPETS_JS)}
            await page.close()
        await context.close()
        await browser.close()
    return found


@pytest.fixture(scope="module")
def searched(site, server) -> dict[str, dict]:
    return asyncio.run(_search(chromium_or_skip(), server, list(SEARCHES)))


def test_every_search_result_has_a_snippet_under_it(searched):
    """Each result of each of the error's words shows a snippet (its page's description) under its
    link, with no page downloaded to make it (the test above checks the downloads)."""
    problems = []
    for query in SEARCHES:
        snippets = searched[query]["snippets"]
        if not snippets:
            problems.append(f"{query!r}: no results")
        for s in snippets:
            if len(s["snippet"]) < 40 or not s["under"]:
                problems.append(f"{query!r}: {s['href']}: snippet {s['snippet']!r} (under its link: {s['under']})")
    assert problems == [], "\n".join(problems)


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


# ---------------------------------------------------------------------------------------------
# For a keyboard, and on a phone: every button of the page shows focus; a drawing opens in a
# viewer that fits the screen, reads, zooms and closes back to the page; the decision guide's
# drawing starts where its text says; the magnifier leaves the query readable. Laptop and phone
# (a phone's browser: a touch screen that honours the page's viewport), light and dark.

FOCUS_PAGES = ["intro.html", "notebooks/01_backward_twice.html"]   # every kind of button the site has
DRAWING_SIZES = {"laptop": LAPTOP, "phone": PHONE}
MIN_TEXT_PX = 9
TAB_LIMIT = 600          # more than any page's Tab stops: the walk ends where the order starts over


async def _context(browser, size: str):
    viewport = DRAWING_SIZES[size]
    context = await browser.new_context(viewport=viewport, is_mobile=size == "phone",
                                        has_touch=size == "phone")
    context.set_default_navigation_timeout(NAVIGATION_TIMEOUT_MS)
    context.set_default_timeout(ACTION_TIMEOUT_MS)
    return context


async def _open_page(context, base: str, path: str, scheme: str):
    page = await context.new_page()
    await page.route(_other_hosts(base), lambda route: route.abort())
    await page.emulate_media(color_scheme=scheme)
    await page.goto(f"{base}/{path}", wait_until="load")
    await assets_loaded(page)   # the theme's script sets data-theme when it runs
    await page.evaluate(f"() => {{ document.documentElement.dataset.theme = '{scheme}'; }}")
    await page.add_style_tag(content="*, *::before, *::after { transition: none !important; }")
    return page


async def _tab_through(page) -> list[dict]:
    """Every element the Tab key reaches, in order, once each, with its ring; then each toolbar
    menu opened with Enter and its first entry reached with Tab."""
    seen = []
    for _ in range(TAB_LIMIT):
        await page.keyboard.press("Tab")
        focused = await page.evaluate(FOCUS_RING_JS)
        if focused is None or (seen and focused["name"] == seen[0]["name"]):
            break
        seen.append(focused)
    menus = await page.query_selector_all(".bd-header-article .dropdown-toggle")
    for menu in menus:
        if not await menu.is_visible():
            continue
        await menu.focus()
        await page.keyboard.press("Enter")
        await page.keyboard.press("Tab")
        entry = await page.evaluate(FOCUS_RING_JS)
        if entry:
            seen.append(dict(entry, name="menu entry " + entry["name"]))
        await page.keyboard.press("Escape")
    return seen


async def _viewer(page, link, how: str) -> dict:
    """Opens a drawing by its link, measures the viewer, zooms in and out, and closes it `how`."""
    address = page.url
    # A whole graph behind a toggle (beside its focused drawing): the reader opens the toggle first.
    await link.evaluate("a => { for (let d = a.closest('details'); d; d = d.parentElement.closest('details')) d.open = true; }")
    await link.click()
    try:   # the viewer, or another page (the link followed: the bare SVG file)
        await page.wait_for_function("(address) => location.href !== address || "
                                     "!!document.querySelector('dialog.drawing-viewer[data-ready]')", arg=address)
    except Exception:  # noqa: BLE001 - the page navigated away while the function ran: checked below
        pass
    if page.url != address:
        led_to = page.url
        await page.go_back()
        return {"open": False, "ledTo": led_to}
    opened = await page.evaluate(VIEWER_JS)
    width = opened.get("width", 0)
    await page.click("dialog.drawing-viewer button[aria-label='Zoom in']")
    zoomed_in = (await page.evaluate(VIEWER_JS)).get("width", 0)
    await page.click("dialog.drawing-viewer button[aria-label='Zoom out']")
    await page.click("dialog.drawing-viewer button[aria-label='Zoom out']")
    zoomed_out = (await page.evaluate(VIEWER_JS)).get("width", 0)
    if how == "Close":
        await page.click("dialog.drawing-viewer button[aria-label='Close the drawing']")
    elif how == "Escape":
        await page.keyboard.press("Escape")
    else:
        await page.go_back()
    await page.wait_for_function("() => !document.querySelector('dialog.drawing-viewer').open")
    back = await page.evaluate("() => ({url: location.href, focus: !!document.activeElement.closest('a.open-full')})")
    return dict(opened, zoomsIn=zoomed_in > width + 1, zoomsOut=zoomed_out < zoomed_in - 1,
                closedBy=how, samePage=back["url"] == address, focusBack=back["focus"])


async def _frame(executable: str, base: str, drawing_pages: list[str]) -> dict:
    from playwright.async_api import async_playwright

    found = {"focus": {}, "viewer": {}, "decision": {}, "magnifier": {}}
    async with async_playwright() as p:
        browser = await p.chromium.launch(executable_path=executable, args=LAUNCH_ARGS, headless=True)
        for size in DRAWING_SIZES:
            context = await _context(browser, size)
            for scheme in ("light", "dark"):
                for path in FOCUS_PAGES:
                    page = await _open_page(context, base, path, scheme)
                    found["focus"][(size, scheme, path)] = await _tab_through(page)
                    await page.close()
                page = await _open_page(context, base, "chapters/which_fix.html", scheme)
                found["decision"][(size, scheme)] = await page.evaluate(DECISION_START_JS)
                await page.close()
                page = await _open_page(context, base, "search.html?q=inplace", scheme)
                await page.wait_for_function(SEARCH_DONE_JS)
                fields = await page.evaluate(MAGNIFIER_JS)
                await page.keyboard.press("Control+k")      # the search pop-up of every page
                await page.wait_for_function("() => document.querySelectorAll('form.bd-search').length > 0")
                found["magnifier"][(size, scheme)] = fields + await page.evaluate(MAGNIFIER_JS)
                await page.close()
                # Every drawing on a phone in light; the drawings of one page otherwise.
                for path in (drawing_pages if (size, scheme) == ("phone", "light") else drawing_pages[:1]):
                    page = await _open_page(context, base, path, scheme)
                    links = page.locator("a.open-full")
                    found["viewer"][(size, scheme, path)] = [
                        await _viewer(page, links.nth(i), ("Close", "Escape", "Back")[i % 3])
                        for i in range(await links.count())]
                    await page.close()
            await context.close()
        await browser.close()
    return found


@pytest.fixture(scope="module")
def frame(site, server) -> dict:
    drawing_pages = sorted(p.relative_to(site).as_posix() for p in [*site.glob("notebooks/*.html"),
                                                                     *site.glob("chapters/*.html")]
                           if re.search(r'<img [^>]*src="[^"]+\.svg"', p.read_text(errors="replace")))
    assert len(drawing_pages) >= 10, drawing_pages
    return asyncio.run(_frame(chromium_or_skip(), server, drawing_pages))


def test_every_button_shows_where_the_keyboard_is(frame):
    """Tab through a page and its toolbar's menus, laptop and phone, light and dark: every control
    that takes the focus shows a ring (an outline or a box-shadow ring of 2 px or more): the
    sidebar, launch, repository and download buttons, their menus' entries, and every other. (The
    quiz's answers are the quiz's own test.)"""
    problems, toolbar = [], set()
    for (size, scheme, path), seen in sorted(frame["focus"].items()):
        assert len(seen) > 5, (size, scheme, path, seen)
        for el in seen:
            if el["toolbar"]:
                toolbar.add(el["name"].split(" ")[0] if not el["name"].startswith("menu") else "menu entry")
            if el["shown"] and not el["ring"] and not el["quiz"]:
                problems.append(f"{path} ({size}, {scheme}): no focus ring on {el['name']}")
    assert problems == [], "\n".join(sorted(set(problems)))
    wanted = {"button.sidebar-toggle.primary-toggle.btn", "button.btn.dropdown-toggle", "menu entry"}
    assert wanted <= toolbar, f"toolbar controls not reached by Tab: {wanted - toolbar} (reached: {sorted(toolbar)})"


def test_a_drawing_opens_in_a_viewer_that_fits_reads_zooms_and_closes(frame):
    """A drawing's link opens it over the page: the viewer as wide as the screen and no wider (the
    page not zoomed out), the drawing's smallest label at least MIN_TEXT_PX, its - and + buttons
    zooming, on white in dark mode too, and a close control in sight; Close, Escape and the
    browser's Back each return to the same page with the focus on the drawing's link. Every
    drawing on a phone; one page's on a laptop and in dark mode."""
    problems, opened = [], 0
    for (size, scheme, path), viewers in sorted(frame["viewer"].items()):
        for i, v in enumerate(viewers):
            opened += 1
            where = f"{path} ({size}, {scheme}), drawing {i + 1}"
            if not v["open"]:
                problems.append(f"{where}: no viewer opened (the link led to {v.get('ledTo')})")
                continue
            if v["left"] < 0 or v["right"] > v["screen"] + 1 or v["pageWidth"] > v["screen"] + 1 or v["zoomedOut"]:
                problems.append(f"{where}: the viewer does not fit the screen ({v['left']:.0f}..{v['right']:.0f} "
                                f"of {v['screen']}, page {v['pageWidth']}, zoomed out: {v['zoomedOut']})")
            if v["px"] is None or v["px"] < MIN_TEXT_PX:
                problems.append(f"{where}: smallest label {v['px']} px")
            if not (v["fits"] or v["pans"]):
                problems.append(f"{where}: wider than the viewer and does not pan")
            if not (v["zoomsIn"] and v["zoomsOut"] and v["zoomButtons"] == 2):
                problems.append(f"{where}: does not zoom (in: {v['zoomsIn']}, out: {v['zoomsOut']})")
            if not v["close"]:
                problems.append(f"{where}: no close control in sight")
            if not (v["samePage"] and v["focusBack"]):
                problems.append(f"{where}: closed by {v['closedBy']}, not back on the page at the drawing")
            if v["paper"] != "rgb(255, 255, 255)":
                problems.append(f"{where}: the drawing is on {v['paper']}, not white")
    assert opened >= 40, f"only {opened} drawings opened"
    assert problems == [], "\n".join(problems)


def test_the_decision_guide_starts_where_its_text_says(frame):
    """The sentence that tells the reader where to start names a corner of the drawing, and the
    drawing's start box is there (laptop and phone, light and dark)."""
    for key, seen in sorted(frame["decision"].items()):
        assert "error" not in seen, (key, seen)
        sentence = seen["sentence"] or ""
        said = [side for side in ("top", "bottom", "left", "right") if re.search(rf"\b{side}\b", sentence)]
        assert said, f"{key}: the text does not say where the drawing starts: {sentence!r}"
        wrong = [side for side in said if not seen[side]]
        assert wrong == [], f"{key}: the text says {said}, the start box is not at the {wrong}: {seen}"


def test_the_magnifier_leaves_the_query_readable(frame):
    """In the search page's field and in the search pop-up, laptop and phone, light and dark: the
    magnifier ends before the query's first letter starts."""
    for key, fields in sorted(frame["magnifier"].items()):
        assert len(fields) >= 2, (key, fields)
        assert [f for f in fields if f["overlaps"]] == [], (key, fields)


# ---------------------------------------------------------------------------------------------
# The landing page's first paint waits for no file: how much sooner it paints than before is
# measured by `make bench` (scripts/first_paint.py, which says why that is not a timed test).

def _must_start_before_parsed(script: Path) -> bool:
    """A script that listens for DOMContentLoaded without asking document.readyState first: it
    must run before that event, so the page keeps it deferred (_ext/first_paint.py)."""
    text = script.read_text(errors="replace")
    return "DOMContentLoaded" in text and "readyState" not in text


def test_the_landing_page_html_asks_for_no_file_before_its_first_paint(site):
    """In the landing page's HTML: no stylesheet link outside <noscript> and no external script
    (they are attached by a script once the text has been painted, behind inline critical rules in
    the head), but deferred ones that must run before DOMContentLoaded. Before: 13 blocking
    stylesheets and 9 synchronous scripts; then 12 deferred scripts, fetched while the page was
    parsed, two of them run before its first frame and the rest while it was drawn."""
    from html.parser import HTMLParser

    class Page(HTMLParser):
        def __init__(self):
            super().__init__()
            self.depth_noscript, self.in_head, self.early, self.critical = 0, True, [], False

        def handle_starttag(self, tag, attrs):
            attrs = dict(attrs)
            if tag == "body":
                self.in_head = False
            if tag == "noscript":
                self.depth_noscript += 1
            elif tag == "style" and "data-critical-css" in attrs and self.in_head:
                self.critical = True
            elif self.depth_noscript:
                return
            elif tag == "link" and attrs.get("rel") == "stylesheet":
                self.early.append(f"stylesheet {attrs.get('href')}")
            elif tag == "script" and attrs.get("src"):
                file = site / attrs["src"].split("?")[0]
                if "defer" not in attrs or not file.is_file() or not _must_start_before_parsed(file):
                    self.early.append(f"script {attrs['src']}")

        def handle_endtag(self, tag):
            if tag == "noscript" and self.depth_noscript:
                self.depth_noscript -= 1

    page = Page()
    page.feed((site / LANDING).read_text())
    assert page.early == [], "the landing page's HTML asks for these before its first paint:\n" + "\n".join(page.early)
    assert page.critical, "no critical rules inline for the first screen"


# The generic font families, which a browser maps to faces it knows the system has. A named family
# is looked up, once per fresh renderer, by a request to the browser that the renderer waits for,
# and a name the system lacks costs that request for nothing.
GENERIC_FAMILIES = {"serif", "sans-serif", "monospace", "cursive", "fantasy", "system-ui"}


def test_the_landing_page_critical_rules_name_only_generic_font_families(site):
    """The inline rules that lay out the first screen name only generic font families. Before,
    the code's list was the theme's (ui-monospace, Cascadia Code, Source Code Pro, Menlo,
    Consolas, DejaVu Sans Mono): on a system with the last of them, Chromium asked the browser
    for each of the five others while it laid out the first frame, eight requests for font data
    before the landing page's first paint against three with the generic family
    (_ext/first_paint.py)."""
    html = (site / LANDING).read_text()
    critical = re.search(r"<style data-critical-css>(.*?)</style>", html, re.S)
    assert critical, "no critical rules inline for the first screen"
    named = [family.strip().strip("\"'") for value in re.findall(r"font-family:([^;}]*)", critical.group(1))
             for family in value.split(",")]
    assert named, "the critical rules set no font family"
    assert [f for f in named if f.lower() not in GENERIC_FAMILIES] == [], named


# What the landing page has asked for when its first paint with text is presented (its first
# paint's and first contentful paint's times, each file requested before then, and the deferred
# scripts of its HTML); then, once all it attaches has loaded, whether the critical rules are gone
# and how many sheets apply.
LOADING_ORDER_JS = """
async () => {
  const paint = () => Object.fromEntries(performance.getEntriesByType("paint").map(e => [e.name, e.startTime]));
  if (!("first-contentful-paint" in paint()))
    await new Promise(resolve => new PerformanceObserver(list => {
      if (list.getEntriesByName("first-contentful-paint").length) resolve(); }).observe({type: "paint", buffered: true}));
  const fcp = paint()["first-contentful-paint"];
  const early = performance.getEntriesByType("resource").filter(r => r.startTime < fcp).map(r => new URL(r.name).pathname);
  // The browser's own request of the page's icon (made after the load event, which a page whose
  // files are attached after its first paint can reach before it) and deferred scripts.
  const deferred = Array.from(document.querySelectorAll("script[defer][src], link[rel~=icon]"))
    .map(e => new URL(e.src || e.href).pathname);
  return {paint: paint(), early, deferred,
          domContentLoaded: performance.getEntriesByType("navigation")[0].domContentLoadedEventStart};
}
"""
LOADED_JS = """() => {
  const requested = ending => performance.getEntriesByType("resource").filter(r => new URL(r.name).pathname.endsWith(ending)).length;
  return {sheets: requested(".css"), scripts: requested(".js"),
          critical: document.documentElement.hasAttribute("data-css-loading"), applied: document.styleSheets.length,
          theme: typeof bootstrap !== "undefined" && typeof Documentation !== "undefined"};
}"""


async def _loading_order(executable: str, base: str) -> dict[str, dict]:
    from playwright.async_api import async_playwright

    found = {}
    async with async_playwright() as p:
        browser = await p.chromium.launch(executable_path=executable, args=LAUNCH_ARGS, headless=True)
        for size, viewport in (("laptop", LAPTOP), ("phone", PHONE)):
            # A fresh context: nothing cached, as on a reader's first visit.
            context = await browser.new_context(viewport=viewport, is_mobile=size == "phone",
                                                has_touch=size == "phone")
            page = await context.new_page()
            await page.goto(f"{base}/{LANDING}", wait_until="load")
            found[size] = await page.evaluate(LOADING_ORDER_JS)
            await assets_loaded(page)
            found[size].update(await page.evaluate(LOADED_JS))
            await context.close()
        await browser.close()
    return found


def test_the_landing_page_asks_for_nothing_before_its_text_is_painted(site, server):
    """Loaded afresh on a laptop and a phone: no stylesheet and no script is requested before the
    first paint that shows text (first contentful paint) has been presented, but the deferred
    scripts that must run before DOMContentLoaded (and the icon, which the browser may ask for
    then); once what the page attaches has loaded, every
    stylesheet applies, the theme's scripts have run and the critical rules are gone. Before, the
    page's twelve deferred scripts were requested while it was parsed (and the stylesheets as well
    where it was parsed before its first paint)."""
    for size, f in asyncio.run(_loading_order(chromium_or_skip(), server)).items():
        assert set(f["early"]) <= set(f["deferred"]), (size, f)
        assert f["sheets"] >= 13 and f["scripts"] >= 10, (size, f)
        assert not f["critical"] and f["applied"] >= 13 and f["theme"], (size, f)
