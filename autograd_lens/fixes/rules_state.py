"""The edit rules of the patterns where a value crosses from one step to the next: a hidden
state, a module's running value, a total, a list, a tensor computed before the loop, a GAN's
generated batch, one network's output. See :mod:`autograd_lens.fixes.rules` for what a rule reads and
returns.
"""

from __future__ import annotations

import ast
import dataclasses
import re
from typing import Any

from ..source.edit_guards import already_detached, bound_elsewhere, computed_once, differentiates, \
    from_inner_step, reads_kept_value, returned_after, snapshot
from ..source.edits import Plan, Source, is_none_test, path_of, targets
from ..source.backward_calls import backward_subject
from .hook_lists import clear_before_forward
from .same_role import passed_later, same_role
from .state_start import learned_start, stores_after
from .leaf_lists import differentiated, entry_of, leaves_where_stored
from .kept_stores import detach_where_stored, emptied_when, read_by_key
from .critic_reads import critic_reads
from .rules import BACKWARD, Case, Fix, detach_lines, failed_call, one_fix, recompute, \
    recomputed, top_carrier, sum_losses, with_helper


_TBPTT = ("truncated backpropagation through time: each batch's backward stops at the state it "
          "was handed, whose values still flow forward")
_CONSTANT = ("the kept value comes in without its graph: each step's backward stops at it, and its "
             "value still flows forward as a constant")


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


def _fill_while_training(source: Source, fill: ast.stmt, path: str) -> list[Fix]:
    """A cache filled once (``if self._table is None:``): filled again in every call that
    records a graph, so each call's value has its own graph and what it is computed from still
    trains; kept across calls only where no graph is recorded (under ``torch.no_grad()``)."""
    test = getattr(fill, "test", None)
    if not _fill_test(source, test, path):
        return []
    if not any(isinstance(node, ast.Import) and any(a.name == "torch" and a.asname is None
                                                    for a in node.names)
               for node in source.tree.body):
        return []  # the condition names torch: only where the module binds it
    return one_fix("the cached value is computed again in every call that records a graph, so "
                   "what it is computed from still trains; it is kept across calls only under "
                   "torch.no_grad()",
                   Plan(source).replace_span(
                       test, f"{source.segment(test)} or torch.is_grad_enabled()"))


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


def _same_object(source: Source, carrier: Any, other: Any) -> bool:
    """Whether ``other`` is another attribute of the carrier's object that the same function
    reads later, with an old graph too (a second cached tensor): it needs its own detach."""
    return other.file == carrier.file and other.kind == carrier.kind and other.line >= \
        carrier.line and "." in other.name and other.name != carrier.name and \
        other.name.split(".")[0] == carrier.name.split(".")[0] and \
        source.scope_at(other.line) is source.scope_at(carrier.line)


def detach_stored(case: Case) -> list[Fix]:
    """Module state: store the updated value without its graph (after the update), or, where
    the update is not in the same function, detach it where the step reads it."""
    carrier, source = top_carrier(case)
    if source is None:
        return []
    guard = source.statement_at(carrier.line)
    if isinstance(guard, ast.If) and _fill_test(source, guard.test, carrier.name):
        return _fill_while_training(source, guard, carrier.name)  # it enters at a cache's guard
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


