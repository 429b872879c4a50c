"""The edit rules about the order of calls: a second call through one graph.

Backward twice (run the forward again, or keep the graph on the first call), two losses over one
graph (one backward of their sum, or keep the graph for the second), ``autograd.grad`` then
backward (keep the graph on the grad call), a loss that uses a gradient (``create_graph=True``)
and meta-learning (second-order, or the support term computed again). Each reads the failing
call and the earlier one with the helpers of :mod:`~autograd_lens.fixes.rules`.
"""

from __future__ import annotations

import ast
import re

from ..source.edit_guards import gradients_used_between
from ..source.edits import Plan
from ..source.source_file import targets
from .rules import (BACKWARD, GRAD, Case, Fix, earlier_call, earlier_calls, failed_call, one_fix,
                    receiver, recompute, retain_crosses_a_step, same_block, top_carrier,
                    with_keyword)
from .rules_in_turn import in_turn, loop_in_turn


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
