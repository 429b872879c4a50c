"""Where in the loop a carried state's detach goes.

Detached just before the statement that reads it, a state read inside an inner loop over time
steps would lose its graph between the steps too, and a value the step fills when empty would
lose its own step's graph. The detach goes before the ``if`` that may fill it (a cache filled
when empty: only an old value is detached); before the inner loop over the steps, once a batch;
after the ``if`` of the loop that calls backward once a chunk of steps (``if (t + 1) % k == 0:
loss.backward()``), once a chunk; and, for a state whose first value is learned
(:mod:`autograd_lens.fixes.state_start`), where the loop stores the next state, after the
backward, so the learned first state still trains.
"""

from __future__ import annotations

import ast

from ..source.edits import Plan
from ..source.source_file import Source, is_none_test
from .state_start import stores_after
from .rules import Case, Fix, detach_lines, failed_call, one_fix


def _chunk_end(source: Source, at: ast.stmt, case: Case) -> ast.stmt | None:
    """Where the state is read in the loop that calls backward, but backward is called only in
    an ``if`` of that loop after the read (``if (t + 1) % k == 0: loss.backward()``, once a
    chunk of steps): the last statement of that ``if``'s body, after which the state is
    detached, once a chunk (before every read would cut the graph between the chunk's steps);
    None otherwise."""
    failed = failed_call(case)
    loop = source.loop_of(at)
    if failed is None or loop is None or failed[0].file != source.file or \
            source.loop_of(failed[1]) is not loop:
        return None
    block = next((s for s in loop.body if s.lineno <= failed[1].lineno <= s.end_lineno), None)
    if not isinstance(block, ast.If) or block.lineno <= at.end_lineno or block.orelse or \
            not any(s.lineno <= failed[1].lineno <= s.end_lineno for s in block.body) or \
            isinstance(block.body[-1], (ast.Break, ast.Continue, ast.Return, ast.Raise)):
        return None  # (nothing after a jump would run)
    return block.body[-1]


def _after_stores(case: Case, source: Source, path: str, at: ast.stmt) -> list[Fix]:
    """The carried state detached where the loop stores the next one, after the backward; the
    learned first state keeps its graph into the first step."""
    failed = failed_call(case)
    stores = stores_after(source, path, at, failed[1] if failed and failed[0].file ==
                          source.file else None)
    if not stores:
        return []
    plan = Plan(source)
    for store in stores:
        lines = detach_lines(source, path, case.carriers[0].form, source.indent(store.lineno))
        if not lines:
            return []
        plan.after(store.end_lineno, *lines)
    return one_fix("truncated backpropagation through time: the next step starts from the "
                   "stored state without its graph, and the learned first state still trains",
                   plan)


def _before_fill(source: Source, name: str, statement: ast.stmt) -> ast.stmt:
    """The ``if`` before ``statement``, in its block, that may fill ``name`` (a cache filled
    when empty: it stores ``name``, or it tests ``name is None`` and calls what fills it): the
    detach goes before it, so a value it fills keeps its graph for this step's
    own backward, and only an old value is detached; else ``statement`` itself."""
    scope = source.scope_at(statement.lineno)
    block = next((b for node in ast.walk(scope) for b in (getattr(node, "body", None),
                  getattr(node, "orelse", None)) if isinstance(b, list) and
                  any(s is statement for s in b)), [])
    for store in source.stores(scope, name):
        holder = next((s for s in block if s.lineno <= store.lineno <= s.end_lineno and
                       s.end_lineno < statement.lineno), None)
        if isinstance(holder, ast.If):
            return holder
    for holder in block:  # filled by a method it calls: ``if self.table is None: self.build()``
        if isinstance(holder, ast.If) and holder.end_lineno < statement.lineno and \
                is_none_test(holder.test, name):
            return holder
    return statement


def _before_steps(source: Source, at: ast.stmt, case: Case) -> ast.stmt:
    """Where the state is read inside an inner loop over time steps (``for x in chunk:``) of
    the loop that calls backward (or of a function that calls backward after that loop, once a
    batch), the loop over the steps: the detach goes before it, once a batch, not before every
    step (that would cut the graph between steps too)."""
    failed = failed_call(case)
    if failed is None or failed[0].file != source.file or \
            source.scope_at(failed[1].lineno) is not source.scope_at(at.lineno):
        return at
    batch = source.loop_of(failed[1])
    inner = source.loop_of(at)
    if inner is None or inner is batch:
        return at
    if batch is None:  # a function called once a batch: before its outermost loop over steps
        return next(s for s in source.statements(source.scope_at(at.lineno))
                    if s.lineno <= at.lineno <= s.end_lineno and
                    isinstance(s, (ast.For, ast.AsyncFor, ast.While)))
    return next((s for s in batch.body if s.lineno <= at.lineno <= s.end_lineno and
                 s.lineno <= inner.lineno), at)
