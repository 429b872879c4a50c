"""The edits for losses gathered across steps: a running total kept as a tensor, a list never
emptied.

``total = total + loss`` (or ``+=``) keeps every step's graph in the total, and a backward on
it goes again through the graphs that earlier backward calls freed. The edit keeps the total as
a number (``loss.item()``; a tensor without a graph where the program reads it as a tensor,
``total.item()`` in a log line) and calls backward on each step's loss. A total started before
the first of two passes only, and added to again after its backward, is started again before
the second pass. A list of losses or log-probabilities that grows across updates is emptied
after the update that consumed it, with the lists gathered beside it and read by the update;
not a list a later step reads by index or key, whose values are stored detached instead, nor
one the program empties itself under a
condition (:mod:`autograd_lens.fixes.kept_stores`); a list the object's own forward hooks fill
is emptied where its reader starts (:mod:`autograd_lens.fixes.hook_lists`). See
:mod:`autograd_lens.fixes.rules` for what a rule reads and returns.
"""

from __future__ import annotations

import ast
from typing import Any

from ..source.edits import Plan
from ..source.source_file import Source, path_of, targets
from ..source.backward_calls import backward_subject
from .hook_lists import clear_before_forward
from .kept_stores import emptied_when, read_by_key
from .kept_values import _stored_by_key
from .rules import BACKWARD, Case, Fix, failed_call, one_fix, receiver, top_carrier


def _accumulated(source: Source, carrier: Any) -> tuple[ast.stmt, ast.expr] | None:
    """``total = total + loss`` (or ``+=``) at or after the carrier's line: (statement, loss)."""
    for store in source.stores(source.scope_at(carrier.line), carrier.name):
        if store.lineno < carrier.line or store.lineno != store.end_lineno:
            continue
        if isinstance(store, ast.AugAssign) and isinstance(store.op, ast.Add):
            return store, store.value
        if isinstance(store, ast.Assign) and isinstance(store.value, ast.BinOp) and \
                isinstance(store.value.op, ast.Add):
            left, right = store.value.left, store.value.right
            if path_of(left) == carrier.name:
                return store, right
            if path_of(right) == carrier.name:
                return store, left
    return None


def total_as_number(case: Case) -> list[Fix]:
    """Accumulated loss: keep the total as a number, call backward on each step's loss."""
    carrier, source = top_carrier(case)
    found = _accumulated(source, carrier) if source else None
    if found is None:
        return []
    store, term = found
    plan = Plan(source)
    simple = path_of(term) is not None or isinstance(term, ast.Call)
    # A total the program later reads as a tensor (total.item() in a log line) stays a tensor,
    # one without a graph; else a number.
    tensor = _read_as_tensor(source.scope_at(carrier.line), carrier.name)
    method = "detach" if tensor else "item"
    plan.replace_span(term, f"{source.segment(term)}.{method}()" if simple
                      else f"({source.segment(term)}).{method}()")
    later = [call for statement, call in source.calls(source.scope_at(carrier.line), BACKWARD)
             if statement.lineno > store.lineno and backward_subject(call) is not None]
    backwards = [call for call in later if source.reads(backward_subject(call), carrier.name)]
    wrapped = [call for call in later if call not in backwards and source.reads(call, carrier.name)]
    if not later or wrapped or (backwards and path_of(term) is None):
        return []  # the step's backward is not in sight (a helper's, or a wrapper's that takes
        # the total: runner.backward(total)), or the loss has no name
    for call in backwards:  # (total / n).backward(), accelerator.backward(total): the loss's
        for read in source.reads(backward_subject(call), carrier.name):
            plan.replace_span(read, path_of(term))
    return one_fix("each step's backward goes through that step's loss alone; the running total "
                   + ("is a tensor without a graph" if tensor else "is a number") + ", kept for logging",
                   plan)


_TENSOR_METHODS = ("item", "detach", "cpu", "numpy", "tolist", "to", "float", "double")


def _read_as_tensor(scope: ast.AST, name: str) -> bool:
    """Whether ``scope`` calls a tensor's method on ``name`` (``total.item()``), which a number
    does not have."""
    return any(isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) and
               n.func.attr in _TENSOR_METHODS and path_of(n.func.value) == name
               for n in ast.walk(scope))


