"""The edits for a tensor computed outside the loop and read by every step.

Computed once before the loop (or outside a function called again and again, an optimizer's
closure, that only reads it), the tensor keeps the graph of that one computation, which the
first step's backward frees. The first edit computes it again at the top of the loop (or inside
the function, before it is read), so each step's backward goes through a new graph and also
trains what computes it; not when it reads a value the function computes once before the loop,
nor when it is the output, kept on purpose, of a network the loop calls again. The second keeps
it as a constant, detached just after its last assignment before the loop, with each other value
of the rollout assigned there only; not when it comes from an inner gradient step, whose outer
weights would then get no gradient through it. An entry of a dict made before the loop is
detached where the dict is made; a value the source shows neither way, just after the statement
the replay recorded making it; an attribute computed once when its object was built, stored as a
constant there (:mod:`autograd_lens.fixes.kept_values`). See :mod:`autograd_lens.fixes.rules` for
what a rule reads and returns.
"""

from __future__ import annotations

import ast
import re
from typing import Any

from ..source.edit_guards import from_inner_step, reads_kept_value, snapshot
from ..source.edits import Plan
from ..source.source_file import Source, is_none_test
from .kept_values import _kept_where_made, detach_stored
from .rules import Case, Fix, detach_lines, one_fix, recompute, recomputed, top_carrier, \
    with_helper


def recompute_inside(case: Case) -> list[Fix]:
    """Outside the loop: compute it again at the top of the loop, or keep it as a constant;
    where the source shows neither, kept as a constant just after the statement the replay
    recorded it was made by (:func:`_kept_where_made`); an attribute computed once when its
    object was built, stored as a constant there (:func:`detach_stored`)."""
    attribute = bool(case.carriers) and case.carriers[0].origin == "attribute" and \
        not _memo(case.carriers[0])  # (a memo is computed again when given None instead)
    return _recompute_inside(case) or _kept_where_made(case) or \
        (detach_stored(case) if attribute else [])


def _memo(carrier: Any) -> bool:
    """Whether the file computes ``carrier`` only when it is None (``if self.X is None:``)."""
    source = Source.read(carrier.file)
    return source is not None and any(is_none_test(node, carrier.name)
                                      for node in ast.walk(source.tree))


def _recompute_inside(case: Case) -> list[Fix]:
    carrier, source = top_carrier(case)
    statement = source.statement_at(carrier.line) if source else None
    loop = source.loop_of(statement) if statement else None
    if loop is None and statement is not None and len(source.scopes_at(statement.lineno)) > 1 \
            and not source.stores(source.scope_at(statement.lineno), carrier.name):
        # Read by a function called again and again (an optimizer's closure) that only reads
        # it: computed again inside that function, before it is read; so is each other carrier
        # the same statement reads that way (``f``, ``kd`` and ``kp`` of one residual).
        lines = recomputed(source, carrier.name, statement)
        scope = source.scope_at(statement.lineno)
        for other in case.carriers[1:]:
            again = recomputed(source, other.name, statement) if lines is not None and \
                (other.file, other.line) == (carrier.file, carrier.line) and \
                other.name.isidentifier() and other.name != carrier.name and \
                not source.stores(scope, other.name) else None
            lines = lines + again if again is not None else lines
        return one_fix("computed again each time the function runs: each call's backward goes "
                       "through a new graph",
                       Plan(source).before(statement.lineno, *lines) if lines else None)
    if loop is None:
        return []
    stores = [s for s in source.stores(source.scope_at(carrier.line), carrier.name)
              if s.end_lineno < loop.lineno and isinstance(s, ast.Assign)]
    if not stores:
        return _entry_kept(case, source, loop)
    fixes = [] if reads_kept_value(source, stores[-1], loop) or \
        snapshot(source, stores[-1], loop) else one_fix(
        "computed again in every step: each step's backward goes through a new graph, so it also "
        "trains what computes it", recompute(source, carrier.name, loop.body[0]))
    if from_inner_step(source, stores[-1]):
        return fixes  # kept as a constant, the outer weights would get no gradient through it
    lines = detach_lines(source, carrier.name, carrier.form, source.indent(stores[-1].lineno))
    plan = with_helper(Plan(source).after(stores[-1].end_lineno, *lines), source,
                       stores[-1].lineno, carrier.form) if lines else None
    if plan is not None:
        plan = _kept_too(case, source, loop, plan)
    fixes += one_fix("computed once and kept as a constant: the steps train only what comes "
                     "after it", plan)
    return fixes


def _kept_too(case: Case, source: Source, loop: ast.stmt, plan: Plan) -> Plan:
    """``plan`` with each other carrier that the scope of the first also assigns only before
    ``loop`` (a second value of the rollout, made from the same forward) detached after its
    last assignment there, as the first is: detached alone, the first leaves the other's old
    graph in every step."""
    first = case.carriers[0]
    scope = source.scope_at(first.line)
    done = {first.name}
    for other in case.carriers[1:]:
        if other.held or other.name in done or other.file != first.file or \
                other.form != "tensor" or source.scope_at(other.line) is not scope:
            continue
        stores = [s for s in source.stores(scope, other.name)]
        if not stores or any(s.end_lineno >= loop.lineno for s in stores) or \
                not isinstance(stores[-1], ast.Assign):
            continue
        lines = detach_lines(source, other.name, other.form, source.indent(stores[-1].lineno))
        if lines:
            done.add(other.name)
            plan = plan.after(stores[-1].end_lineno, *lines)
    return plan


_ENTRY_OF_DICT = re.compile(r"([\w.]+)\[(['\"])[^'\"]*\2\]")


def _entry_kept(case: Case, source: Source, loop: ast.stmt) -> list[Fix]:
    """An entry of a dict filled before the loop (``rollout = collect()``, read as
    ``rollout["old_log_probs"]`` in every step), never assigned on its own: kept as a constant,
    detached once just after the dict is made (it cannot be computed again by itself); the
    whole dict when the recording shows every entry of it holding the freed graph (``shown``),
    and so each other such dict among the carriers, made before the loop too."""
    plan, done = Plan(source), set()
    for carrier in case.carriers:
        found = _ENTRY_OF_DICT.fullmatch(carrier.name)
        whole = found is not None and carrier.shown == found[1]
        if carrier is not case.carriers[0] and not (whole and carrier.file == source.file):
            continue  # after the first carrier: only whole dicts, of the same file
        scope = source.scope_at(carrier.line)
        made = [s for s in source.stores(scope, found[1])
                if s.end_lineno < loop.lineno and isinstance(s, ast.Assign)] if found else []
        if not made or found[1] in done or source.stores(scope, carrier.name):
            if carrier is case.carriers[0]:
                return []
            continue
        lines = detach_lines(source, found[1] if whole else carrier.name,
                             "dict" if whole else carrier.form, source.indent(made[-1].lineno))
        if lines:
            plan.after(made[-1].end_lineno, *lines)
            done.add(found[1])
    return one_fix("computed once and kept as a constant: the steps train only what comes after "
                   "it", plan if done else None)
