"""The edit rules: each pattern's fix computed as an edit of the program's own lines.

A rule reads what the diagnosis knows (the carriers: name, file, line and the form of the value,
see :class:`~autograd_lens.explain.carrier.Carrier`), the line of the backward that failed, and the
source. It returns :class:`Fix` es, the first choice first, each saying in words what the fixed
program computes. It returns nothing when the source does not show the edit plainly: an empty
answer is honest, a guessed edit is not.

This module holds what every rule uses: the case it reads, the fix it returns, the failing call
and the earlier one, a keyword added to a call, a line detached, a value computed again. The
rules about the order of calls (backward twice, two losses, ``autograd.grad`` then backward,
meta-learning) are in :mod:`~autograd_lens.fixes.call_order`. The rules about values that cross
from one step to the next are in :mod:`~autograd_lens.fixes.carried_state` (a state carried into
the next step), :mod:`~autograd_lens.fixes.kept_values` (a value kept for a later step, a module's
running value), :mod:`~autograd_lens.fixes.outside_loop` (a tensor computed before the loop),
:mod:`~autograd_lens.fixes.accumulated` (a running total, a growing list) and
:mod:`~autograd_lens.fixes.detached_reads` (a value read detached by the step that uses it); those
of the in-place error in :mod:`~autograd_lens.fixes.inplace_writes` (the program's own write) and
:mod:`~autograd_lens.fixes.built_again` (a weight changed between the forward and the backward).
"""

from __future__ import annotations

import ast
from dataclasses import dataclass
from typing import Any, Callable, Sequence

from ..source.backward_calls import NAMES, backward_subject
from ..source.edits import Edit, Plan
from ..source.source_file import Source, path_of
from ..source.source_writes import steps_between

BACKWARD = NAMES  # loss.backward(), and the frameworks' wrappers around it
GRAD = ("grad",)


@dataclass(frozen=True)
class Fix:
    """One way to fix the program: its edits and what the fixed program computes."""

    computes: str
    edits: tuple[Edit, ...]


@dataclass(frozen=True)
class Case:
    """What a rule may read: the carriers, most likely first, the failed call's line, and for
    the in-place error the write (where no carrier holds it: a step no name of the source
    reading led to)."""

    carriers: tuple[Any, ...]
    failed: tuple[str, int] | None = None
    write: Any = None


Rule = Callable[[Case], list[Fix]]


def detached(path: str, form: str) -> str | None:
    """``path`` without its graph, in the form of its value (None for an object)."""
    return {"tensor": f"{path}.detach()",
            "tuple": f"tuple(s.detach() for s in {path})",
            "namedtuple": f"{path}._make(s.detach() for s in {path})",  # keeps its fields
            "list": f"[s.detach() for s in {path}]",
            "dict": f"{{k: v.detach() for k, v in {path}.items()}}"}.get(form)


def detach_lines(source: Source, path: str, form: str, indent: str) -> list[str]:
    """The lines that detach ``path`` (guarded when the program also gives it None); for a
    nested tuple, with the function :func:`with_helper` defines."""
    value = f"{helper_name(source)}({path})" if form == "nested tuple" else detached(path, form)
    if value is None:
        return []
    if source.may_be_none(path):
        return [f"{indent}if {path} is not None:", f"{indent}    {path} = {value}"]
    return [f"{indent}{path} = {value}"]


def helper_name(source: Source) -> str:
    """A name for the recursive detaching function that the program does not use yet."""
    used = {getattr(n, "id", getattr(n, "name", None)) for n in ast.walk(source.tree)}
    name = "detach_all"
    while name in used:
        name += "_"
    return name


def with_helper(plan: Plan, source: Source, line: int, form: str) -> Plan:
    """For a nested tuple, define the recursive detaching function before the top-level
    statement (a loop, a function, a class) that holds ``line``."""
    if form != "nested tuple":
        return plan
    top = next(s for s in source.tree.body if s.lineno <= line <= s.end_lineno)
    first = min([top.lineno] + [d.lineno for d in getattr(top, "decorator_list", [])])
    name = helper_name(source)
    return plan.before(first, f"def {name}(state):",
                       '    """The state with every tensor detached, however its tuples nest."""',
                       f"    return tuple({name}(s) for s in state) if isinstance(state, tuple) "
                       "else state.detach()", "", "")


def one_fix(computes: str, plan: Plan | None) -> list[Fix]:
    edits = plan.edits() if plan is not None else []
    return [Fix(computes, tuple(edits))] if edits else []


def top_carrier(case: Case) -> tuple[Any, Source] | tuple[None, None]:
    for carrier in case.carriers:
        source = Source.read(carrier.file)
        if source is not None:
            return carrier, source
    return None, None


def failed_call(case: Case) -> tuple[Source, ast.stmt, ast.Call] | None:
    """The statement of the failing call, and the call (``X.backward()``, ``autograd.grad``)."""
    if case.failed is None:
        return None
    source = Source.read(case.failed[0])
    statement = source.statement_at(case.failed[1]) if source else None
    if statement is None:
        return None
    calls = [c for s, c in source.calls(source.scope_at(statement.lineno), BACKWARD + GRAD)
             if s is statement]
    return (source, statement, calls[-1]) if calls else None