def clear_buffer(case: Case) -> list[Fix]:
    """Growing buffer: empty the list after the update that consumed it."""
    carrier, source = top_carrier(case)
    failed = failed_call(case)
    if source is None or failed is None:
        return []
    container = carrier.name.split("[")[0]
    if carrier.name.endswith('"]'):  # an entry of a dict by its name (stats["loss"]): not a list
        return []
    where, statement, _ = failed
    here = where.scope_at(statement.lineno)
    there = source.scope_at(carrier.line)
    root = container.split(".")[0]
    local = {t.split(".")[0].split("[")[0] for s in where.statements(here) for t in targets(s)}
    known = here is there or root in local | \
        ({a.arg for a in here.args.args} if hasattr(here, "args") else set()) or \
        ("." in container and root not in local and root in _module_names(where))
    if not known:
        return clear_before_forward(case)  # a list the object's own forward hooks fill
    if read_by_key(where, container):  # a later step looks up what this one stored
        return _stored_by_key(case)
    if emptied_when(where, container):
        return []  # a window the program keeps across updates on purpose
    indent, beside = where.indent(statement.lineno), _parallel(where, here, container)
    plan = Plan(where).after(statement.end_lineno, *(
        f"{indent}{name}.clear()" for name in [container] + beside))
    return one_fix("each update's backward goes through what was gathered since the previous "
                   "update only, then the list starts again empty" + (
                       f" (and {', '.join(f'`{b}`' for b in beside)}, gathered beside it and "
                       "read by the update, with it)" if beside else ""), plan)


def _module_names(source: Source) -> set[str]:
    """The names the module's own top level binds."""
    return {t for s in source.tree.body if isinstance(s, ast.Assign) for t in targets(s)}


def _parallel(source: Source, scope: ast.AST, container: str) -> list[str]:
    """The other lists of the same object (``policy.rewards`` beside ``policy.saved_log_probs``),
    or read in one statement with the carrier (``loss_of(teacher_maps, student_maps)``), that
    ``scope`` reads and does not empty, and that the program appends to: gathered step by step
    beside the carrier, emptied with it, or the next update would pair them wrongly."""
    owner = container.rpartition(".")[0]
    beside = [n for s in source.statements(scope) if not hasattr(s, "body") and
              source.reads(s, container) for n in ast.walk(s)]  # read in one statement with it
    read = {path_of(n) for n in ast.walk(scope) if isinstance(n, ast.Attribute) and
            isinstance(n.ctx, ast.Load) and path_of(n.value) == owner} if owner else set()
    read = (read | {path_of(n) for n in beside if isinstance(n, (ast.Name, ast.Attribute))
                    and isinstance(n.ctx, ast.Load)}) - {container, None}
    emptied = {path_of(getattr(t, "value", t)) for n in ast.walk(scope)
               if isinstance(n, ast.Delete) for t in n.targets} | \
        {path_of(n.func.value) for n in ast.walk(scope) if isinstance(n, ast.Call) and
         isinstance(n.func, ast.Attribute) and n.func.attr == "clear"}
    appended = {path_of(n.func.value) for n in ast.walk(source.tree) if isinstance(n, ast.Call)
                and isinstance(n.func, ast.Attribute) and n.func.attr == "append"}
    return sorted(name for name in read - emptied if name in appended)


def total_or_buffer(case: Case) -> list[Fix]:
    """Accumulated loss: a total started again too late, a total kept as a tensor, or else a
    list of losses never emptied."""
    return total_started_again(case) or total_as_number(case) or clear_buffer(case)


def total_started_again(case: Case) -> list[Fix]:
    """A total started (``loss = 0``), added to, and backpropagated, then added to again in the
    same step (a second pass: ``loss += loss_t`` after ``loss.backward()``) without being
    started again: the second backward goes through the first pass's graph too, which the first
    backward freed. The edit starts the total again as the program first started it, just
    before the statement (of the first backward's block) that adds to it again."""
    carrier, source = top_carrier(case)
    failed = failed_call(case)
    if source is None or failed is None or failed[0].file != source.file or \
            receiver(failed[2]) != carrier.name:
        return []
    scope = source.scope_at(failed[1].lineno)
    stores = source.stores(scope, carrier.name)
    starts = [s for s in stores if isinstance(s, ast.Assign) and len(s.targets) == 1 and
              not source.reads(s.value, carrier.name)]
    adds = [s for s in stores if _adds_to(source, s, carrier.name)]
    for statement, call in source.calls(scope, BACKWARD):
        if receiver(call) != carrier.name or statement.lineno >= failed[1].lineno:
            continue
        block = source.block_of(statement)
        started = [s for s in starts if s.end_lineno < statement.lineno]
        again = [s for s in adds if statement.end_lineno < s.lineno < failed[1].lineno]
        if not started or not again or any(
                statement.end_lineno < s.lineno <= again[0].lineno for s in starts):
            continue
        top = next((s for s in block if s.lineno <= again[0].lineno <= s.end_lineno), None)
        if top is None or top.lineno <= statement.lineno:
            continue
        start = started[-1]
        return one_fix("the total is started again before the second pass adds to it, so each "
                       "backward goes through its own pass's graph, as the first did",
                       Plan(source).before(top.lineno, source.indent(top.lineno) +
                                           source.segment(start)))
    return []


def _adds_to(source: Source, store: ast.stmt, name: str) -> bool:
    """``name += x`` or ``name = name + x``."""
    if isinstance(store, ast.AugAssign):
        return isinstance(store.op, ast.Add)
    return isinstance(store, ast.Assign) and isinstance(store.value, ast.BinOp) and \
        isinstance(store.value.op, ast.Add) and bool(source.reads(store.value, name))
