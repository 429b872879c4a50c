"""Each inline <script> of the site once, not twice.

Why this exists: Sphinx 7.4 (the last Sphinx that Jupyter Book 1 accepts, which pins
``sphinx~=7.0``) keeps an inline script added by an extension after the HTML builder started
twice: once as given (file name ``None``) and once as re-read from the registry (file name
``''``), and the two do not compare equal. sphinx-thebe adds ``const THEBE_JS_URL = ...`` that
way, so every page threw ``Uncaught SyntaxError: Identifier 'THEBE_JS_URL' has already been
declared``. Sphinx fixed this in 8.2 (pull request sphinx-doc/sphinx#13402) by passing ``''``
for ``None`` to the builder; this extension does the same for our build. Remove it when the book
moves to a Sphinx with that fix.

The quizzes' library is also written once, as a static file, rather than into every quiz (below).
"""

from __future__ import annotations

import re
from pathlib import Path

from sphinx.application import Sphinx
from sphinx.util import logging

logger = logging.getLogger(__name__)


def _normalise_inline_script_names(app: Sphinx) -> None:
    builder_add_js_file = getattr(app.builder, "add_js_file", None)
    if builder_add_js_file is None:  # not an HTML builder
        return

    def add_js_file(filename, **kwargs):
        builder_add_js_file(filename or "", **kwargs)

    app.builder.add_js_file = add_js_file


# The quizzes' library, once. jupyterquiz writes its whole library (37 KB) into every quiz's
# output, inside `if (typeof Question === 'undefined') { ... }`, followed by the lines that show
# that quiz. The library is taken out of each page's body into one static file, which the browser
# fetches once for the whole site; what stays inline is the quiz's questions and the call that
# shows them. A page whose library differs from the first one found keeps its own inline.
QUIZ_SCRIPT = re.compile(r'(<script type="application/javascript">)(var questions\w+=.*?)(</script>)', re.DOTALL)
LIBRARY_START = "if (typeof Question === 'undefined') {\n"
SHOW_START = "/*\n * Handle asynchrony"
QUIZ_LIBRARY = "_static/jupyterquiz.js"


def split_quiz(script: str) -> tuple[str, str, str] | None:
    """(questions, library, show) of a quiz's inline script, or None if it is not one."""
    start, show = script.find(LIBRARY_START), script.rfind(SHOW_START)
    if start < 0 or show < start or not script.rstrip().endswith("}"):
        return None
    tail = script[show:].rstrip()[:-1]  # the closing brace of the `if` around the library
    return script[:start], script[start + len(LIBRARY_START):show], tail


def _quiz_library_once(app: Sphinx, pagename, templatename, context, doctree) -> None:
    body = context.get("body")
    if not body or "var questions" not in body:
        return

    def replace(match: re.Match) -> str:
        parts = split_quiz(match.group(2))
        if parts is None:
            return match.group(0)
        questions, library, show = parts
        known = getattr(app.builder, "quiz_library", None)
        if known is None:
            app.builder.quiz_library = known = library
        if library != known:
            logger.warning("%s: its quiz library differs from the other pages'; left inline", pagename)
            return match.group(0)
        src = context["pathto"](QUIZ_LIBRARY, 1)
        return f'<script src="{src}"></script>\n{match.group(1)}{questions}{show}{match.group(3)}'

    context["body"] = QUIZ_SCRIPT.sub(replace, body)


def _write_quiz_library(app: Sphinx, exception) -> None:
    library = getattr(app.builder, "quiz_library", None)
    if exception is None and library is not None:
        (Path(app.outdir) / QUIZ_LIBRARY).write_text(library)


def setup(app: Sphinx) -> dict:
    # Before the other extensions' builder-inited handlers (the default priority is 500): some of
    # them (sphinx-togglebutton) add inline scripts right there.
    app.connect("builder-inited", _normalise_inline_script_names, priority=100)
    app.connect("html-page-context", _quiz_library_once)
    app.connect("build-finished", _write_quiz_library)
    # Not parallel-write safe: the quiz library found while writing pages is written at the end.
    return {"parallel_read_safe": True, "parallel_write_safe": False}
