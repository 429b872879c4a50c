"""The in-place write into part of a tensor a node saved: the write goes into a copy.

Where the program writes into part of a saved tensor (``self.queue[i] = k``), the write goes
into a copy made just before it (``self.queue = self.queue.clone()``): before the whole run of
in-place calls that ends in the write, and without the old value's graph when the run starts by
replacing every element, as ``state.copy_(...)`` does; before the loop that makes the writes when
the loop does not bind the name again (first when the loop reads the name only in writes into it,
else second: a node built in the loop saves the copy, and the next turn's write changes it). An
attribute written in a method is copied into a name of the method's own, which the write and
every later read of the method use, and the object keeps its tensor unwritten. A value over
several lines that reads the tensor (``h[i] = cell(x,`` / ``h[i])``) is computed first, into a
name of its own, then written into a copy; a value that reads the whole tensor (``z[:, j] =
eps[:, j] + torch.tanh(z @ a)``) is written into a copy under a new name, which then takes the
old one. The node keeps the tensor it saved, unchanged.
"""

from __future__ import annotations

import ast
import re

from ..source.edits import Plan
from ..source.source_file import _SIMPLE, Source, _same, _walk_scope, path_of, targets
from .rules import Fix, one_fix


def _copy_before(source: Source, statement: ast.stmt, name: str) -> list[Fix]:
    """The write goes into a copy of ``name`` made before the first of the writes: before the
    run of in-place calls that ends in ``statement``; where the write is in loops that do not
    bind ``name`` again, also before those loops (every turn then writes the copy, never the
    tensor a node saved before the loop), first when the loops read ``name`` only in writes
    into it, else second (a node built in the loop saves the copy, and the next turn's write
    changes it: only the copy made each turn holds)."""
    found = []
    outside = _outside_loops(source, statement, name)
    for anchor in dict.fromkeys([outside, statement] if _read_only_by_writes(
            source, outside, name) else [statement, outside]):
        found += _copy_at(source, anchor, name)
    return found + _copy_in_method(source, statement, name)


def _copy_in_method(source: Source, statement: ast.stmt, name: str) -> list[Fix]:
    """An attribute of the object (``self.vec[:, 0] = bg``) written in a method: the copy is a
    name of the method's own, which the write and every later read of the method use, and the
    object keeps its tensor unwritten (a copy kept in the attribute would carry this call's
    graph into the next call). Not when the method assigns the attribute later."""
    scope = source.scope_at(statement.lineno)
    if not re.fullmatch(r"self\.\w+", name) or not isinstance(
            scope, (ast.FunctionDef, ast.AsyncFunctionDef)):
        return []
    first = _first_of_run(source, statement, name)
    after = [s for s in source.statements(scope) if s.lineno >= first.lineno and
             not hasattr(s, "body")]  # (reads in an ``if``'s test are not replaced: none then)
    if any(s.lineno > statement.lineno for s in source.stores(scope, name)):
        return []
    taken = {n.id for n in ast.walk(scope) if isinstance(n, ast.Name)} | \
        {a.arg for a in ast.walk(scope) if isinstance(a, ast.arg)}
    local = next((c for c in (name[5:], name[5:] + "_copy", name[5:] + "_own")
                  if c not in taken), "")
    if not local:
        return []
    plan = Plan(source)
    for other in after:
        for read in source.reads(other, name):
            if read.lineno != read.end_lineno:
                return []
            plan.replace_span(read, local)
    # made where the method's own body holds the write (before an ``if`` around it), so the
    # name is bound wherever it is read
    top = next(s for s in scope.body if s.lineno <= first.lineno <= s.end_lineno)
    plan.before(top.lineno, f"{source.indent(top.lineno)}{local} = {name}.clone()")
    return one_fix(f"the write goes into a copy that the method keeps under a name of its own "
                   f"and reads from there on, so the node keeps the tensor it saved and "
                   f"`{name}` stays as it was (no call's graph is kept in it for the next)",
                   plan)