def receiver(call: ast.Call) -> str | None:
    """``loss`` in ``loss.backward()``, and in a framework's ``accelerator.backward(loss)``
    (see :mod:`autograd_lens.source.backward_calls`)."""
    subject = backward_subject(call)
    return path_of(subject) if subject is not None else None


def earlier_call(source: Source, statement: ast.stmt, names: tuple[str, ...]) \
        -> tuple[ast.stmt, ast.Call] | None:
    """The last call of ``names`` before ``statement`` in its function, or of grad in a callee."""
    found = earlier_calls(source, statement, names)
    return found[-1] if found else None


def earlier_calls(source: Source, statement: ast.stmt, names: tuple[str, ...]) \
        -> list[tuple[ast.stmt, ast.Call]]:
    """Every call of ``names`` before ``statement`` in its function, or, without one there,
    of grad in a callee, in order."""
    scope = source.scope_at(statement.lineno)
    return [(s, c) for s, c in source.calls(scope, names) if s.end_lineno < statement.lineno] \
        or [(s, c) for s in source.statements(scope) if s.end_lineno < statement.lineno and
            names == GRAD for c in source.calls_within(s, names)]


def same_block(source: Source, first: ast.stmt, second: ast.stmt) -> bool:
    """Whether two statements sit in one block (one list of statements): deleting the first
    then never empties a block, and what runs the second runs the first too."""
    for node in ast.walk(source.scope_at(second.lineno)):
        for field in ("body", "orelse", "finalbody"):
            block = getattr(node, field, None)
            if isinstance(block, list) and any(s is second for s in block):
                return any(s is first for s in block)
    return False


def retain_crosses_a_step(source: Source, earlier: ast.stmt, statement: ast.stmt) -> bool:
    """Whether an optimizer's ``step()`` runs between the earlier call and the failing one:
    retaining the earlier call's graph would then meet weights changed in place."""
    return steps_between(source.file, earlier.end_lineno, statement.lineno)


def with_keyword(plan: Plan, source: Source, call: ast.Call, keyword: str,
                 value: str = "True") -> Plan | None:
    """``f(a, b)`` becomes ``f(a, b, keyword=True)`` (or ``=value``, on the call's last line)."""
    if any(k.arg == keyword for k in call.keywords):
        return None
    line = source.text(call.end_lineno).encode()
    close = call.end_col_offset - 1
    empty = not call.args and not call.keywords
    new = line[:close].decode().rstrip()
    new += ("" if empty or new.endswith(("(", ",")) else ", ") + f"{keyword}={value}" + \
        line[close:].decode()
    return plan.replace(call.end_lineno, new)


def recompute(source: Source, path: str, before: ast.stmt, old: Sequence[str] = ()) \
        -> Plan | None:
    """Copy the last assignment of ``path`` (in this function or, for a closure, around it)
    just before ``before``, with its indentation; and first that of each name in ``old`` (other
    carriers of a freed graph) that it reads, and so on, in the program's order: a value computed
    again from a carrier that still holds the freed graph would hold it too."""
    first = _last_store(source, path, before)
    if first is None:
        return None
    stores, todo = {first.lineno: first}, [first]
    while todo:
        store = todo.pop()
        for name in old:
            found = _last_store(source, name, before) if source.reads(store.value, name) \
                else None
            if found is not None and found.lineno not in stores:
                stores[found.lineno] = found
                todo.append(found)
    lines = [line for number in sorted(stores) for line in _copied(source, stores[number], before)]
    return Plan(source).before(before.lineno, *lines)


def recomputed(source: Source, path: str, before: ast.stmt) -> list[str] | None:
    """The lines :func:`recompute` puts before ``before`` (None: no such assignment, or one
    that only gives another name to a value)."""
    store = _last_store(source, path, before)
    return None if store is None else _copied(source, store, before)


def _last_store(source: Source, path: str, before: ast.stmt) -> ast.Assign | None:
    """The last assignment of ``path`` before ``before`` (in this function or, for a closure,
    around it); None when there is none, or it only gives another name to a value."""
    for scope in reversed(source.scopes_at(before.lineno)):
        stores = [s for s in source.stores(scope, path) if s.end_lineno < before.lineno
                  and isinstance(s, ast.Assign)]
        if stores:
            return None if _alias(source, scope, stores[-1], before) else stores[-1]
    return None


def _copied(source: Source, store: ast.stmt, before: ast.stmt) -> list[str]:
    """``store``'s lines, indented as ``before`` is."""
    indent, old = source.indent(before.lineno), source.indent(store.lineno)
    lines = [source.text(n) for n in range(store.lineno, store.end_lineno + 1)]
    if store.lineno == store.end_lineno:  # without its comment, which was about there
        lines = [old + source.segment(store)]
    return [indent + text[len(old):] if text.startswith(old) else text for text in lines]


def _alias(source: Source, scope: ast.AST, store: ast.Assign, before: ast.stmt) -> bool:
    """Whether ``store`` only gives another name to a value (``loss = outputs["loss"]``) whose
    own name is not assigned again before ``before``: copying it builds no new graph."""
    value = path_of(store.value)
    return value is not None and not any(
        store.end_lineno < s.lineno < before.lineno for s in source.stores(scope, value))
