"""Two gradients of one loss, one step between them: updates meant at the same time.

A program that takes a first gradient of a loss with ``retain_graph=True`` and a second one of the
same loss after one player's ``step()``, then steps another optimizer, (a classifier and its attacker, a min-max game) means both
gradients from the one graph, before either weight moves. Building the loss again after the step
would give the second player the first one's new weights: alternating updates, a different
training. The fix moves the step after the second gradient, where the step and that gradient
are next to each other in one block (or only another optimizer's ``zero_grad()`` is between);
elsewhere the source does not show a place, and no edit
is given.

Two losses of one forward pass, backpropagated in turn with one player's step between them (a
discriminator's step before the generator's backward, a critic's before the actor's), where another
optimizer steps after the second backward, mean the same when the second loss was built before
the step in another function (nothing there to build again): the step moves after the second
backward, and that backward takes gradients only for the weights of the optimizer that steps
after it (``inputs=``), so the moved step's gradient stays the first loss's alone, as it was.

A loop over players (``for opt, loss in zip(opts, losses)``, ``for agent in agents``) that runs
one player's backward and then its step, where a later player's loss goes through an earlier
player's weights, means the same: every gradient from the one graph. The fix takes the step out
of the loop, into a loop of its own over the same players after it.
"""

from __future__ import annotations

import ast

from ..source.backward_calls import backward_subject
from ..source.edits import Plan
from ..source.source_file import Source
from .rules import BACKWARD, GRAD, same_block, with_keyword

_SIMPLE = (ast.Expr, ast.Assign, ast.AugAssign)


def _differentiated(call: ast.Call) -> set[str]:
    """The names the loss of a backward or ``autograd.grad`` call reads."""
    subject = backward_subject(call)
    if subject is None and call.args:
        subject = call.args[0]
    if subject is None:
        return set()
    return {n.id for n in ast.walk(subject) if isinstance(n, ast.Name)}


def _retains(call: ast.Call) -> bool:
    return any(k.arg == "retain_graph" and isinstance(k.value, ast.Constant) and
               k.value.value is True for k in call.keywords)


def one_graph_two_gradients(source: Source, step: ast.stmt, failed: ast.stmt,
                            call: ast.Call) -> bool:
    """Whether a call before ``step`` in its function took a gradient of the loss that the
    failing ``call`` differentiates, keeping the graph for it (``retain_graph=True``)."""
    wanted, scope = _differentiated(call), source.scope_at(step.lineno)
    return _other_step_after(source, step, failed) and \
        any(s.end_lineno < step.lineno and _retains(c) and
            wanted & _differentiated(c) - _stored_between(source, scope, s, failed)
            for s, c in source.calls(scope, BACKWARD + GRAD))


def _stored_between(source: Source, scope: ast.AST, first: ast.stmt, last: ast.stmt) -> set[str]:
    """The names assigned after ``first`` and before ``last``: a loss of the same name built
    again there (``dsc_loss = ...`` for the second player) is another loss, not the one the
    first call differentiated."""
    return {t.id for s in source.statements(scope)
            if first.end_lineno < s.lineno and s.end_lineno < last.lineno
            and isinstance(s, (ast.Assign, ast.AugAssign, ast.AnnAssign))
            for target in getattr(s, "targets", [getattr(s, "target", None)])
            for t in ast.walk(target) if isinstance(t, ast.Name)}


def _other_step_after(source: Source, step: ast.stmt, failed: ast.stmt) -> bool:
    """Whether another optimizer steps after ``failed`` in the same function: the second
    gradient is another player's (one optimizer stepping twice means two updates in turn)."""
    mine = ast.dump(step.value.func.value) if isinstance(getattr(step, "value", None), ast.Call) \
        and isinstance(step.value.func, ast.Attribute) else None
    return mine is not None and any(
        s.lineno > failed.end_lineno and isinstance(c.func, ast.Attribute) and
        ast.dump(c.func.value) != mine
        for s, c in source.calls(source.scope_at(step.lineno), ("step",)))