def _copy_at(source: Source, statement: ast.stmt, name: str) -> list[Fix]:
    if statement.lineno != statement.end_lineno:  # (on one line, the part read is copied)
        hoisted = _value_first(source, statement, name)
        if hoisted:
            return hoisted
    plan, indent = Plan(source), source.indent(statement.lineno)
    first = _first_of_run(source, statement, name)
    if _overwrites(first, name):  # nothing of the old value's history reaches the result
        plan.before(first.lineno, f"{indent}{name} = {name}.detach().clone()")
        return one_fix("the write goes into a copy made just before it, so the node keeps "
                       "the tensor it saved, unchanged; the copy is made without the old "
                       "value's graph, which the write replaces whole (no gradient reached it)",
                       plan)
    plan.before(first.lineno, f"{indent}{name} = {name}.clone()")
    return one_fix("the write goes into a copy made just before it, so the node keeps the "
                   "tensor it saved, unchanged", plan)


def _value_first(source: Source, statement: ast.stmt, name: str) -> list[Fix]:
    """A write into a part of ``name`` whose value, over several lines, reads ``name``
    (``h[i] = cell(x,`` / ``h[i])``: a node of the value saves the part it reads, which the
    write then changes): the value is computed first, into a name of its own, then written into
    a copy of ``name``."""
    if not isinstance(statement, ast.Assign) or len(statement.targets) != 1:
        return []
    target = statement.targets[0]
    if not (isinstance(target, ast.Subscript) and path_of(target.value) == name and
            target.lineno == target.end_lineno and source.reads(statement.value, name)):
        return []
    fresh = "new_" + re.sub(r"\W+", "_", name).strip("_")
    if re.search(rf"\b{fresh}\b", "".join(source.lines)):
        return []  # (a name the program uses already)
    indent = source.indent(statement.lineno)
    plan = Plan(source).replace_span(target, fresh)
    plan.after(statement.end_lineno, f"{indent}{name} = {name}.clone()",
               f"{indent}{source.segment(target)} = {fresh}")
    return one_fix("the value is computed first, from the tensor as the nodes saved it; then it "
                   "is written into a copy, so no node's saved tensor changes", plan)


def _read_only_by_writes(source: Source, loop: ast.stmt, name: str) -> bool:
    """Whether every statement of ``loop`` that reads ``name`` writes into it (``x[i] = x[i] *
    s``); true for a statement that is no loop."""
    if not isinstance(loop, (ast.For, ast.AsyncFor, ast.While)):
        return True
    return all(_part_reads(s, name) or not source.reads(s, name)
               for s in ast.walk(loop) if isinstance(s, _SIMPLE))


def _outside_loops(source: Source, statement: ast.stmt, name: str) -> ast.stmt:
    """The outermost loop of ``statement``'s function that holds it, binds ``name`` nowhere
    (neither as its variable nor by an assignment in its body) and comes after ``name`` is
    bound in the function; else ``statement``."""
    scope = source.scope_at(statement.lineno)
    root = name.split(".")[0].split("[")[0]
    found, loop = statement, source.loop_of(statement)
    while loop is not None:
        bound = [s for s in ast.walk(loop) if isinstance(s, (ast.Assign, ast.AnnAssign)) and
                 any(_same(t, name) or _same(t, root) for t in targets(s))]
        variable = {n.id for n in ast.walk(getattr(loop, "target", ast.Pass()))
                    if isinstance(n, ast.Name)}
        if bound or root in variable or root not in _bound_before(source, scope, loop.lineno):
            break
        found = loop
        loop = _loop_holding(scope, loop)
    return found


def _bound_before(source: Source, scope: ast.AST, line: int) -> set[str]:
    """The names bound in ``scope`` before ``line``: its parameters and earlier assignments."""
    arguments = getattr(scope, "args", None)
    names = {a.arg for a in (arguments.args + arguments.kwonlyargs)} if arguments else set()
    for s in source.statements(scope):
        if s.end_lineno < line:
            names |= {t.split(".")[0].split("[")[0] for t in targets(s)}
    return names


def _loop_holding(scope: ast.AST, inner: ast.stmt) -> ast.stmt | None:
    """The innermost loop of ``scope`` (not of a nested function) that holds the loop ``inner``."""
    holders = [n for n in _walk_scope(scope) if isinstance(n, (ast.For, ast.AsyncFor, ast.While))
               and n is not inner and n.lineno < inner.lineno and inner.end_lineno <= n.end_lineno]
    return max(holders, key=lambda n: n.lineno) if holders else None


