"""The predict-then-run quizzes by keyboard alone, on the built site (run after `make book`).

On a laptop and on a phone, in the light and in the dark scheme, one scenario page each: from the
question, Tab reaches every option in order; arrow keys never answer; the focused option shows a
ring (at least 2 px, contrasting 3:1 with the quiz around it); Enter answers, and so does Space,
each with the feedback of the option pressed (right or wrong as the quiz file says). The quiz code
is _static/quiz.js. It reuses tests/book/test_site.py's server and site fixtures; without Chromium it is
skipped, except in CI, where it fails.
"""

from __future__ import annotations

import asyncio

import pytest

from browser import LAUNCH_ARGS, chromium_or_skip
from test_site import (ACTION_TIMEOUT_MS, NAVIGATION_TIMEOUT_MS, SCENARIO_PAGES, _other_hosts,  # noqa: F401
                       assets_loaded, server, site)

LAPTOP = {"width": 1366, "height": 768}
PHONE = {"width": 390, "height": 844}
# (viewport, scheme, page): four pages, so that four different quizzes are tried.
RUNS = [("laptop", "light", SCENARIO_PAGES[4]), ("laptop", "dark", SCENARIO_PAGES[11]),
        ("phone", "light", SCENARIO_PAGES[7]), ("phone", "dark", SCENARIO_PAGES[21])]

# The quiz's state: which element has the focus (the index of its option, or null), the feedback,
# which options are marked answered, and the focused option's ring against the quiz's background.
STATE_JS = r"""
() => {
  const options = Array.from(document.querySelectorAll(".MCButton"));
  const active = document.activeElement;
  const focused = options.findIndex(o => o.contains(active) && active !== document.body);
  const feedback = document.querySelector(".Quiz .Feedback");
  const rgb = c => (c.match(/[\d.]+/g) || []).map(Number);
  const luminance = ([r, g, b]) => {
    const f = v => { v /= 255; return v <= 0.03928 ? v / 12.92 : Math.pow((v + 0.055) / 1.055, 2.4); };
    return 0.2126 * f(r) + 0.7152 * f(g) + 0.0722 * f(b);
  };
  const background = el => {
    for (let e = el && el.parentElement; e; e = e.parentElement) {
      const c = rgb(getComputedStyle(e).backgroundColor);
      if (c.length === 3 || (c.length === 4 && c[3] > 0.5)) return c.slice(0, 3);
    }
    return [255, 255, 255];
  };
  let ring = null;
  if (focused >= 0) {
    const style = getComputedStyle(options[focused]);
    const [a, b] = [luminance(rgb(style.outlineColor)), luminance(background(options[focused]))];
    ring = {style: style.outlineStyle, width: parseFloat(style.outlineWidth),
            contrast: (Math.max(a, b) + 0.05) / (Math.min(a, b) + 0.05)};
  }
  return {count: options.length, focused, ring,
          feedback: feedback ? feedback.textContent.trim() : "",
          verdict: feedback ? (feedback.classList.contains("correct") ? "right"
                               : feedback.classList.contains("incorrect") ? "wrong" : null) : null,
          marked: options.filter(o => /correctButton|incorrectButton/.test(o.className)).length,
          correct: options.map(o => o.dataset.correct === "true")};
}
"""


async def _try(context, base: str, viewport: str, scheme: str, path: str) -> list[str]:
    page = await context.new_page()
    await page.route(_other_hosts(base), lambda route: route.abort())
    await page.set_viewport_size(LAPTOP if viewport == "laptop" else PHONE)
    await page.emulate_media(color_scheme=scheme)
    await page.goto(f"{base}/{path}", timeout=NAVIGATION_TIMEOUT_MS)
    await assets_loaded(page)   # the theme's script sets data-theme when it runs, book.css the ring
    await page.evaluate("s => { document.documentElement.dataset.theme = s; }", scheme)
    await page.wait_for_selector(".MCButton", timeout=ACTION_TIMEOUT_MS)
    where = f"{path} ({viewport}, {scheme})"
    problems = []
    async def from_the_question(tabs: int) -> dict:
        """Focus the question (as a reader who tabbed through the page to it), press Tab ``tabs`` times."""
        await page.evaluate("""() => { const q = document.querySelector('.Quiz [id^=quizQn]');
                                       q.tabIndex = -1; q.focus(); }""")
        for _ in range(tabs):
            await page.keyboard.press("Tab")
        return await page.evaluate(STATE_JS)

    count = (await page.evaluate(STATE_JS))["count"]
    for index in range(count):
        state = await from_the_question(index + 1)
        if state["focused"] != index:
            problems.append(f"{where}: Tab {index + 1} from the question reaches option {state['focused']}, not {index}")
            continue
        ring = state["ring"]
        if not ring or ring["style"] == "none" or ring["width"] < 2 or ring["contrast"] < 3:
            problems.append(f"{where}: option {index} has the focus but no visible ring: {ring}")
    await from_the_question(1)
    for key in ("ArrowDown", "ArrowRight", "ArrowUp", "ArrowLeft", "ArrowDown"):
        await page.keyboard.press(key)
    state = await page.evaluate(STATE_JS)
    if state["feedback"] or state["marked"]:
        problems.append(f"{where}: arrow keys answered the quiz: {state['feedback'][:80]!r}")
    for key, option in (("Enter", 0), ("Space", count - 1)):
        await from_the_question(option + 1)
        await page.keyboard.press(key)
        state = await page.evaluate(STATE_JS)
        wanted = "right" if state["correct"][option] else "wrong"
        if not state["feedback"] or state["verdict"] != wanted or state["marked"] != 1:
            problems.append(f"{where}: {key} on option {option} gave {state['verdict']} feedback "
                            f"{state['feedback'][:60]!r} (wanted {wanted}), {state['marked']} options marked")
    await page.close()
    return problems


async def _run(executable: str, base: str) -> list[str]:
    from playwright.async_api import async_playwright

    async with async_playwright() as p:
        browser = await p.chromium.launch(executable_path=executable, args=LAUNCH_ARGS, headless=True)
        context = await browser.new_context()
        problems = []
        for viewport, scheme, path in RUNS:
            problems += await _try(context, base, viewport, scheme, path)
        await browser.close()
    return problems


def test_every_quiz_option_is_reached_and_answered_by_keyboard_alone(site, server):
    problems = asyncio.run(_run(chromium_or_skip(), server))
    assert not problems, "\n".join(problems)
