"""How the built site's drawings read, measured in Chromium: `python scripts/drawing_sizes.py [html]`.

For every page of the built site (default `_build/html`), on a laptop (1366x768) and a phone
(390x844): each graph drawing's smallest text as rendered (from the SVG's viewBox, its font sizes,
Graphviz's inner scale and the width the page gives it), and each backward replay's, in every
frame; each drawing opened on its own (what its link opens) on the phone; where the fix box sits on
each scenario page (laptop); and what a phone shows on a scenario page's first screen. Prints a
summary and writes the figures as JSON (`--json FILE`). Needs the system's Chromium (as the
browser tests do: `CHROMIUM=/path` or on PATH); it never downloads one.
"""

from __future__ import annotations

import argparse
import functools
import json
import statistics
import sys
import threading
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))

LAPTOP = {"width": 1366, "height": 768}
PHONE = {"width": 390, "height": 844}

ASSETS_LOADED_JS = "() => !document.documentElement.hasAttribute('data-assets-loading')"

# The smallest text of an SVG as rendered at `width` CSS px, and every drawing of the page.
SIZES_JS = """
async () => {
  const smallest = (svg, width) => {
    const box = svg.viewBox && svg.viewBox.baseVal;
    const sizes = Array.from(svg.querySelectorAll("text"))
      .map(t => parseFloat(t.getAttribute("font-size") || "14")).filter(x => x > 0);
    const group = svg.querySelector("g.graph");
    const scale = group && /scale\\(([\\d.]+)/.exec(group.getAttribute("transform") || "");
    const inner = scale ? parseFloat(scale[1]) : 1;
    return box && box.width && sizes.length ? Math.min(...sizes) * inner * width / box.width : null;
  };
  const found = [];
  for (const img of document.querySelectorAll(".cell_output img[src$='.svg']")) {
    const svg = new DOMParser().parseFromString(await (await fetch(img.src)).text(), "image/svg+xml")
      .documentElement;
    if (!svg.querySelector("g.graph")) continue;
    found.push({src: img.src, toggled: !!img.closest("details"),
                px: smallest(svg, img.getBoundingClientRect().width)});
  }
  for (const frames of document.querySelectorAll(".al-frames")) {
    const slider = frames.querySelector("input[type=range]");
    const px = [];
    for (let k = 0; k <= +slider.max; k++) {
      slider.value = k;
      slider.dispatchEvent(new Event("input"));
      const svg = frames.querySelector(".al-frame svg");
      px.push(smallest(svg, svg.getBoundingClientRect().width));
    }
    found.push({src: "replay", replay: true, px: Math.min(...px)});
  }
  return found;
}
"""
# The SVG opened on its own: its smallest text at the size the browser shows it.
OPENED_JS = """
() => {
  const svg = document.documentElement;
  const box = svg.viewBox.baseVal;
  const sizes = Array.from(svg.querySelectorAll("text")).map(t => parseFloat(t.getAttribute("font-size") || "14"));
  const group = svg.querySelector("g.graph");
  const scale = group && /scale\\(([\\d.]+)/.exec(group.getAttribute("transform") || "");
  const width = svg.getBoundingClientRect().width;
  return {px: Math.min(...sizes) * (scale ? parseFloat(scale[1]) : 1) * width / box.width,
          scrolls: document.documentElement.scrollWidth > window.innerWidth};
}
"""
# Each backward replay opened full size with its button (then put back): its smallest text.
OPEN_REPLAYS_JS = """
() => Array.from(document.querySelectorAll(".al-frames")).map(frames => {
  const button = frames.querySelector("button.al-open");
  if (!button) return null;
  button.click();
  const svg = frames.querySelector(".al-frame svg");
  const box = svg.viewBox.baseVal;
  const sizes = Array.from(svg.querySelectorAll("text")).map(t => parseFloat(t.getAttribute("font-size") || "14"));
  const group = svg.querySelector("g.graph");
  const scale = group && /scale\\(([\\d.]+)/.exec(group.getAttribute("transform") || "");
  const px = Math.min(...sizes) * (scale ? parseFloat(scale[1]) : 1) * svg.getBoundingClientRect().width / box.width;
  button.click();
  return px;
})
"""
# Where the fix box sits, and the headings and boxes a reader sees without scrolling.
FIRST_SCREEN_JS = """
() => {
  const box = document.querySelector(".fix-box");
  const r = box && box.getBoundingClientRect();
  const seen = Array.from(document.querySelectorAll("article h1, article h2, article .fix-box .admonition-title, article .fix-box pre"))
    .filter(el => { const b = el.getBoundingClientRect(); return b.height > 0 && b.top < window.innerHeight; })
    .map(el => el.tagName === "PRE" ? "code: " + el.textContent.trim().split("\\n").length + " lines"
                                     : el.textContent.replace(/#$/, "").trim());
  return {fixTop: r ? r.top + window.scrollY : null, fixBottom: r ? r.bottom + window.scrollY : null,
          firstScreen: seen};
}
"""


class QuietHandler(SimpleHTTPRequestHandler):
    def log_message(self, *args) -> None:
        pass


def serve(folder: Path) -> tuple[ThreadingHTTPServer, str]:
    handler = functools.partial(QuietHandler, directory=str(folder))
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server, f"http://127.0.0.1:{server.server_address[1]}"


def pages(folder: Path) -> list[str]:
    skip = {"genindex.html", "search.html", "404.html", "index.html"}
    return sorted(str(p.relative_to(folder)) for p in folder.rglob("*.html")
                  if p.name not in skip and not p.relative_to(folder).parts[0].startswith(("_", "student")))


def measure(executable: str, base: str, paths: list[str]) -> dict:
    from playwright.sync_api import sync_playwright

    from browser import LAUNCH_ARGS

    figures = {"laptop": {}, "phone": {}, "opened": {}, "fix": {}, "phone_first_screen": {}}
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=executable, args=LAUNCH_ARGS)
        for size, viewport in (("laptop", LAPTOP), ("phone", PHONE)):
            page = browser.new_page(viewport=viewport)
            for path in paths:
                page.goto(f"{base}/{path}", wait_until="load")
                # The page's stylesheets and scripts are attached after its first paint
                # (_ext/first_paint.py): measured as the reader sees it once they have loaded.
                page.wait_for_function(ASSETS_LOADED_JS, timeout=30_000)
                drawings = page.evaluate(SIZES_JS)
                if drawings:
                    figures[size][path] = drawings
                if path.startswith("notebooks/"):
                    where = page.evaluate(FIRST_SCREEN_JS)
                    if size == "laptop":
                        figures["fix"][path] = [where["fixTop"], where["fixBottom"]]
                    else:
                        figures["phone_first_screen"][path] = where["firstScreen"]
                if size == "phone":
                    for i, px in enumerate(page.evaluate(OPEN_REPLAYS_JS)):
                        figures["opened"][f"{path}#replay-{i + 1}"] = {"px": px}
            page.close()
        page = browser.new_page(viewport=PHONE)
        for src in sorted({d["src"] for ds in figures["phone"].values() for d in ds if not d.get("replay")}):
            page.goto(src, wait_until="load")
            figures["opened"][src.removeprefix(base + "/")] = page.evaluate(OPENED_JS)
        browser.close()
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

    executable = find_chromium()
    if executable is None:
        return None
    server, base = serve(folder)
    try:
        return measure(executable, base, pages(folder))
    finally:
        server.shutdown()


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
