"""The edits for a value kept from one step (or call) for a later one, which that step takes in
as a constant.

A value made from an earlier step's graph and kept for a later one (weights or targets computed
from predictions), a module's running value (``self.running_mean``, a membrane potential updated
in every call), a container a later step reads by index or key: the later step needs the value,
not the graph it was made with. A module's running value is stored without its graph after the
function's last store of it, with every other value the function keeps on the object beside it;
a value kept in a container, where the program puts it in (:mod:`autograd_lens.fixes.kept_stores`);
any other is detached where the step reads it, as a carried state is
(:mod:`autograd_lens.fixes.carried_state`), and said as what it is, a constant. Where the source
shows neither, it is stored without its graph just after the statement the replay recorded
making it: a cache another function fills when empty, a value made once, up front, outside every
loop. See :mod:`autograd_lens.fixes.rules` for what a rule reads and returns.
"""

from __future__ import annotations

import ast
import dataclasses
import re
from typing import Any

from ..source.edit_guards import returned_after
from ..source.edits import Plan
from ..source.source_file import Source, targets
from .kept_stores import detach_where_stored, read_by_key
from .carried_state import _fill_test, _fill_while_training, _read_without_grad, detach_state
from .rules import Case, Fix, detach_lines, failed_call, one_fix, top_carrier, with_helper


_CONSTANT = ("the kept value comes in without its graph: each step's backward stops at it, and its "
             "value still flows forward as a constant")


def detach_kept(case: Case) -> list[Fix]:
    """A value made from an earlier step's graph and kept for a later one (weights or targets
    made from predictions): detached where the step reads it, as a state is, and said as what
    it is, a constant, not a truncated recurrence."""
    entry = "[" in case.carriers[0].name if case.carriers else False
    return (_stored_by_key(case) if entry else []) or detach_state(case, _CONSTANT) or \
        _kept_where_made(case)  # made once, up front, as recorded: detached there


def _stored_by_key(case: Case) -> list[Fix]:
    """A container that a later step reads by index or key (``earlier[k]``): each value is
    stored detached where the program puts it in (none when the stores do not allow it)."""
    carrier, source = top_carrier(case)
    failed = failed_call(case)
    if source is None or failed is None:
        return []
    where, statement, _ = failed
    container = carrier.name.split("[")[0]
    if not read_by_key(where, container):
        return []
    return one_fix("each value is kept without its graph: a later step reads it by its index or "
                   "key as a constant", detach_where_stored(where, container, statement))


def detach_stored(case: Case) -> list[Fix]:
    """Module state: store the updated value without its graph (after the update), or, where
    the update is not in the same function, detach it where the step reads it; a cache read at
    its guard is filled again, or read only without grad, in every call that records a
    graph."""
    carrier, source = top_carrier(case)
    if source is None:
        return []
    guard = source.statement_at(carrier.line)
    if isinstance(guard, ast.If) and _fill_test(source, guard.test, carrier.name):
        return _fill_while_training(source, guard, carrier.name)  # it enters at a cache's guard
    read = _read_without_grad(source, guard, carrier.name) if guard is not None else []
    if read:
        return read  # read in a cache's branch
    stores = [s for s in source.stores(source.scope_at(carrier.line), carrier.name)
              if s.lineno >= carrier.line]
    if not stores and carrier.shown and "[" not in carrier.shown:  # stored under the name the
        # recorded statement gives it (``viewpoint_cam.pose = ...`` for ``cams[0].pose``)
        carrier = dataclasses.replace(carrier, name=carrier.shown)
        stores = [s for s in source.stores(source.scope_at(carrier.line), carrier.name)
                  if s.lineno >= carrier.line]
    if not stores:
        return detach_state(case, _CONSTANT) + _detached_where_made(case)
    plan, scope = Plan(source), source.scope_at(carrier.line)
    for other in _kept_with(case, carrier, source):  # running_mean and running_var: both
        # after the function's last store of it: the reads between its stores (a membrane
        # potential updated, read, then reset) are this call's own, with their graph
        last = [s for s in source.stores(scope, other.name) if s.lineno >= other.line][-1]
        if returned_after(source, last, other.name):
            return []  # stored detached, this call's own output would lose its graph
        lines = detach_lines(source, other.name, other.form, source.indent(last.lineno))
        if not lines:
            return []
        plan = with_helper(plan.after(last.end_lineno, *lines), source, last.lineno, other.form)
    return one_fix("the attribute keeps its running value without a graph: each call that "
                   "reads it takes it in as a constant, so no gradient flows through it from one "
                   "call into the next", plan)


