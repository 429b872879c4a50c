"""The edit for a state carried from one step into the next: detached where the step reads it.

A hidden state (``out, (h, c) = lstm(x, (h, c))``), a module's cached tensor, the entries of a
dict (or list) of states that the step hands on whole, the object a step picks from a list of
them (``sensor = sensors[step % 2]``): the step takes in the value the previous step left, with
that step's graph. The edit detaches it just before the step reads it (truncated
backpropagation through time for a recurrent state: each batch's backward stops at the state it
was handed), with every other name of it that the same statement reads back, the other cached
tensors of the same object and the values passed in the same role. Where the step
differentiates with respect to a list of weights it steps by hand, they become new leaves where
they are stored (:mod:`autograd_lens.fixes.leaf_lists`); where it enters at a cache's guard
(``if self._table is None:``), the cache is filled again in every call that records a graph; an
attribute that another method stores and a third one reads is also read detached where it
enters. No edit where a detach would do harm: a value detached already, the failing call's own
loss, a global the function only reads, a value computed once. Where in the loop the detach
goes: :mod:`autograd_lens.fixes.detach_place`. See :mod:`autograd_lens.fixes.rules` for what a
rule reads and returns.
"""

from __future__ import annotations

import ast
import re
from typing import Any

from ..source.edit_guards import already_detached, bound_elsewhere, computed_once
from ..source.edits import Plan
from ..source.source_file import Source, is_none_test, path_of, targets
from ..source.backward_calls import backward_subject
from .same_role import same_role
from .state_start import learned_start
from .leaf_lists import differentiated, entry_of, leaves_where_stored
from .detach_place import _after_stores, _before_fill, _before_steps, _chunk_end
from .detached_reads import _undetached
from .rules import Case, Fix, detach_lines, failed_call, one_fix, top_carrier, with_helper


_TBPTT = ("truncated backpropagation through time: each batch's backward stops at the state it "
          "was handed, whose values still flow forward")


def detach_state(case: Case, note: str = _TBPTT) -> list[Fix]:
    """Hidden state: detach the carried state just before the step reads it; every name of it
    that the same statement reads back (``out, (h, c) = lstm(x, (h, c))``: both h and c).
    ``note``: what the fixed program computes (truncated backpropagation for a recurrent
    state)."""
    carrier, source = top_carrier(case)
    statement = source.statement_at(carrier.line) if source else None
    if statement is None:
        return []
    if isinstance(statement, ast.If) and _fill_test(source, statement.test, carrier.name):
        return _fill_while_training(source, statement, carrier.name)  # it enters at the guard
    picked = _picked_alias(source, statement, carrier)
    if picked:  # ``sensor = sensors[step % 2]``: the state detached as the step picks it
        return one_fix(note, Plan(source).after(statement.end_lineno, *detach_lines(
            source, picked, carrier.form, source.indent(statement.lineno))))
    path = source.as_written(statement, carrier.name)  # states["north"] read as states[name]
    form = carrier.form
    weights = entry_of(path)  # (of the entry: a list of weights differentiated is one)
    whole = _handed_whole(source, statement, carrier, path)
    if whole:  # every entry of the dict (or list), as the step hands it on whole: the entry
        path, form = carrier.shown, whole  # may not exist yet, and the others hold graphs too
    if weights and differentiated(source, source.scope_at(statement.lineno), weights):
        return one_fix("each step differentiates with respect to the stepped weights as new "
                       "leaves; the step's graph ends where they are stored",
                       leaves_where_stored(source, statement, weights))
    if already_detached(source, statement, path):
        return []  # a detach before a detach: the old graph came in some other way
    if _backwarded_here(case, statement, path):
        return []  # the failing call's own loss: detached, its backward would train nothing
    if bound_elsewhere(source, statement.lineno, path):
        return []  # a global the function only reads: a detach there would leave it unbound
    if _bound_inside(statement, path):
        return []  # [preds[i] for i in keys]: no such i before the statement
    if computed_once(source, path):
        return []  # detached, what computes it once would never be trained
    # (a list of values handed on whole is read as it is where it enters, whichever statement
    # of the loop filled it)
    fill = statement if whole == "list" else _before_fill(source, path, statement)
    at = _before_steps(source, fill, case)
    if learned_start(source, path, at):  # detached after the store, not at the top
        return _after_stores(case, source, path, at)
    chunk = _chunk_end(source, at, case)  # detached once a chunk, after its backward
    indent = source.indent((chunk or at).lineno)
    lines = detach_lines(source, path, form, indent)
    for other in case.carriers[1:]:
        if (other.file, other.line) == (carrier.file, carrier.line) and \
                other.name != carrier.name and source.reads(statement, other.name) and \
                (other.name in targets(statement) or
                 other.entry == carrier.entry == "read_first" and "." not in other.name and
                 "[" not in other.name):  # a second state the same statement reads first
            lines += detach_lines(source, other.name, other.form, indent)
        elif _same_object(source, carrier, other):  # self._kvectors, then self._influence
            lines += detach_lines(source, other.name, other.form, indent)
    roles = same_role(source, statement, path)
    for other in roles:  # fake_B, then fake_A, into one function
        lines += detach_lines(source, other, carrier.form, indent)
    kept = "." in carrier.name and source.statement_at(fill.lineno) is not statement
    return _fixes(roles, kept, note, carrier, source, statement, at, lines, chunk) + \
        (_fill_while_training(source, fill, path) if kept else []) + \
        (_read_detached(source, statement, path) if "." in path and not roles else [])


