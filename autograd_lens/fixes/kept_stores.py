"""A store the program keeps on purpose: what the growing-buffer edit must not empty.

The usual fix for a list that grows across updates is to empty it after each update. Two kinds of
store the program means to keep, and emptying them would break the program or change what it
computes:

- a store read back by index or key (``cache[i]``, ``preds[idx]``): a later step looks up what an
  earlier one put there, so after ``.clear()`` the lookup fails (IndexError, KeyError). Its
  values are kept without their graphs instead, detached where they are stored;
- a store the program already empties itself under a condition (``if sync: window.clear()``):
  it keeps several updates' values on purpose, and one more ``.clear()`` would drop them.
"""

from __future__ import annotations

import ast

from ..source.edits import Plan
from ..source.source_file import Source, path_of

_EMPTY = ("clear", "pop", "popleft", "popitem", "remove")


def read_by_key(source: Source, container: str) -> bool:
    """Whether the program reads an entry of ``container`` by an index or key (not a slice,
    and not the index of a loop over all of it, ``for i in range(len(container))`` or
    ``range(0, len(container))``: that reads
    the whole list, in order, as iterating it does)."""
    walked = {n.target.id for n in ast.walk(source.tree) if isinstance(n, ast.For) and
              isinstance(n.target, ast.Name) and _over_all_of(n.iter, container)}
    return any(isinstance(n, ast.Subscript) and isinstance(n.ctx, ast.Load) and
               not isinstance(n.slice, ast.Slice) and path_of(n.value) == container and
               not (isinstance(n.slice, ast.Name) and n.slice.id in walked)
               for n in ast.walk(source.tree))


def _over_all_of(iterable: ast.expr, container: str) -> bool:
    """Whether ``iterable`` is ``range(len(container))`` (or ``range(0, len(container))``)."""
    if not (isinstance(iterable, ast.Call) and isinstance(iterable.func, ast.Name) and
            iterable.func.id == "range" and not iterable.keywords and
            1 <= len(iterable.args) <= 2):
        return False
    *start, stop = iterable.args
    return all(isinstance(a, ast.Constant) and a.value == 0 for a in start) and \
        isinstance(stop, ast.Call) and isinstance(stop.func, ast.Name) and \
        stop.func.id == "len" and len(stop.args) == 1 and path_of(stop.args[0]) == container


def emptied_when(source: Source, container: str) -> bool:
    """Whether the program itself empties ``container`` (or takes entries out) inside an
    ``if``: a window it keeps across several updates on purpose."""
    for branch in (n for n in ast.walk(source.tree) if isinstance(n, ast.If)):
        for node in ast.walk(branch):
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and \
                    node.func.attr in _EMPTY and path_of(node.func.value) == container:
                return True
            if isinstance(node, ast.Delete) and any(
                    path_of(getattr(t, "value", t)) == container for t in node.targets):
                return True
    return False


def _stored_values(source: Source, container: str) -> list[ast.expr]:
    """The values the program puts into ``container``: ``c[k] = v``, ``c.append(v)``, the
    element of ``c = [f(x) for x in xs]`` (the value of a dict comprehension)."""
    found = []
    for node in ast.walk(source.tree):
        if isinstance(node, ast.Assign):
            for target in node.targets:
                if isinstance(target, ast.Subscript) and path_of(target.value) == container:
                    found.append(node.value)
                elif path_of(target) == container and isinstance(node.value, ast.ListComp):
                    found.append(node.value.elt)
                elif path_of(target) == container and isinstance(node.value, ast.DictComp):
                    found.append(node.value.value)
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and \
                node.func.attr == "append" and path_of(node.func.value) == container and \
                len(node.args) == 1:
            found.append(node.args[0])
    return found


def detach_where_stored(source: Source, container: str, failed: ast.stmt) -> Plan | None:
    """Each value put into ``container`` detached where it is stored, when every store runs
    after the failed backward in its step or before the loop (a later step reads it, never the
    step that stored it); else None."""
    values = _stored_values(source, container)
    loop = source.loop_of(failed)
    if not values or loop is None:
        return None
    plan = Plan(source)
    for value in values:
        inside = loop.lineno <= value.lineno <= loop.end_lineno
        if (inside and value.lineno <= failed.end_lineno) or value.lineno != value.end_lineno:
            return None  # this step's own value, or a store the edit cannot write on one line
        text = source.segment(value)
        simple = path_of(value) is not None or isinstance(value, ast.Call)
        plan.replace_span(value, f"{text}.detach()" if simple else f"({text}).detach()")
    return plan
