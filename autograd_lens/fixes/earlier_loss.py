"""An edit from the recording of the freed-graph error: the earlier backward call that freed the
graph (as the replay recorded it) backpropagates a loss, inside a function, that reads a tensor
the function was handed; read there detached, that backward stops at it, and the later loss,
which needs the graph that made it, still trains through it (a codebook's own update inside a
quantizer's ``forward``, whose loss reads the encoder's output).

One candidate per such parameter of the function; each is run before it is called the fix (the
verification keeps the one under which every trained parameter still gets its gradient).
"""

from __future__ import annotations

import ast
from typing import Any

from ..source.backward_calls import backward_subject
from ..source.edits import Plan
from ..source.source_file import Source, path_of
from .rules import BACKWARD, Fix, one_fix


def detach_in_earlier_loss(freed_by: dict | None, failed: tuple[str, int] | None) -> list[Fix]:
    """The candidates (see the module's docstring); ``freed_by``: the recorded backward call
    that freed the graph (its ``user`` line); ``failed``: (file, line) of the failing call.
    None when the earlier call is not a ``loss.backward()`` in a function other than the
    failing call's, whose loss is assigned in that function from one of its parameters."""
    site = (freed_by or {}).get("user")
    if not site or failed is None:
        return []
    source = Source.read(site["file"])
    statement = source.statement_at(site["line"]) if source else None
    if statement is None:
        return []
    scope = source.scope_at(statement.lineno)
    if not isinstance(scope, (ast.FunctionDef, ast.AsyncFunctionDef)):
        return []
    if site["file"] == failed[0] and source.scope_at(failed[1]) is scope:
        return []  # the same function: the pattern's own rules read it
    calls = [c for s, c in source.calls(scope, BACKWARD) if s is statement]
    subject = backward_subject(calls[-1]) if calls else None
    name = path_of(subject) if subject is not None else None
    if not name:
        return []
    made = [s for s in source.stores(scope, name) if s.end_lineno < statement.lineno]
    if not made or not isinstance(made[-1], ast.Assign):
        return []
    loss = made[-1]
    handed = [a.arg for a in scope.args.posonlyargs + scope.args.args + scope.args.kwonlyargs]
    fixes: list[Fix] = []
    for parameter in handed[1:] if _is_method(scope) else handed:
        if any(s.lineno < loss.lineno for s in source.stores(scope, parameter)):
            continue  # rebound before the loss: not what the caller handed
        reads = [r for r in source.reads(loss.value, parameter) if not _detached(loss, r)]
        if not reads or any(r.lineno != r.end_lineno or _index(loss, r) for r in reads):
            continue  # an index (``centres[labels]``) carries no graph
        plan = Plan(source)
        for read in reads:
            plan.replace_span(read, f"{parameter}.detach()")
        fixes += one_fix(f"the earlier backward's loss reads `{parameter}` as data: that "
                         "backward stops at it, and the later loss still trains what made it",
                         plan)
    return fixes


def _is_method(scope: ast.AST) -> bool:
    args = scope.args.posonlyargs + scope.args.args
    return bool(args) and args[0].arg in ("self", "cls")


def _detached(statement: ast.stmt, read: ast.expr) -> bool:
    parents = {id(c): p for p in ast.walk(statement) for c in ast.iter_child_nodes(p)}
    parent: Any = parents.get(id(read))
    return isinstance(parent, ast.Attribute) and parent.attr == "detach"


def _index(statement: ast.stmt, read: ast.expr) -> bool:
    parents = {id(c): p for p in ast.walk(statement) for c in ast.iter_child_nodes(p)}
    parent: Any = parents.get(id(read))
    return isinstance(parent, ast.Subscript) and parent.slice is read