def detach_reads_before(case: Case) -> list[Fix]:
    """A GAN's fake batch: ``.detach()`` it at its uses in the discriminator step (the reads
    before the failing one; with the generator's steps first, the critic's own reads, see
    :mod:`autograd_lens.fixes.critic_reads`); a score of the discriminator kept from its own step,
    after its optimizer stepped: computed again where the generator's loss reads it."""
    carrier, source = top_carrier(case)
    statement = source.statement_at(carrier.line) if source else None
    if statement is None:
        return []
    scope = source.scope_at(statement.lineno)
    stores = [s for s in source.stores(scope, carrier.name) if s.end_lineno < statement.lineno]
    start = stores[-1].end_lineno if stores else 0
    critic = critic_reads(source, scope, carrier.name)
    if stores and _made_by_stepped(source, scope, stores[-1], statement) and not critic:
        return one_fix("the discriminator's score is computed again after its step, from the "
                       "weights as the step left them, as the generator's loss needs; the "
                       "discriminator's own loss still trains it through the first score",
                       recompute(source, carrier.name, statement))
    if critic and (stores and _made_by_stepped(source, scope, stores[-1], statement) or
                   not any(_undetached(source, s, carrier.name) for s in source.statements(scope)
                           if start < s.lineno and s.end_lineno < statement.lineno)):
        # the generator's steps first: the read to detach is the critic's own, wherever it is
        plan = Plan(source)
        for read in critic:
            plan.replace_span(read, f"{carrier.name}.detach()")
        return one_fix("the discriminator's loss treats the generated batch as data and "
                       "trains D only; the generator step's backward is the only one through G",
                       plan)
    plan, kept = Plan(source), False
    for node in source.statements(scope):
        if start < node.lineno and node.end_lineno < statement.lineno and \
                source.statement_at(node.lineno) is node:
            if differentiates(source, node):  # a gradient penalty differentiates through it
                kept = kept or bool(_undetached(source, node, carrier.name))
                continue
            for read in _undetached(source, node, carrier.name):
                plan.replace_span(read, f"{carrier.name}.detach()")
    return one_fix("the discriminator's loss treats the generated batch as data; the gradient "
                   "penalty, which differentiates through it, still goes through G once"
                   if kept else "the discriminator's loss treats the generated batch as data and "
                   "trains D only; the generator step's backward is the only one through G", plan)


def _made_by_stepped(source: Source, scope: ast.AST, store: ast.stmt, entry: ast.stmt) -> bool:
    """Whether ``store`` assigns the output of a network (``pred_real = netD(real)``) whose
    optimizer (one made from ``netD.parameters()``) steps between ``store`` and ``entry``: the
    value is that network's score from before its step, not the generated batch, and the later
    loss wants the score of the network as it is now."""
    value = store.value if isinstance(store, ast.Assign) else None
    network = path_of(value.func) if isinstance(value, ast.Call) else None
    if not network:
        return False
    optimizers = {path_of(t) for n in ast.walk(source.tree) if isinstance(n, ast.Assign)
                  and isinstance(n.value, ast.Call)
                  and any(isinstance(c, ast.Call) and isinstance(c.func, ast.Attribute)
                          and c.func.attr == "parameters" and path_of(c.func.value) == network
                          for c in ast.walk(n.value)) for t in n.targets} - {None}
    return any(isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute)
               and n.func.attr == "step" and path_of(n.func.value) in optimizers
               for s in source.statements(scope)
               if store.end_lineno < s.lineno and s.end_lineno < entry.lineno
               for n in ast.walk(s))


def _undetached(source: Source, node: ast.AST, path: str) -> list[ast.expr]:
    parents = {id(c): p for p in ast.walk(node) for c in ast.iter_child_nodes(p)}
    return [r for r in source.reads(node, path) if r.lineno == r.end_lineno and not (
        isinstance(parents.get(id(r)), ast.Attribute) and parents[id(r)].attr == "detach")]


def detach_at_use(case: Case) -> list[Fix]:
    """Two networks: the second network reads the first's output detached, or one backward;
    read in a ``for`` loop's header (``for a, b in zip(actions, baseline):``), detached there."""
    carrier, source = top_carrier(case)
    statement = source.statement_at(carrier.line) if source else None
    header = next((n.iter for n in ast.walk(source.tree) if isinstance(n, ast.For) and
                   n.lineno == carrier.line), None) if source and statement is None else None
    if statement is None and header is None:
        return []
    plan = Plan(source)
    for read in _undetached(source, statement or header, carrier.name):
        plan.replace_span(read, f"{carrier.name}.detach()")
    if statement is None:
        return one_fix("the second loss trains what comes after the detached tensor only; the "
                       "first loss alone trains what computed it", plan)
    for other, later in passed_later(source, statement, carrier.name):  # fake_A as fake_B
        for read in _undetached(source, later, other):
            plan.replace_span(read, f"{other}.detach()")
    return one_fix("the second loss trains what comes after the detached tensor only; the first "
                "loss alone trains what computed it", plan) + sum_losses(case)[:1]


def total_or_buffer(case: Case) -> list[Fix]:
    """Accumulated loss: a total kept as a tensor, or else a list of losses never emptied."""
    return total_as_number(case) or clear_buffer(case)