def step_moved_after(source: Source, step: ast.stmt, failed: ast.stmt) -> Plan | None:
    """The step moved to just after ``failed``, when the step is the statement right before it
    in the same block and the step is a simple statement (``failed`` too, or a block that holds
    the failing one: ``if loss is not None: loss.backward()``); else None."""
    if not (isinstance(step, _SIMPLE) and isinstance(failed, (*_SIMPLE, ast.If)) and
            same_block(source, step, failed) and step.lineno == step.end_lineno):
        return None
    between = [s for s in source.statements(source.scope_at(step.lineno))
               if step.end_lineno < s.lineno < failed.lineno]
    if not all(_zeroes_another(s, step) for s in between):
        return None
    plan = Plan(source).replace(step.lineno, None)
    return plan.after(failed.end_lineno, source.text(step.lineno))


def _receiver(statement: ast.stmt) -> ast.expr | None:
    """``opt`` of a statement ``opt.step()``, else None."""
    call = getattr(statement, "value", None)
    return call.func.value if isinstance(statement, ast.Expr) and isinstance(call, ast.Call) and \
        isinstance(call.func, ast.Attribute) and call.func.attr == "step" else None


def step_after_for_the_next(source: Source, step: ast.stmt, failed: ast.stmt,
                            call: ast.Call) -> Plan | None:
    """The step moved to just after ``failed`` (see :func:`step_moved_after`), whose backward
    ``call`` then takes gradients only for the parameters of the next optimizer that steps
    after it in the same block (another one's): None where there is none, or the call already
    names its inputs."""
    mine, block = _receiver(step), source.block_of(step)
    # the statement of the step's block that holds the failing one (``if loss is not None:``)
    holder = next((s for s in block if s.lineno <= failed.lineno <= s.end_lineno), None)
    later = [s for s in block if holder is not None and s.lineno > holder.end_lineno]
    other = next((_receiver(s) for s in later if _receiver(s) is not None), None)
    if mine is None or other is None or ast.dump(other) == ast.dump(mine) or \
            other.lineno != other.end_lineno or \
            any(k.arg == "inputs" for k in call.keywords) or len(call.args) > 3:
        return None
    plan = step_moved_after(source, step, holder)
    owner = source.segment(other)
    return with_keyword(plan, source, call, "inputs", f'[p for group in {owner}.param_groups '
                        'for p in group["params"]]') if plan is not None else None


def _zeroes_another(statement: ast.stmt, step: ast.stmt) -> bool:
    """Whether ``statement`` only zeroes another optimizer's gradients (``opt_r.zero_grad()``
    between ``opt_p.step()`` and the backward): the step may move past it."""
    call, stepped = getattr(statement, "value", None), getattr(step, "value", None)
    return isinstance(statement, ast.Expr) and isinstance(call, ast.Call) and \
        isinstance(call.func, ast.Attribute) and call.func.attr == "zero_grad" and \
        isinstance(stepped, ast.Call) and isinstance(stepped.func, ast.Attribute) and \
        ast.dump(call.func.value) != ast.dump(stepped.func.value)


def steps_after_the_loop(source: Source, step: ast.stmt, failed: ast.stmt) -> Plan | None:
    """``step`` (``opt.step()``, one player's, named through the loop's own variable) taken out
    of the loop over players that holds it and ``failed``, into a loop over the same players
    after it; None where the loop is not such a loop or its header is not one line."""
    loop = source.loop_of(step)
    if not (isinstance(loop, ast.For) and not loop.orelse and loop.iter.end_lineno == loop.lineno
            and loop.lineno < loop.body[0].lineno
            and step in loop.body and isinstance(step, ast.Expr) and step.lineno == step.end_lineno
            and loop.body[0].lineno <= failed.lineno <= loop.end_lineno):
        return None
    player = {n.id for n in ast.walk(loop.target) if isinstance(n, ast.Name)}
    receiver = step.value.func.value if isinstance(step.value, ast.Call) and \
        isinstance(step.value.func, ast.Attribute) and step.value.func.attr == "step" else None
    if receiver is None or not player & {n.id for n in ast.walk(receiver) if isinstance(n, ast.Name)}:
        return None  # the same optimizer each turn: a loop over batches, not over players
    header = source.text(loop.lineno)
    inner = source.indent(loop.body[0].lineno)
    return Plan(source).replace(step.lineno, None).after(
        loop.end_lineno, header, inner + source.text(step.lineno).strip())