def _handed_whole(source: Source, statement: ast.stmt, carrier: Any, path: str) -> str:
    """The form of the container (``"dict"``, ``"list"``) when the carrier is an entry under a
    string key of a dict (``states["enc"]``, shown as ``states``), or an entry of a list by its
    index (``outputs[0]``), that the statement where it enters does not read, but hands on whole
    (``out, states = model(x, states)``; not ``states[k]``, nor ``states.items()``): a function
    reads the entries, by keys of its own; else ""."""
    container = carrier.shown
    if not container or source.reads(statement, path):
        return ""
    keyed = re.fullmatch(rf"{re.escape(container)}\[(['\"]).*\1\]", carrier.name)
    indexed = carrier.origin == "list" and \
        re.fullmatch(rf"{re.escape(container)}\[\d+\]", carrier.name)
    if not keyed and not indexed:
        return ""
    parts = {id(n.value) for n in ast.walk(statement) if isinstance(n, (ast.Subscript,
                                                                         ast.Attribute))}
    whole = any(id(read) not in parts for read in source.reads(statement, container))
    return ("dict" if keyed else "list") if whole else ""


def _picked_alias(source: Source, statement: ast.stmt, carrier: Any) -> str:
    """The name the recording gives the carrier (``sensor.offset`` for ``sensors[0].offset``)
    when the statement where it enters binds that name's object from the carrier's container
    (``sensor = sensors[step % 2]``): each step's object, whichever entry it is; else ""."""
    alias, name = carrier.shown, carrier.name
    if not alias or "[" in alias or "." not in alias or "[" not in name or \
            not isinstance(statement, ast.Assign) or len(statement.targets) != 1:
        return ""
    bound = alias.rsplit(".", 1)[0]
    container = name.split("[")[0]
    value = statement.value
    return alias if targets(statement) == [bound] and isinstance(value, ast.Subscript) and \
        path_of(value.value) == container and \
        alias.rsplit(".", 1)[1] == name.rsplit(".", 1)[-1] else ""


def _read_detached(source: Source, statement: ast.stmt, path: str) -> list[Fix]:
    """An attribute that another method stores and a third one also reads: read detached where
    it enters, the object keeping its value with its graph for that other reader (a
    generator's loss after a critic's)."""
    reads = _undetached(source, statement, path)
    if not reads or len(source.reads(statement, path)) != len(reads):
        return []
    here = source.scope_at(statement.lineno)
    functions = [n for n in ast.walk(source.tree) if isinstance(n, (ast.FunctionDef,
                                                                     ast.AsyncFunctionDef))]
    if source.stores(here, path) or not any(source.stores(f, path) for f in functions) or \
            not any(f is not here and not source.stores(f, path) and
                    any(source.reads(st, path) for st in source.statements(f))
                    for f in functions):
        return []  # stored where it is read (a recurrence, a cache), or no other reader
    plan = Plan(source)
    for read in reads:
        plan.replace_span(read, f"{path}.detach()")
    return one_fix("read here without its graph: this loss treats the kept value as data, and "
                   "the object still holds it with its graph for its other readers", plan)


def _fixes(roles: Any, kept: bool, note: str, carrier: Any, source: Source,
           statement: ast.stmt, at: ast.stmt, lines: list[str],
           chunk: ast.stmt | None = None) -> list[Fix]:
    plan = Plan(source).after(chunk.end_lineno, *lines) if chunk is not None else \
        Plan(source).before(at.lineno, *lines)
    return one_fix("each value the earlier backward went through comes in as data: the calls "
                   "that read them train only what comes after them" if roles else
                   "the value kept from an earlier call comes in without its graph, and a value "
                   "filled in this call keeps it" if kept else
                   note if note is not _TBPTT or "." not in carrier.name else
                   "the value kept from an earlier call comes in as a constant; this call's own "
                   "value keeps its graph",
                with_helper(plan, source, statement.lineno, carrier.form) if lines else None)


