"""Where to look for a line of the user's program: its functions, and their simple statements.

:func:`functions` gives the functions to search: each live frame's own first (with its line),
then every function of the frames' files, then those of the program's other modules that a live
frame called before its line. :func:`statements` gives a scope's simple statements (in blocks
too, not in nested functions or classes), :func:`last_before` the last one a test accepts, and
:func:`first_line` a statement's first line as written.
"""

from __future__ import annotations

import ast
import linecache
import sys
from typing import Any, Iterator

from .candidates import NOT_USERS
from .reads import source_tree
from .paths import path_of


def functions(frames: list[Any]) -> Iterator[tuple[str, ast.AST, int]]:
    """The user's functions to look for a write in: each frame's own first (with its line), then
    every function of the frames' files (a write inside a module's ``forward``)."""
    files, called = [], set()
    for frame in frames:
        code = frame.f_code
        tree = source_tree(code.co_filename)
        if tree is None:
            continue
        for node in ast.walk(tree):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Module)) and \
                    getattr(node, "lineno", code.co_firstlineno) == code.co_firstlineno and \
                    getattr(node, "name", "<module>") == code.co_name:
                yield code.co_filename, node, frame.f_lineno
                if not code.co_filename.startswith(NOT_USERS):
                    called |= _called_before(node, frame.f_lineno)
                break
        if code.co_filename not in files and not code.co_filename.startswith(NOT_USERS):
            files.append(code.co_filename)
    for filename in files:
        for node in ast.walk(source_tree(filename)):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                yield filename, node, 0
    # Another module of the program: only the functions that a live frame called before its line.
    for filename in [f for f in _program_modules() if f not in files]:
        for node in ast.walk(source_tree(filename) or ast.Module(body=[])):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name in called:
                yield filename, node, 0


def _called_before(scope: ast.AST, line: int) -> set[str]:
    """The names of the functions ``scope`` calls before ``line`` (``pull`` in
    ``utils.pull(a, b)``)."""
    return {(path_of(n.func) or "").split(".")[-1] for n in ast.walk(scope)
            if isinstance(n, ast.Call) and getattr(n, "lineno", line) < line} - {""}


def _program_modules() -> list[str]:
    """The files of the program's own modules that are imported now (a ``utils.py`` beside the
    script): those outside Python's and the installed libraries' folders."""
    files = []
    for module in list(sys.modules.values()):
        filename = getattr(module, "__file__", None) or ""
        if filename.endswith(".py") and not filename.startswith(NOT_USERS):
            files.append(filename)
    return files


def first_line(filename: str, statement: ast.stmt) -> str:
    """The first line of ``statement``'s source, as written in ``filename``."""
    return (ast.get_source_segment("".join(linecache.getlines(filename)), statement)
            or "").split("\n")[0]


_BLOCKS = (ast.For, ast.AsyncFor, ast.While, ast.If, ast.With, ast.AsyncWith, ast.Try)
_SCOPES = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)


def statements(scope: ast.AST) -> list[ast.stmt]:
    """The simple statements of ``scope``, in blocks too, not in nested functions or classes."""
    found, todo = [], list(ast.iter_child_nodes(scope))
    while todo:
        node = todo.pop()
        if isinstance(node, _SCOPES):
            continue
        if isinstance(node, ast.stmt) and not isinstance(node, _BLOCKS):
            found.append(node)
        else:
            todo += list(ast.iter_child_nodes(node))
    return sorted(found, key=lambda n: n.lineno)


def last_before(scope: ast.AST, line: int, wanted: Any) -> ast.stmt | None:
    """The last statement of ``scope`` (before ``line`` when given) that ``wanted`` accepts."""
    hits = [s for s in statements(scope) if wanted(s) and (not line or s.lineno < line)]
    return hits[-1] if hits else None
