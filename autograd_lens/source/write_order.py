"""Which in-place write of a saved tensor ran after its node saved it, as the failing function shows.

A tensor can be written in place at several lines (a buffer added to in ``forward``, zeroed in
another method). The error's versions say that a write ran after the node saved the tensor, not
which one. The failing function says it for some: every node of the graph that backward starts
from exists once the line assigning that root has run, so a write on a later line of that function
before the backward, or inside a function it calls on those lines, ran after the save. Such a write
is named before any other.
"""

from __future__ import annotations

import ast
from typing import Any, Iterator

from .backward_calls import backward_subject
from .candidates import NOT_USERS
from .reads import function_at, source_tree
from .paths import path_of
from .source_writes import built_before, writer_of
from .function_search import functions, last_before, statements, first_line
from .in_place_ops import made_in_place

def op_after_build(path: str, frames: list[Any]) -> tuple | None:
    """Where the program writes ``path`` in place on a line that ran after the failing root was
    built (see the module's text): (file, line, function, text, the path as written there), or
    None when no such write is in the source."""
    writes = writer_of(path)
    called: set[str] = set()
    for filename, scope, lines in _after_build(frames):
        hits = [s for s in statements(scope) if s.lineno in lines and writes(s)]
        if hits:  # written by the failing function itself, after the root was built
            return filename, hits[-1].lineno, getattr(scope, "name", "<module>"), \
                first_line(filename, hits[-1]), writes(hits[-1])
        called |= {(path_of(n.func) or "").split(".")[-1] for s in statements(scope)
                   if s.lineno in lines for n in ast.walk(s) if isinstance(n, ast.Call)}
    called.discard("")
    for filename, scope, line in functions(frames) if called else ():
        hit = None if line or getattr(scope, "name", "") not in called else \
            last_before(scope, 0, writes)
        if hit is not None:
            return filename, hit.lineno, scope.name, first_line(filename, hit), writes(hit)
    return None


def _after_build(frames: list[Any]) -> Iterator[tuple[str, ast.AST, range]]:
    """For each of the user's frames that calls a backward on its line: its file, its function
    and the lines after the last assignment of the root it backwards from, up to that line."""
    for frame in frames:
        code = frame.f_code
        tree = source_tree(code.co_filename) if not code.co_filename.startswith(NOT_USERS) \
            else None
        if tree is None:
            continue
        scope = function_at(tree, code.co_firstlineno, code.co_name)
        root = _root_at(scope, frame.f_lineno)
        built = built_before(code.co_filename, root, frame.f_lineno) if root else 0
        if built:
            yield code.co_filename, scope, range(built + 1, frame.f_lineno)


def _root_at(scope: ast.AST, line: int) -> str:
    """The root that the statement at ``line`` backwards from: ``loss`` in ``loss.backward()``,
    ``scaler.scale(loss).backward()`` or ``torch.autograd.grad(loss, ...)`` ("" when it calls no
    backward)."""
    for statement in statements(scope):
        if statement.lineno != line:
            continue
        for node in ast.walk(statement):
            if not isinstance(node, ast.Call):
                continue
            if isinstance(node.func, ast.Attribute) and node.func.attr == "grad" and \
                    (path_of(node.func.value) or "").split(".")[-1] in ("autograd", "torch"):
                return path_of(node.args[0]) or "" if node.args else ""
            subject = backward_subject(node)
            if subject is not None:
                return path_of(subject) or ""
    return ""


def module_made_in_place(op: str, frames: list[Any]) -> tuple | None:
    """Where the program makes the one module (or calls the one function) with ``inplace=True``
    whose write autograd records as ``op`` (``Relu``: ``nn.ReLU(inplace=True)``), when the
    message says the saved tensor is now that op's output and no line of the program writes it
    by name (the write runs inside the module's ``forward``): (file, line, function, text), or
    None when no such line, or several, are in the program's files."""
    if not op or op.endswith("Backward"):
        return None
    op = op.rstrip("0123456789")  # "output 0 of LeakyRelu1": LeakyReluBackward1's write
    hits = {}
    for filename, scope, _ in functions(frames):
        for statement in statements(scope):
            if any(made_in_place(n) == op for n in ast.walk(statement)):
                hits[(filename, statement.lineno)] = (filename, statement.lineno,
                                                      getattr(scope, "name", "<module>"),
                                                      first_line(filename, statement))
        tree = source_tree(filename)  # made at the top of a file: nn.Sequential(nn.ReLU(...))
        for statement in tree.body if tree is not None else ():
            if not isinstance(statement, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) \
                    and any(made_in_place(n) == op for n in ast.walk(statement)):
                hits[(filename, statement.lineno)] = (filename, statement.lineno, "<module>",
                                                      first_line(filename, statement))
    return next(iter(hits.values())) if len(hits) == 1 else None