def _detached_where_made(case: Case) -> list[Fix]:
    """Attributes another function stores when empty (a cache a property fills): each stored
    without its graph just after the statement the replay recorded storing it (``got``), for
    the first carrier and every other one stored in the same function (a mean and a covariance
    cache filled together)."""
    first = case.carriers[0] if case.carriers else None
    source = Source.read(first.got["file"]) if first is not None and first.got else None
    if source is None:
        return []
    scope = source.scope_at(first.got["line"])
    plan, done = Plan(source), set()
    for carrier in case.carriers:
        got, name = carrier.got, carrier.shown or carrier.name
        statement = source.statement_at(got["line"]) if got and got["file"] == source.file \
            else None
        if statement is None or name in done or "." not in name or "[" in name or \
                source.scope_at(statement.lineno) is not scope or \
                name not in targets(statement) or not _filled_when_empty(source, statement):
            continue
        lines = detach_lines(source, name, carrier.form, source.indent(statement.lineno))
        if lines:
            plan.after(statement.end_lineno, *lines)
            done.add(name)
    return one_fix("each kept value is stored without its graph where it is made: every call "
                   "that reads it takes it in as a constant", plan if done else None)


def _filled_when_empty(source: Source, statement: ast.stmt) -> bool:
    """Whether ``statement`` runs under an ``if`` of its function (a cache filled when empty,
    ``if self._alpha is None:``), not on every call or once in a constructor."""
    scope = source.scope_at(statement.lineno)
    return any(isinstance(node, ast.If) and node.lineno < statement.lineno <= node.end_lineno
               for node in source.statements(scope))


def _kept_with(case: Case, carrier: Any, source: Source) -> list[Any]:
    """The carrier, and every other carrier kept on an object that the same function reads and
    then stores again (a second running statistic): each needs its own detach."""
    scope, found = source.scope_at(carrier.line), [carrier]
    for other in case.carriers[1:]:
        if other.file == carrier.file and "." in other.name and other.name not in \
                {c.name for c in found} and source.scope_at(other.line) is scope and \
                any(s.lineno >= other.line for s in source.stores(scope, other.name)):
            found.append(other)
    return found


def _kept_where_made(case: Case) -> list[Fix]:
    """The carrier's tensor detached just after the statement that made it, as the replay
    recorded it (``carrier.got``), when that statement, outside every loop, assigns it to a
    plain name (the caller's name of a tensor handed to a function; the list, or the dict,
    whose every entry holds a freed graph); and so each later carrier made so, in that file."""
    first = _made_up_front(case.carriers[0]) if case.carriers else None
    if first is None:
        return []
    source, plan, names = first[0], Plan(first[0]), set()
    for found in [first] + [_made_up_front(c) for c in case.carriers[1:]]:
        if found is None or found[0].file != source.file or found[2] in names:
            continue
        _, statement, name, form = found
        lines = detach_lines(source, name, form, source.indent(statement.lineno))
        if lines:
            plan.after(statement.end_lineno, *lines)
            names.add(name)
    return one_fix("computed once and kept as a constant: the steps train only what comes "
                   "after it", plan if names else None)


def _made_up_front(carrier: Any) -> tuple | None:
    """(source, statement, name, form) of a carrier made by ``name = EXPR`` outside every loop
    (or held in what it assigns: ``data.feats["x"]`` made by ``data = make(...)``), as
    recorded (the statement that keeps it under its name, when another made its node); the
    form of a dict, for an entry read by a string key, of a list for an entry of one (recorded,
    or made by a list display); None for any other."""
    got = getattr(carrier, "kept", None) or getattr(carrier, "got", None)
    source = Source.read(got["file"]) if got else None
    statement = source.statement_at(got["line"]) if source else None
    name = carrier.shown or carrier.name
    if statement is None or source.loop_of(statement) is not None or \
            not isinstance(statement, ast.Assign) or len(statement.targets) != 1:
        return None
    target = statement.targets[0]  # a name, or one of a tuple's (``out, hidden = rnn(x)``)
    names = [target] if isinstance(target, ast.Name) else \
        [t for t in target.elts if isinstance(t, ast.Name)] \
        if isinstance(target, (ast.Tuple, ast.List)) else []
    if not any(re.match(rf"{n.id}(?![\w])", name) for n in names):
        return None  # (the name it assigns, or a path into what it holds: ``data.feats["x"]``)
    form = "list" if carrier.name.startswith(name + "[") and (
        isinstance(statement.value, (ast.List, ast.ListComp)) or carrier.origin == "list" and
        re.fullmatch(rf"{re.escape(name)}\[\d+\]", carrier.name)) else \
        "dict" if carrier.name.startswith(name + '["') else carrier.form
    return source, statement, name, form
