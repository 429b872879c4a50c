"""A state whose first value is learned: where its detach goes.

A state carried across the steps of a loop is detached at the top of each step (truncated
backpropagation through time). When the loop starts it from a computed value, a learned initial
state (``memory = mem_init.expand(b, -1, -1)`` before the loop over segments), a detach at the
top would detach that value too at the first step (a value read from a parameter the
program makes), and what computes it would never be trained.
The detach then goes where the loop stores the next state, after the step's backward; where the
loop stores it before the backward, the source does not show a place that keeps both, and no
edit is given.
"""

from __future__ import annotations

import ast

from ..source.edit_guards import _no_grad
from ..source.source_file import Source, path_of


def learned_start(source: Source, path: str, at: ast.stmt) -> bool:
    """Whether the loop holding ``at`` starts ``path`` from a computation before it (not data,
    not under ``no_grad``), in the same function."""
    loop = source.loop_of(at)
    if loop is None:
        return False
    before = [s for s in source.stores(source.scope_at(at.lineno), path)
              if s.end_lineno < loop.lineno]
    return bool(before) and reads_parameter(source, getattr(before[-1], "value", None)) and \
        not _no_grad(source, before[-1])


def reads_parameter(source: Source, value: ast.expr | None) -> bool:
    """Whether ``value`` reads a name (or an attribute) that the program makes a parameter
    (``mem_init = nn.Parameter(...)``, ``self.h0 = torch.nn.Parameter(...)``)."""
    made = set()
    for node in ast.walk(source.tree):
        if isinstance(node, ast.Assign) and isinstance(node.value, ast.Call) and \
                (path_of(node.value.func) or "").split(".")[-1] == "Parameter":
            made |= {t.attr if isinstance(t, ast.Attribute) else getattr(t, "id", None)
                     for t in node.targets}
    read = {n.attr if isinstance(n, ast.Attribute) else n.id for n in ast.walk(value or ast.Pass())
            if isinstance(n, (ast.Name, ast.Attribute))}
    return bool(made & read)


def stores_after(source: Source, path: str, at: ast.stmt, failed: ast.stmt | None) \
        -> list[ast.stmt] | None:
    """The stores of ``path`` in the loop holding ``at``, when each comes after ``failed`` (the
    backward) in that loop; else None."""
    loop = source.loop_of(at)
    if loop is None or failed is None or not loop.lineno <= failed.lineno <= loop.end_lineno:
        return None
    stores = [s for s in source.stores(source.scope_at(at.lineno), path)
              if loop.lineno <= s.lineno <= loop.end_lineno]
    if not stores or any(s.lineno <= failed.end_lineno for s in stores):
        return None
    return stores
