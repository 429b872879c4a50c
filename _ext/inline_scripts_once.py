"""Each inline <script> of the site once, not twice.

Why this exists: Sphinx 7.4 (the last Sphinx that Jupyter Book 1 accepts, which pins
``sphinx~=7.0``) keeps an inline script added by an extension after the HTML builder started
twice: once as given (file name ``None``) and once as re-read from the registry (file name
``''``), and the two do not compare equal. sphinx-thebe adds ``const THEBE_JS_URL = ...`` that
way, so every page threw ``Uncaught SyntaxError: Identifier 'THEBE_JS_URL' has already been
declared``. Sphinx fixed this in 8.2 (pull request sphinx-doc/sphinx#13402) by passing ``''``
for ``None`` to the builder; this extension does the same for our build. Remove it when the book
moves to a Sphinx with that fix.
"""

from __future__ import annotations

from sphinx.application import Sphinx


def _normalise_inline_script_names(app: Sphinx) -> None:
    builder_add_js_file = getattr(app.builder, "add_js_file", None)
    if builder_add_js_file is None:  # not an HTML builder
        return

    def add_js_file(filename, **kwargs):
        builder_add_js_file(filename or "", **kwargs)

    app.builder.add_js_file = add_js_file


def setup(app: Sphinx) -> dict:
    # Before the other extensions' builder-inited handlers (the default priority is 500): some of
    # them (sphinx-togglebutton) add inline scripts right there.
    app.connect("builder-inited", _normalise_inline_script_names, priority=100)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
