"""The edits for losses of one forward that a loop backpropagates in turn.

``for name, loss in losses.items(): (weights[name] * loss).backward()``: the first pass frees
the shared part of the graph that the second loss needs. Two edits keep the gradients the loop
means (each weight gets the sum of what every loss gives it):

* one backward of the summed losses, in place of the loop
  (``(sum(weights[name] * loss for name, loss in losses.items())).backward()``), offered only
  when nothing after the loop reads its loop variables;
* each backward keeping the graph for the next (``retain_graph=True``), offered only when the
  loop's body is that one backward (no optimizer step, no in-place write between two passes).

Nothing is offered when the loop holds more than the backward, or its lines are not plain.
"""

from __future__ import annotations

import ast

from ..source.backward_calls import backward_subject, scaled_target
from ..source.edits import Plan
from ..source.source_file import Source

SUMMED = ("one backward of the summed losses in place of the loop: the shared part gets the sum "
          "of every loss's gradient")
RETAINED = ("each backward in the loop keeps the graph for the next: the same gradients as one "
            "backward of the sum up to round-off, accumulated in turn; the graph goes when its "
            "losses do")


def loop_in_turn(source: Source, statement: ast.stmt, call: ast.Call) -> ast.For | None:
    """The ``for`` loop whose whole body is the failing backward ``statement``, on a loss taken
    from the loop's collection (scaled or not): None for any other loop."""
    loop = source.loop_of(statement)
    if not isinstance(loop, ast.For) or loop.orelse or len(loop.body) != 1 or \
            loop.body[0] is not statement:
        return None
    subject = backward_subject(call)
    names = {n.id for n in ast.walk(loop.target) if isinstance(n, ast.Name)}
    if subject is None or not scaled_target(subject, names):
        return None
    plain = isinstance(statement, ast.Expr) and statement.value is call and \
        statement.lineno == statement.end_lineno and loop.iter.end_lineno == loop.lineno
    return loop if plain else None


def in_turn(source: Source, statement: ast.stmt, call: ast.Call) -> list[tuple[str, Plan]]:
    """The edits (what the fixed program computes, its plan) for a backward in such a loop,
    the first choice first; empty when the failing call is not in one."""
    loop = loop_in_turn(source, statement, call)
    if loop is None:
        return []
    found = []
    if not _read_after(source, loop):
        found.append((SUMMED, _summed(source, loop, statement, backward_subject(call))))
    if not any(k.arg in ("retain_graph", "create_graph") for k in call.keywords) and \
            not call.args:
        found.append((RETAINED, with_retained_graph(source, call)))
    return found


def _summed(source: Source, loop: ast.For, statement: ast.stmt, subject: ast.expr) -> Plan:
    """The loop's lines replaced by its backward, of the sum over the loop's collection."""
    line = source.text(statement.lineno).encode()
    total = (f"sum({source.segment(subject)} for {source.segment(loop.target)} "
             f"in {source.segment(loop.iter)})")
    new = (line[:subject.col_offset] + total.encode() + line[subject.end_col_offset:]).decode()
    text = source.indent(loop.lineno) + new.lstrip()
    return Plan(source).replace(loop.lineno, text).replace(statement.lineno, None)


def with_retained_graph(source: Source, call: ast.Call) -> Plan:
    """``retain_graph=True`` added to the backward call."""
    line = source.text(call.end_lineno).encode()
    close = call.end_col_offset - 1
    head = line[:close].decode().rstrip()
    head += "" if head.endswith("(") else ", "
    return Plan(source).replace(call.end_lineno, head + "retain_graph=True" + line[close:].decode())


def _read_after(source: Source, loop: ast.For) -> bool:
    """Whether a name the loop binds is read after the loop in its function (the summed form
    would no longer bind it)."""
    scope = source.scope_at(loop.lineno)
    names = {n.id for n in ast.walk(loop.target) if isinstance(n, ast.Name)}
    return any(isinstance(n, ast.Name) and n.id in names and isinstance(n.ctx, ast.Load)
               and n.lineno > loop.end_lineno for n in ast.walk(scope))
