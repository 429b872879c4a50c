"""The in-place error where a weight changed between the forward and the backward: the loss
built again after the write.

* a weight the program writes in place between the forward and the backward (a sharpness-aware
  first step): the loss built again right after the statement that writes it, or that calls the
  function that does;
* an optimizer's ``step()`` between the forward and a backward through its graph: the edit
  builds the loss again after the step, with every value on the way that carries the graph the
  step changed (``q = critic(...)``, then ``actor_loss = -q.mean()``) and every value the loss
  reads that is made from one built again (a penalty from the forward's second output). Where
  the step comes later in a loop, the carrier is built again where it enters; where the two
  gradients are meant from one graph, the step moves instead
  (:mod:`autograd_lens.fixes.simultaneous`).

What the recording says of the write (:func:`_write`) is read here and by the rule of the
program's own write (:mod:`autograd_lens.fixes.inplace_writes`). See
:mod:`autograd_lens.fixes.rules` for what a rule reads and returns.
"""

from __future__ import annotations

import ast
from typing import Any

from ..source.edits import Plan
from ..source.source_file import Source, path_of, targets
from .rules import Case, Fix, failed_call, one_fix, receiver, recompute
from .simultaneous import (one_graph_two_gradients, step_after_for_the_next, step_moved_after,
                           steps_after_the_loop)


def _write(case: Case) -> Any:
    """The write: the finding's (recorded, when the replay recorded it), else the first
    carrier's."""
    return case.write or (case.carriers[0].write if case.carriers else None)


def after_the_step(case: Case) -> list[Fix]:
    """A step between the forward and this backward: build again, right after the step, every
    value of the step's function that carries the changed graph and that the loss is made from;
    or, where the step comes later in a loop, build the carrier again where it enters."""
    write, failed = _write(case), failed_call(case)
    if write is None or failed is None or write.how != "step" or not write.line:
        return []
    source, statement, call = failed
    root = receiver(call)
    if write.file != source.file or source.scope_at(write.line) is not \
            source.scope_at(statement.lineno):  # backward runs in a function called from there
        source = Source.read(write.file)
        statement = source.statement_at(write.reached) if source and write.reached else None
        root = None
    step = source.statement_at(write.line) if statement is not None else None
    if step is None or source.scope_at(step.lineno) is not source.scope_at(statement.lineno):
        return []
    if step.lineno > statement.lineno:  # the step comes later in a loop: the next turn
        return _carrier_rebuilt(case, source) + one_fix(
            "every player's gradient comes from the one graph, before any weight moves: the "
            "steps run after the loop, as updates taken at the same time",
            steps_after_the_loop(source, step, statement))
    if one_graph_two_gradients(source, step, statement, call):  # both from one graph
        return one_fix("both gradients come from the one graph, before either weight moves: the "
                       "step runs after the second gradient, as updates taken at the same time",
                       step_moved_after(source, step, statement))
    copies = _built_before(source, step, statement, root, set(write.carrying))
    if not copies:  # built in another function: one forward's two losses, in turn
        return one_fix("the step runs after this backward, which takes gradients only for the "
                       "weights of the optimizer that steps after it: both losses' gradients "
                       "come from the one forward, before either weight moves, and the moved "
                       "step's gradient is the first loss's alone, as before",
                       step_after_for_the_next(source, step, statement, call))
    return one_fix("the loss is built again after the step, from the weights as the step left "
                   "them: its backward goes through a new graph",
                   _moved_after(source, _last_step(source, step, statement), copies))


def _carrier_rebuilt(case: Case, source: Source) -> list[Fix]:
    """The first carrier built again where it enters, from the weights as the step left them."""
    carrier = case.carriers[0] if case.carriers else None
    entry = source.statement_at(carrier.line) if carrier and carrier.file == source.file else None
    if entry is not None and not source.reads(entry, carrier.name):
        entry = None  # read in a loop's header (preds.split(...)): built again, unread
    return one_fix("the carrier is built again where it enters, from the weights as the "
                   "step left them", recompute(source, carrier.name, entry)
                   if entry is not None and carrier.kind != "written" else None)


def _last_step(source: Source, step: ast.stmt, failed: ast.stmt) -> ast.stmt:
    """The last ``X.step()`` statement of ``step``'s block before ``failed`` (another
    optimizer's step after the one recorded, ``qf2_optimizer.step()`` after
    ``qf1_optimizer.step()``, changes weights the loss went through as well), else ``step``."""
    later = [s for s in source.block_of(step) if step.lineno < s.lineno and
             s.end_lineno < failed.lineno and
             isinstance(s, ast.Expr) and isinstance(s.value, ast.Call) and
             isinstance(s.value.func, ast.Attribute) and s.value.func.attr == "step"]
    return later[-1] if later else step


