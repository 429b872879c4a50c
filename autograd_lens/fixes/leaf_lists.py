"""A list of weights the program differentiates by hand: stepped values become the next leaves.

A program that steps its own weights (``new = [p - lr * g for p, g in zip(params, grads)]``,
then ``params = new``) and takes ``torch.autograd.grad(loss, params)`` carries the whole step's
graph into the next one. Detaching one entry where it is read (``params[0] = params[0].detach()``)
would leave the others attached and drop ``requires_grad``, which the next ``autograd.grad``
needs. The fix detaches every entry where the stepped values are stored, and makes each a leaf
that requires grad again: ``params = [p.detach().requires_grad_() for p in new]``.
"""

from __future__ import annotations

import ast
import re

from ..source.edits import Plan
from ..source.source_file import Source, path_of


def differentiated(source: Source, scope: ast.AST, container: str) -> bool:
    """Whether ``scope`` calls ``grad(outputs, container)`` (or ``inputs=container``)."""
    for node in ast.walk(scope):
        if isinstance(node, ast.Call) and getattr(node.func, "attr",
                                                   getattr(node.func, "id", None)) == "grad":
            inputs = node.args[1:2] + [k.value for k in node.keywords if k.arg == "inputs"]
            if any(path_of(i) == container for i in inputs):
                return True
    return False


def entry_of(path: str) -> str | None:
    """``params`` for ``params[0]``; None for any other path."""
    found = re.fullmatch(r"(\w+)\[\d+\]", path)
    return found.group(1) if found else None


def leaves_where_stored(source: Source, read: ast.stmt, container: str) -> Plan | None:
    """Every store ``container = value`` of the loop that holds ``read``, after it, with each
    entry detached and made a leaf again; None when there is none, or one not on one line."""
    loop = source.loop_of(read)
    if loop is None:
        return None
    stores = [s for s in source.stores(source.scope_at(read.lineno), container)
              if read.end_lineno < s.lineno <= loop.end_lineno]
    if not stores or any(not isinstance(s, ast.Assign) or s.lineno != s.end_lineno or
                         len(s.targets) != 1 for s in stores):
        return None
    plan = Plan(source)
    for store in stores:
        plan.replace_span(store.value, f"[p.detach().requires_grad_() for p in "
                                       f"{source.segment(store.value)}]")
    return plan
