"""How the built site's drawings read, measured in Chromium: `python scripts/drawing_sizes.py [html]`.

For every page of the built site (default `_build/html`), on a laptop (1366x768) and a phone
(390x844): each graph drawing's smallest text as rendered (from the SVG's viewBox, its font sizes,
Graphviz's inner scale and the width the page gives it), and each backward replay's, in every
frame; each drawing opened on its own (what its link opens) on the phone, and each replay opened
full size with its button; where the fix box sits on each scenario page (laptop). Prints a summary
and writes the figures as JSON (`--json FILE`). Needs the system's Chromium (as the browser tests
do: `CHROMIUM=/path` or on PATH); it never downloads one. The browser asks each page what the
browser test of the site asks it (tests/test_site.py's READER_JS and its phone snippets): the
test holds the bounds, this prints the figures.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import sys
from pathlib import Path
from urllib.parse import urljoin

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))

LAPTOP = {"width": 1366, "height": 768}
PHONE = {"width": 390, "height": 844}


def pages(folder: Path) -> list[str]:
    skip = {"genindex.html", "search.html", "404.html", "index.html"}
    return sorted(str(p.relative_to(folder)) for p in folder.rglob("*.html")
                  if p.name not in skip and not p.relative_to(folder).parts[0].startswith(("_", "student")))


async def measure(executable: str, base: str, paths: list[str]) -> dict:
    from playwright.async_api import async_playwright

    from browser import LAUNCH_ARGS
    from test_site import PHONE_REPLAY_JS, READER_JS, _open_drawings, assets_loaded

    figures = {"laptop": {}, "phone": {}, "opened": {}, "fix": {}}
    async with async_playwright() as p:
        browser = await p.chromium.launch(executable_path=executable, args=LAUNCH_ARGS, headless=True)
        for size, viewport in (("laptop", LAPTOP), ("phone", PHONE)):
            page = await browser.new_page(viewport=viewport)
            for path in paths:
                await page.goto(f"{base}/{path}", wait_until="load")
                # The page's stylesheets and scripts are attached after its first paint
                # (_ext/first_paint.py): measured as the reader sees it once they have loaded.
                await assets_loaded(page)
                seen = await page.evaluate(READER_JS)
                drawings = [{**d, "src": urljoin(f"{base}/{path}", d["src"])} if "src" in d else d
                            for d in seen["drawings"] if d.get("replay") or d["graph"]]
                if drawings:
                    figures[size][path] = drawings
                if path.startswith("notebooks/") and size == "laptop":
                    box = seen["fixBox"]
                    figures["fix"][path] = [box["top"], box["bottom"]] if box else [None, None]
                if size == "phone":
                    for i, replay in enumerate(await page.evaluate(PHONE_REPLAY_JS)):
                        figures["opened"][f"{path}#replay-{i + 1}"] = {"px": replay["px"]}
            await page.close()
        await browser.close()
    srcs = sorted({d["src"] for ds in figures["phone"].values() for d in ds if not d.get("replay")})
    for src, px in (await _open_drawings(executable, srcs, PHONE)).items():
        figures["opened"][src.removeprefix(base + "/")] = {"px": px}
    return figures


def spread(sizes: list[float]) -> dict:
    """How many, the smallest, the median, and how many under 8 and under 9 px."""
    sizes = sorted(sizes)
    return {"count": len(sizes), "min_px": round(sizes[0], 1), "median_px": round(statistics.median(sizes), 1),
            "under_8": sum(s < 8 for s in sizes), "under_9": sum(s < 9 for s in sizes)}


def summarize(figures: dict) -> dict:
    """The figures in short: text sizes on a laptop and a phone, opened on a phone, the fix box."""
    def shown(size: str, toggled: bool) -> list[float]:
        return [d["px"] for ds in figures[size].values() for d in ds
                if d["px"] and (toggled or not d.get("toggled"))]

    tops = [where for where in figures["fix"].values() if where[0] is not None]
    return {
        "laptop_every_drawing": spread(shown("laptop", True)),
        "laptop_in_the_column": spread(shown("laptop", False)),
        "phone_in_the_column": spread(shown("phone", False)),
        "phone_opened": spread([o["px"] for o in figures["opened"].values() if o["px"] is not None]),
        "fix_box": {"pages": len(tops), "top_min_px": round(min(t[0] for t in tops)),
                    "top_max_px": round(max(t[0] for t in tops)),
                    "bottom_max_px": round(max(t[1] for t in tops))},
    }


def site_figures(folder: Path) -> dict | None:
    """Every figure of the built site in ``folder`` (None without a Chromium)."""
    from browser import find_chromium
    from test_site import PREFIX, serve

    executable = find_chromium()
    if executable is None:
        return None
    with serve(folder, PREFIX) as base:
        return asyncio.run(measure(executable, base, pages(folder)))


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("site", nargs="?", default=str(ROOT / "_build" / "html"))
    parser.add_argument("--json", help="write the figures to this file")
    args = parser.parse_args(argv)
    figures = site_figures(Path(args.site))
    if figures is None:
        print("no Chromium found: install it (`make chromium`) or set CHROMIUM=/path/to/it", file=sys.stderr)
        return 2
    for name, figure in summarize(figures).items():
        print(f"{name}: {figure}")
    if args.json:
        Path(args.json).write_text(json.dumps(figures, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