def _built_after_writer(case: Case, source: Source, statement: ast.stmt) -> list[Fix]:
    """A weight the program trains and writes in place between the forward and the failing
    backward (a sharpness-aware first step that nudges every weight): the loss, and every value it is made
    from that carries the graph, built again right after the statement of the failing function
    that writes it (the write itself, or the call of the function that holds it), so its
    backward goes through the weights as the write left them."""
    write, failed = _write(case), failed_call(case)
    if failed is None:
        return []
    fsource, fstatement, call = failed
    scope = fsource.scope_at(fstatement.lineno)
    if write.file == fsource.file and fsource.scope_at(write.line) is scope:
        writer = [s for s in fsource.statements(scope) if s.lineno <= write.line <= s.end_lineno
                  and s.end_lineno < fstatement.lineno and _encloses(fsource, s, fstatement)]
    else:  # the write is in a function the failing one calls, by name, before the backward
        writer = [s for s, _ in fsource.calls(scope, (write.function,))
                  if s.end_lineno < fstatement.lineno and _encloses(fsource, s, fstatement)]
    if not writer or write.function in ("", "<module>") and write.file != fsource.file:
        return []
    anchor = writer[-1]
    copies = _built_before(fsource, anchor, fstatement, receiver(call), set(write.carrying))
    return one_fix("the loss is built again after the weights are written, from the weights as "
                   "the write left them: its backward goes through a new graph",
                   _moved_after(fsource, anchor, copies)) if copies else []


def _moved_after(source: Source, anchor: ast.stmt, copies: list[ast.stmt]) -> Plan:
    """``copies`` put again right after ``anchor``, at its indentation."""
    return Plan(source).after(anchor.end_lineno,
                              *reindented(source, copies, source.indent(anchor.lineno)))


def reindented(source: Source, copies: list[ast.stmt], indent: str) -> list[str]:
    """The lines of ``copies``, in order, moved to the indentation ``indent``."""
    moved = []
    for copy in copies:
        old = source.indent(copy.lineno)
        lines = [source.text(n) for n in range(copy.lineno, copy.end_lineno + 1)]
        moved += [indent + text[len(old):] if text.startswith(old) else text for text in lines]
    return moved


def _built_before(source: Source, step: ast.stmt, failed: ast.stmt, root: str | None,
                  carrying: set[str]) -> list[ast.stmt]:
    """The assignments before ``step`` (in its function, in blocks that hold it) of the values
    the failing backward's loss is made from and that carry the changed graph, in source order."""
    scope = source.scope_at(step.lineno)
    wanted = {root} if root else {n for n in carrying if source.reads(failed, n)}
    between = [s for s in source.statements(scope) if step.end_lineno < s.lineno < failed.lineno]
    for node in reversed(between):  # built after the step already (surely), from what?
        if wanted & set(targets(node)) and _encloses(source, node, failed):
            wanted -= set(targets(node))
            wanted |= {n for n in carrying if source.reads(node, n)}
    copies = []
    for node in reversed([s for s in source.statements(scope) if s.end_lineno < step.lineno]):
        hit = wanted & set(targets(node))
        if not hit:
            continue
        if not isinstance(node, ast.Assign) or not _encloses(source, node, step):
            return []
        copies.insert(0, node)
        wanted -= hit
        wanted |= {n for n in carrying if source.reads(node, n)}
    return _reading_rebuilt(source, step, copies)


def _reading_rebuilt(source: Source, step: ast.stmt, copies: list[ast.stmt]) -> list[ast.stmt]:
    """``copies`` with every assignment between the first of them and ``step`` (in blocks that
    hold the step) that reads a value built again and whose value a copy reads
    (``prior_loss = kl(prior, ...)``, read by ``loss2``, after ``out, series, prior =
    model(x)``): built again too, in source order, else its graph is the stepped one."""
    if not copies:
        return copies
    scope = source.scope_at(step.lineno)
    chosen = {id(c) for c in copies}
    while True:
        rebuilt = {t for c in copies for t in targets(c)}
        added = [s for s in source.statements(scope)
                 if copies[0].lineno < s.lineno and s.end_lineno < step.lineno and
                 id(s) not in chosen and isinstance(s, ast.Assign) and
                 _encloses(source, s, step) and any(source.reads(s, n) for n in rebuilt) and
                 any(source.reads(c, t) for c in copies if c.lineno > s.lineno
                     for t in targets(s))]
        if not added:
            return copies + _entries_stored(source, step, copies, chosen)
        chosen |= {id(s) for s in added}
        copies = sorted(copies + added, key=lambda s: s.lineno)


def _entries_stored(source: Source, step: ast.stmt, copies: list[ast.stmt],
                    chosen: set[int]) -> list[ast.stmt]:
    """The statements between the last of ``copies`` and ``step`` (in blocks that hold it) that
    store an entry into a container a copy builds again (``losses['d'] = ...`` after ``losses,
    out = model(x)``): stored again after it, or the container built again would lack them."""
    rebuilt = {t for c in copies for t in targets(c)}
    return [s for s in source.statements(source.scope_at(step.lineno))
            if copies[-1].end_lineno < s.lineno and s.end_lineno < step.lineno and
            id(s) not in chosen and isinstance(s, ast.Assign) and _encloses(source, s, step) and
            all(isinstance(t, ast.Subscript) and path_of(t.value) in rebuilt
                for t in s.targets) and
            not any(isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) and
                    n.func.attr in ("backward", "step") for n in ast.walk(s.value))]


def _encloses(source: Source, node: ast.stmt, step: ast.stmt) -> bool:
    """Whether ``node`` runs whenever ``step`` does: its block holds the step's."""
    parents = {id(c): p for p in ast.walk(source.scope_at(step.lineno))
               for c in ast.iter_child_nodes(p)}
    holder = parents.get(id(node))
    at = parents.get(id(step))
    while at is not None:
        if at is holder:
            return True
        at = parents.get(id(at))
    return False
