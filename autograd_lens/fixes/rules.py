"""The edit rules: each pattern's fix computed as an edit of the program's own lines.

A rule reads what the diagnosis knows (the carriers: name, file, line and the form of the value,
see :class:`~autograd_lens.explain.carrier.Carrier`), the line of the backward that failed, and the
source. It returns :class:`Fix` es, the first choice first, each saying in words what the fixed
program computes. It returns nothing when the source does not show the edit plainly: an empty
answer is honest, a guessed edit is not.

This module holds what every rule uses and the rules about the order of calls (backward twice,
two losses, ``autograd.grad`` then backward, meta-learning). The rules about values that cross
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
import re
from dataclasses import dataclass
from typing import Any, Callable, Sequence

from ..source.backward_calls import NAMES, backward_subject
from ..source.edit_guards import gradients_used_between
from ..source.edits import Edit, Plan, Source, path_of, targets
from .rules_in_turn import in_turn, loop_in_turn
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


def _names(text: str) -> str:
    """``text`` with one kind of quote, so that ``outputs['loss']`` is ``outputs["loss"]``."""
    return text.replace("'", '"')


def _keeps_at_most(call: ast.Call) -> bool:
    """Whether a backward call has no keyword but ``retain_graph=True`` (kept for the second
    loss: the one backward of the sum keeps nothing, as before; the graph it kept may still
    have been freed inside, by a custom Function's own backward call)."""
    return all(k.arg == "retain_graph" and isinstance(k.value, ast.Constant) and
               k.value.value is True for k in call.keywords)


# --- the rules ----------------------------------------------------------------------------
def sum_losses(case: Case) -> list[Fix]:
    """Two losses over one graph: one backward of their sum, or keep the graph for the second."""
    failed = failed_call(case)
    if failed is None:
        return []
    source, statement, call = failed
    if loop_in_turn(source, statement, call) is not None:  # for loss in losses: loss.backward()
        return [fix for computes, plan in in_turn(source, statement, call)
                for fix in one_fix(computes, plan)]
    earlier = earlier_call(source, statement, BACKWARD)
    second = receiver(call) or (f"({source.segment(call.func.value)})" if isinstance(
        call.func, ast.Attribute) and call.func.attr == "backward" else None)  # (lam * penalty)
    if earlier is None:
        return []
    crosses = retain_crosses_a_step(source, earlier[0], statement)
    if second is None and not crosses:
        return []
    first = receiver(earlier[1])
    fixes = []
    between = gradients_used_between(source, earlier[0], statement)
    if first and between is None and not earlier[1].args and _keeps_at_most(earlier[1]) and \
            not call.args and \
            not call.keywords and earlier[0].lineno == earlier[0].end_lineno and first != second \
            and same_block(source, earlier[0], statement) and not crosses:
        plan = Plan(source).replace(earlier[0].lineno, None)
        fixes += one_fix("one backward of the summed losses: the shared part gets the sum of both "
                      "losses' gradients", plan.replace_span(call.func,
                                                             f"({first} + {second}).backward"))
    if crosses:  # the second loss wants the weights as the step left them: a new forward
        carrier, there = top_carrier(case)
        if carrier is None or carrier.kind != "old" or there.file != source.file:
            return fixes
        entry = source.statement_at(carrier.line) if carrier.line < statement.lineno else None
        statement = entry or statement  # computed again before it enters, not before backward
        old = [c.name for c in case.carriers if c.kind == "old" and c.name != carrier.name]
        return one_fix("the shared part is computed again after the step, so the second loss's "
                       "backward goes through a new graph, built from the weights as the step "
                       "left them", recompute(source, carrier.name, statement, old))
    plan = with_keyword(Plan(source), source, earlier[1], "retain_graph")
    if between is not None:  # a clip (or a step) between the calls sees the first loss's only
        return fixes + one_fix(
            "the first backward keeps the graph for the second; the line between them "
            f"({source.segment(between).strip().splitlines()[0]}) still sees the first loss's "
            "gradients only, as in your program: not the same as one backward of the sum", plan)
    return fixes + one_fix("the first backward keeps the graph for the second: the same gradients "
                        "as one backward of the sum, accumulated in two calls", plan)


def rerun_forward(case: Case) -> list[Fix]:
    """Backward twice: run the forward again before the second backward (a new graph); none
    when what it would compute again reads an old carrier (its old graph would come back)."""
    failed = failed_call(case)
    if failed is None or receiver(failed[2]) is None:
        return []
    source, statement, call = failed
    plan = recompute(source, receiver(call), statement)
    stale = [c.name for c in case.carriers if c.kind == "old" and c.name != receiver(call)]
    again = _names(" ".join(line for edit in (plan.edits() if plan else []) for line in edit.new))
    if any(re.search(rf"(?<![\w.]){re.escape(_names(name))}(?!\w)", again) for name in stale):
        return []
    return one_fix("the forward runs again, so the second backward goes through a new graph, "
                "built from the weights as they are then", plan)


def rerun_or_retain(case: Case) -> list[Fix]:
    """Backward twice on purpose: run the forward again, or keep the graph on the first call."""
    failed = failed_call(case)
    fixes = rerun_forward(case)
    earlier = earlier_call(failed[0], failed[1], BACKWARD + GRAD) if failed else None
    if earlier is not None and not retain_crosses_a_step(failed[0], earlier[0], failed[1]):
        fixes += one_fix("the first call keeps the graph, so the second goes through the same "
                      "graph again (its gradients add to the first's)",
                      with_keyword(Plan(failed[0]), failed[0], earlier[1], "retain_graph"))
    return fixes


def retain_on_grad(case: Case) -> list[Fix]:
    """autograd.grad, then backward: keep the graph on the grad call, or recompute the loss."""
    failed = failed_call(case)
    earlier = earlier_call(failed[0], failed[1], GRAD) if failed else None
    if earlier is None:
        return []
    if retain_crosses_a_step(failed[0], earlier[0], failed[1]):
        return rerun_forward(case)
    every = [c for _, c in earlier_calls(failed[0], failed[1], GRAD)]
    plan = Plan(failed[0])
    for call in every:
        plan = with_keyword(plan, failed[0], call, "retain_graph") if plan else None
    return one_fix("autograd.grad keeps the graph, so backward goes through it once more (the "
                "gradient and the weights' gradients from one forward)",
                with_keyword(Plan(failed[0]), failed[0], earlier[1], "retain_graph")) + \
        (one_fix("each autograd.grad call before the backward keeps its graph (each took a "
                 "gradient of a part of the loss), so backward goes through them all once more",
                 plan) if len(every) > 1 else []) + rerun_forward(case)


def grad_keeps_graph(case: Case) -> list[Fix]:
    """A loss after autograd.grad: create_graph=True when the loss uses the gradient (a
    gradient penalty), retain_graph=True when it only goes through the same graph again."""
    failed = failed_call(case)
    earlier = earlier_call(failed[0], failed[1], GRAD) if failed else None
    if earlier is None:
        return []
    source, statement = failed[0], failed[1]
    # Which names hold values computed from the gradient, statement by statement, up to the
    # failing call: does the loss that backward starts from use the gradient?
    tainted = set(targets(earlier[0]))
    for node in source.statements(source.scope_at(statement.lineno)):
        if earlier[0].end_lineno < node.lineno < statement.lineno and \
                any(source.reads(node, name) for name in tainted):
            tainted.update(targets(node))
    root = receiver(failed[2])
    uses = root in tainted if root else any(source.reads(statement, n) for n in tainted)
    if uses:
        return one_fix("the gradient is part of the graph, so the loss's backward also goes "
                    "through the gradient (a second derivative)",
                    with_keyword(Plan(source), source, earlier[1], "create_graph"))
    return one_fix("autograd.grad keeps the graph, so the loss goes through it once more",
                with_keyword(Plan(source), source, earlier[1], "retain_graph"))


def second_order(case: Case) -> list[Fix]:
    """Meta-learning: create_graph=True on the inner step (second-order), or, first-order,
    recompute the support term the outer loss reuses."""
    failed = failed_call(case)
    earlier = earlier_call(failed[0], failed[1], GRAD) if failed else None
    if earlier is None:
        return []
    source = failed[0]
    fixes = one_fix("second-order: the outer gradient goes through the inner gradient step",
                 with_keyword(Plan(source), source, earlier[1], "create_graph"))
    carrier, there = top_carrier(case)
    statement = there.statement_at(carrier.line) if there else None
    if statement is not None and carrier.kind == "old":
        fixes += one_fix("first-order: the inner gradients stay constants, and the support term "
                      "the outer loss reuses is computed again (a new graph)",
                      recompute(there, carrier.name, statement))
    return fixes
