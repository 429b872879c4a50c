"""Each graph drawing's alt text, from the drawing itself instead of its file name.

myst-nb writes a notebook's SVG output to a file and gives the ``<img>`` that file's path as its
alt text (a hash), so a screen reader says nothing of what the picture shows. The drawings of
``autograd_lens.draw`` carry their description as the SVG's title (the graph's name, written by
``autograd_lens.describe`` from the graph: nodes, leaves, saved tensors and their states); this
extension copies it into the image's alt text. A Graphviz SVG without such a title (torchviz's own
``make_dot``) gets a count of its nodes, read from the SVG; any other SVG is left as it is.
"""

from __future__ import annotations

import re
from pathlib import Path

from docutils import nodes
from sphinx.application import Sphinx

TITLE = re.compile(r'<g id="graph0" class="graph"[^>]*>\s*<title>(.*?)</title>', re.S)
NODE = re.compile(r'<g id="[^"]*" class="node">')


def alt_text(svg: str) -> str | None:
    """The alt text of one SVG drawing, or None when it is not a Graphviz graph."""
    import html

    title = TITLE.search(svg)
    if title is None:
        return None
    text = html.unescape(title.group(1)).strip()
    if text.startswith("Autograd graph"):
        return text
    return f"Graph drawing of {len(NODE.findall(svg))} boxes (nodes and tensors)."


def _set_alt(app: Sphinx, doctree: nodes.document) -> None:
    for image in doctree.findall(nodes.image):
        uri = image.get("uri", "")
        if not uri.endswith(".svg"):
            continue
        path = Path(app.srcdir) / uri
        if not path.is_file():
            continue
        text = alt_text(path.read_text(errors="replace"))
        if text and (not image.get("alt") or image["alt"].endswith(".svg")):
            image["alt"] = text


def setup(app: Sphinx) -> dict:
    app.connect("doctree-read", _set_alt)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