_WHOLE = ("copy_", "zero_", "fill_", "detach_")  # replace every element, or cut the history


def _overwrites(statement: ast.stmt, name: str) -> bool:
    """Whether ``statement`` is ``name.copy_(...)``, ``name.zero_()``, ``name.fill_(...)`` or
    ``name.detach_()``: after it no gradient flows back into the history ``name`` had."""
    call = statement.value if isinstance(statement, ast.Expr) else None
    return isinstance(call, ast.Call) and isinstance(call.func, ast.Attribute) and \
        path_of(call.func.value) == name and call.func.attr in _WHOLE


def _first_of_run(source: Source, statement: ast.stmt, name: str) -> ast.stmt:
    """The first of the in-place calls on ``name`` (``state.detach_()``) that come before
    ``statement`` in its block, with only statements that do not name ``name`` between them
    (``new = torch.exp(-mu)``), else ``statement``: the copy goes before them all, so none of
    them changes the tensor a node saved."""
    siblings = next((block for node in ast.walk(source.tree)
                     for block in (getattr(node, f, None) for f in ("body", "orelse"))
                     if isinstance(block, list) and statement in block), [])
    first = statement
    for before in reversed(siblings[:siblings.index(statement)] if siblings else []):
        call = before.value if isinstance(before, ast.Expr) else None
        if isinstance(call, ast.Call) and isinstance(call.func, ast.Attribute) and \
                path_of(call.func.value) == name and call.func.attr.endswith("_"):
            first = before
        elif any(path_of(n) == name for n in ast.walk(before)) or \
                not isinstance(before, _SIMPLE):
            break  # (a statement that reads or binds it, or a block: the run ends)
    return first


def _part_reads(statement: ast.stmt, name: str) -> list[ast.expr]:
    """The parts of ``name`` (``x[t - 1]``) that ``statement``, a write into a part of
    ``name`` (``x[t] = ...``), reads; none for any other statement."""
    if not isinstance(statement, (ast.Assign, ast.AugAssign)) or not any(
            isinstance(t, ast.Subscript) and path_of(t.value) == name
            for t in getattr(statement, "targets", [getattr(statement, "target", None)])):
        return []
    return [n for n in ast.walk(statement.value)
            if isinstance(n, ast.Subscript) and path_of(n.value) == name]


def _written_into_a_copy(source: Source, statement: ast.stmt, name: str) -> list[Fix]:
    """A write into a part of ``name`` whose value reads ``name`` whole (``z[:, j] = eps[:, j]
    + torch.tanh(z @ a)``: the product saved ``z``, the write then changes it): the write goes
    into a copy under a new name, the value still reads the tensor saved, and ``name`` then
    holds the copy (``z_new = z.clone()``, ``z_new[:, j] = ...``, ``z = z_new``)."""
    target = statement.targets[0] if isinstance(statement, ast.Assign) and \
        len(statement.targets) == 1 else getattr(statement, "target", None)
    if not (isinstance(statement, (ast.Assign, ast.AugAssign)) and
            isinstance(target, ast.Subscript) and path_of(target.value) == name and
            statement.lineno == statement.end_lineno):
        return []
    parts = {id(n.value) for n in ast.walk(statement.value) if isinstance(n, ast.Subscript)}
    if not [n for n in source.reads(statement.value, name) if id(n) not in parts]:
        return []  # only parts read (x[t] = f(x[t - 1])): the copies of those parts do
    taken = {n.id for n in ast.walk(source.scope_at(statement.lineno)) if isinstance(n, ast.Name)}
    copy = name.rsplit(".", 1)[-1].rstrip("]").replace("[", "_").replace('"', "")
    copy = next(f"{copy}_new{n or ''}" for n in range(100) if f"{copy}_new{n or ''}" not in taken)
    indent = source.indent(statement.lineno)
    plan = Plan(source).replace_span(target.value, copy)
    plan.before(statement.lineno, f"{indent}{copy} = {name}.clone()")
    plan.after(statement.lineno, f"{indent}{name} = {copy}")
    return one_fix("the write goes into a copy under a new name, which then takes the old "
                   "name: the value written still reads the tensor the node saved, unchanged; "
                   "the result is the same numbers", plan)
