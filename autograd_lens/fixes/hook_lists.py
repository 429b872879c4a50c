"""The edit for a list on an object that the object's own forward hooks fill.

A method registered with ``register_forward_hook`` appends each hooked layer's output to a list
attribute (``self.acts.append(output)``); another method of the same class runs the network and
reads the list. Never emptied, the list keeps every earlier forward's outputs, and the next
loss over it goes back through graphs earlier backward calls freed. The list is emptied at the
top of the method that reads it, before the network runs: each call reads what its own forward
gathered.
"""

from __future__ import annotations

import ast

from ..source.edits import Plan
from ..source.source_file import Source, path_of
from .rules import Case, Fix, one_fix, top_carrier

_FILL = ("append", "extend", "insert")
_HOOKS = ("register_forward_hook",)


def clear_before_forward(case: Case) -> list[Fix]:
    """``self.X.clear()`` first in the method that runs the hooked network and reads ``self.X``."""
    carrier, source = top_carrier(case)
    container = carrier.name.split("[")[0] if source is not None else ""
    if not container.startswith("self.") or container.count(".") != 1:
        return []
    method = source.scope_at(carrier.line)
    holder = _class_of(source, method)
    read = source.statement_at(carrier.line)
    if holder is None or read is None or read not in method.body or \
            source.stores(method, container) or not _filled_by_hooks(holder, container):
        return []
    body = method.body[1:] if _docstring(method.body[0]) else method.body
    runs = [s for s in body if s.end_lineno < read.lineno and
            any(isinstance(n, ast.Call) for n in ast.walk(s))]
    if not runs:
        return []  # nothing runs the network before the read here: the list is filled elsewhere
    plan = Plan(source).before(body[0].lineno, f"{source.indent(body[0].lineno)}{container}.clear()")
    return one_fix("each call reads the outputs its own forward gathered: the list the hooks "
                   "fill starts empty", plan)


def _class_of(source: Source, method: ast.AST) -> ast.ClassDef | None:
    return next((n for n in ast.walk(source.tree) if isinstance(n, ast.ClassDef)
                 and method in n.body), None)


def _docstring(statement: ast.stmt) -> bool:
    return isinstance(statement, ast.Expr) and isinstance(statement.value, ast.Constant) and \
        isinstance(statement.value.value, str)


def _filled_by_hooks(holder: ast.ClassDef, container: str) -> bool:
    """Whether a method of ``holder`` that appends to ``container`` is registered as a forward
    hook by the class itself (``layer.register_forward_hook(self._keep)``)."""
    fillers = {f"self.{m.name}" for m in holder.body if isinstance(m, ast.FunctionDef) and any(
        isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) and n.func.attr in _FILL
        and path_of(n.func.value) == container for n in ast.walk(m))}
    return any(isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) and
               n.func.attr in _HOOKS and any(path_of(a) in fillers for a in n.args)
               for n in ast.walk(holder))
