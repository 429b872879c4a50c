"""Each page loads what it uses.

A stock page of this theme loaded 2.7 to 4.2 MB. What went, and where:

- Icons. pydata-sphinx-theme loads Font Awesome's icon script (1.5 MB, every icon there is) on
  every page, to redraw as SVG about fifteen icons that its stylesheet already draws with Font
  Awesome's font. ``_templates/layout.html`` drops the script; the font's two files that pages
  use (solid, 156 KB, and brands, 118 KB) are cut here, with fontTools, to the glyphs the pages
  can show: the icons the theme's stylesheets use by themselves (admonitions, breadcrumbs, links)
  and those of the ``fa-...`` classes found in the built pages. ``_static/book.css`` points the
  font's family names at the cut files.
- MathJax (1.2 MB) on pages with a formula, and on the landing page, which has none (Sphinx counts
  the formulas of the pages a page's toctree includes as the page's own): formulas are MathML,
  written at build time (``_ext/math_mathml.py``).
- The search scripts and the search index (140 KB): see ``_templates/layout.html``.
- sphinx-design's ``design-tabs.js``, which keeps tab sets in step, on pages without a tab set
  (every page, now): the one script a page fetched while it was parsed (it listens for
  ``DOMContentLoaded``, so ``_ext/first_paint.py`` cannot attach it after the first paint).
"""

from __future__ import annotations

import re
from pathlib import Path

from sphinx.application import Sphinx

FONTS = "vendor/fontawesome/webfonts"          # under _static, as the theme ships them
CUT = "icon-fonts"                             # under _static: the cut fonts, for book.css
FAMILIES = ["fa-solid-900", "fa-brands-400"]
THEME_CSS = ["styles/pydata-sphinx-theme.css", "styles/sphinx-book-theme.css"]
PRIVATE_USE = re.compile("[\ue000-\uf8ff]")
ESCAPE = re.compile(r'content:\s*"\\([0-9a-f]{4,5})"')
RULE = re.compile(r"([^{}]+)\{([^{}]*)\}")
CLASS = re.compile(r"\bfa-[a-z0-9-]+")


def used_glyphs(css: str, classes: set[str]) -> set[int]:
    """The code points the stylesheets show by themselves, and those of the given icon classes."""
    points = {ord(c) for c in PRIVATE_USE.findall(css)}
    for selectors, body in RULE.findall(css):
        escaped = ESCAPE.search(body)
        if not escaped:
            continue
        names = [s.strip() for s in selectors.split(",")]
        icon_rule = all(s.startswith(".fa-") for s in names)
        if not icon_rule or any(s.removesuffix(":before").removesuffix("::before")[1:] in classes for s in names):
            points.add(int(escaped.group(1), 16))
    return points


def _cut_icon_fonts(app: Sphinx, exception) -> None:
    if exception is not None or app.builder.format != "html":
        return
    from fontTools import subset

    static = Path(app.outdir) / "_static"
    css = "".join((static / name).read_text() for name in THEME_CSS if (static / name).is_file())
    classes = set()
    for page in Path(app.outdir).rglob("*.html"):
        classes |= set(CLASS.findall(page.read_text(errors="replace")))
    points = used_glyphs(css, classes)
    (static / CUT).mkdir(exist_ok=True)
    for family in FAMILIES:
        options = subset.Options()
        options.flavor = "woff"   # zlib: woff2 needs brotli, which the toolchain does not have
        font = subset.load_font(str(static / FONTS / f"{family}.ttf"), options)
        subsetter = subset.Subsetter(options)
        subsetter.populate(unicodes=points)
        subsetter.subset(font)
        subset.save_font(font, str(static / CUT / f"{family}.woff"), options)


TABS_SCRIPT = "design-tabs.js"
TAB_SET = "sd-tab-set"


def _drop_unused_scripts(app: Sphinx, pagename: str, templatename: str, context: dict, doctree) -> None:
    """design-tabs.js only on a page with a tab set."""
    if TAB_SET in context.get("body", "") or "script_files" not in context:
        return
    context["script_files"] = [js for js in context["script_files"]
                               if not str(getattr(js, "filename", js)).split("?")[0].endswith(TABS_SCRIPT)]


def setup(app: Sphinx) -> dict:
    app.connect("html-page-context", _drop_unused_scripts)
    app.connect("build-finished", _cut_icon_fonts)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
