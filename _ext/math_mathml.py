"""Formulas as MathML, written at build time: no MathJax in the browser.

MathJax 3 (1.2 MB of script, then its fonts) typeset a handful of formulas per page in the
browser, and alone it took a page with math over its weight budget. Browsers draw MathML
themselves (Chromium since 109, Firefox and Safari long before), so each formula is converted once,
here, by latex2mathml, and the page carries it as markup: inline formulas in a
``<span class="math">``, displayed ones in a ``<div class="math">``, as Sphinx's MathJax renderer
wrote them. A formula that latex2mathml cannot convert fails the build with its TeX and page.
"""

from __future__ import annotations

from docutils import nodes
from latex2mathml.converter import convert
from sphinx.application import Sphinx
from sphinx.errors import ExtensionError
from sphinx.locale import _
from sphinx.util.math import get_node_equation_number


def mathml(tex: str, display: str, where: str) -> str:
    try:
        return convert(tex.strip(), display=display)
    except Exception as error:  # latex2mathml raises several types; each names the TeX it could not read
        raise ExtensionError(f"{where}: the formula {tex!r} cannot be converted to MathML: {error}") from error


def visit_math(self, node: nodes.math) -> None:
    self.body.append(self.starttag(node, "span", "", CLASS="math notranslate nohighlight"))
    self.body.append(mathml(node.astext(), "inline", self.builder.current_docname))
    self.body.append("</span>")
    raise nodes.SkipNode


def visit_displaymath(self, node: nodes.math_block) -> None:
    self.body.append(self.starttag(node, "div", CLASS="math notranslate nohighlight"))
    if node.get("number"):
        number = get_node_equation_number(self, node)
        self.body.append(f'<span class="eqno">({number})')
        self.add_permalink_ref(node, _("Link to this equation"))
        self.body.append("</span>")
    self.body.append(mathml(node.astext(), "block", self.builder.current_docname))
    self.body.append("</div>\n")
    raise nodes.SkipNode


def setup(app: Sphinx) -> dict:
    app.add_html_math_renderer("mathml", (visit_math, None), (visit_displaymath, None))
    return {"parallel_read_safe": True, "parallel_write_safe": True}