def _fill_while_training(source: Source, fill: ast.stmt, path: str) -> list[Fix]:
    """A cache filled once (``if self._table is None:``): filled again in every call that
    records a graph, so each call's value has its own graph and what it is computed from still
    trains; kept across calls only where no graph is recorded (under ``torch.no_grad()``)."""
    test = getattr(fill, "test", None)
    if not _fill_test(source, test, path):
        return []
    if not _binds_torch(source):
        return []  # the condition names torch: only where the module binds it
    return one_fix("the cached value is computed again in every call that records a graph, so "
                   "what it is computed from still trains; it is kept across calls only under "
                   "torch.no_grad()",
                   Plan(source).replace_span(
                       test, f"{source.segment(test)} or torch.is_grad_enabled()"))


def _read_without_grad(source: Source, statement: ast.stmt, path: str) -> list[Fix]:
    """A cache read in the branch of ``if ... path is not None:`` (alone or one of the
    conditions of an ``and``) whose ``else`` computes it: read only where no graph is recorded
    (under ``torch.no_grad()``), so every call that records one computes it again, and what it
    is computed from still trains."""
    guard = next((node for node in ast.walk(source.tree) if isinstance(node, ast.If) and
                  any(s is statement for s in node.body)), None)
    test = guard.test if guard is not None else None
    parts = test.values if isinstance(test, ast.BoolOp) and isinstance(test.op, ast.And) \
        else [test]
    if guard is None or not guard.orelse or test.lineno != test.end_lineno or not any(
            isinstance(p, ast.Compare) and len(p.ops) == 1 and isinstance(p.ops[0], ast.IsNot)
            and path_of(p.left) == path and isinstance(p.comparators[0], ast.Constant) and
            p.comparators[0].value is None for p in parts) or not _binds_torch(source):
        return []
    return one_fix("the cached value is read only under torch.no_grad(); every call that "
                   "records a graph computes it again, so what it is computed from still trains",
                   Plan(source).replace_span(
                       test, f"{source.segment(test)} and not torch.is_grad_enabled()"))


def _binds_torch(source: Source) -> bool:
    """Whether the module's top level binds ``torch`` (``import torch``)."""
    return any(isinstance(node, ast.Import) and any(a.name == "torch" and a.asname is None
                                                    for a in node.names)
               for node in source.tree.body)


def _fill_test(source: Source, test: Any, path: str) -> bool:
    """Whether ``test`` is a cache's guard for ``path``: ``path is None``, or, for an entry
    (``self.ab["cpu"]``), its key missing from the container (``key not in self.ab``), alone
    or as one of the conditions of an ``or`` (``... or self.training``)."""
    if isinstance(test, ast.BoolOp) and isinstance(test.op, ast.Or):
        return any(_fill_test(source, value, path) for value in test.values)
    if not (isinstance(test, ast.Compare) and len(test.ops) == 1):
        return False
    if is_none_test(test, path):
        return True
    return isinstance(test.ops[0], ast.NotIn) and "[" in path and \
        source.segment(test.comparators[0]) == path.split("[")[0]


def _bound_inside(statement: ast.stmt, path: str) -> bool:
    """Whether ``path`` (``preds[i]``) names a variable that a comprehension of ``statement``
    binds (``[preds[i] for i in keys]``): a line before the statement would read another one."""
    try:
        names = {n.id for n in ast.walk(ast.parse(path, mode="eval")) if isinstance(n, ast.Name)}
    except SyntaxError:
        return False
    bound = {t.id for n in ast.walk(statement) if isinstance(n, ast.comprehension)
             for t in ast.walk(n.target) if isinstance(t, ast.Name)}
    return bool(names & bound)


def _backwarded_here(case: Case, statement: ast.stmt, path: str) -> bool:
    """Whether ``statement`` is the failing call's and ``path`` the loss it backwards."""
    failed = failed_call(case)
    if failed is None or failed[1] is not statement and (
            failed[0].file, failed[1].lineno) != (case.carriers[0].file, statement.lineno):
        return False
    subject = backward_subject(failed[2])
    return subject is not None and path_of(subject) == path


def _same_object(source: Source, carrier: Any, other: Any) -> bool:
    """Whether ``other`` is another attribute of the carrier's object that the same function
    reads later, with an old graph too (a second cached tensor): it needs its own detach."""
    return other.file == carrier.file and other.kind == carrier.kind and other.line >= \
        carrier.line and "." in other.name and other.name != carrier.name and \
        other.name.split(".")[0] == carrier.name.split(".")[0] and \
        source.scope_at(other.line) is source.scope_at(carrier.line)
