"""The edit rules of the in-place error: a saved tensor changed after a node saved it.

Two writes change a saved tensor (see :mod:`autograd_lens.explain.writes`):

* the program's own in-place operation (``probs += 1e-6``, ``h.relu_()``, ``self.queue[i] = k``):
  the edit writes out of place (``probs = probs + 1e-6``, ``h = h.relu()``), or, where the write
  is into part of the tensor, writes into a copy made just before (``self.queue =
  self.queue.clone()``; before the whole run of in-place calls that ends in the write, and
  without the old value's graph when the run starts by replacing every element, as
  ``state.copy_(...)`` does); parts read by writes into the same tensor (``buf[2] = f(buf[0])``,
  ``buf[4] = f(buf[2])``) are read as copies on every such line, except where the node saved
  the written tensor as its own result (``probs = sigmoid(z)``, then ``probs[m] = 1 -
  probs[m]``): the copy is then made before the writes, before the loop that makes them when
  the loop does not bind the name again; an in-place method on a result no name holds
  (``conv(x).unsqueeze_(1)``) becomes its out-of-place twin; where the function writes the
  name in place more than once (``h += a(h)``, then ``h += b(h)``), a second edit makes every
  such write out of place, for when the recorded one alone still fails; the node keeps the
  tensor it saved, unchanged;
* a weight the program writes in place between the forward and the backward (a sharpness-aware
  first step): the loss built again right after the statement that writes it, or that calls the
  function that does;
* a library call's write with no ``inplace`` keyword to turn off (an embedding's ``max_norm``
  renormalising its weight): the function's other reads of that tensor read a copy;
* an optimizer's ``step()`` between the forward and a backward through its graph: the edit
  builds the loss again after the step, with every value on the way that carries the graph the
  step changed (``q = critic(...)``, then ``actor_loss = -q.mean()``) and every value the loss
  reads that is made from one built again (a penalty from the forward's second output).

See :mod:`autograd_lens.fixes.rules` for what a rule reads and returns.
"""

from __future__ import annotations

import ast
import inspect
import re
from typing import Any

import torch

from ..source.edits import _SIMPLE, Plan, Source, _same, _walk_scope, path_of, targets
from .rules import Case, Fix, failed_call, one_fix, receiver, recompute
from .simultaneous import (one_graph_two_gradients, step_after_for_the_next, step_moved_after,
                           steps_after_the_loop)

_OPERATORS = {ast.Add: "+", ast.Sub: "-", ast.Mult: "*", ast.Div: "/", ast.FloorDiv: "//",
              ast.Pow: "**", ast.MatMult: "@", ast.Mod: "%"}
_ATOMS = (ast.Name, ast.Attribute, ast.Constant, ast.Call, ast.Subscript)


def _write(case: Case) -> Any:
    """The write: the finding's (recorded, when the replay recorded it), else the first
    carrier's."""
    return case.write or (case.carriers[0].write if case.carriers else None)


def out_of_place(case: Case) -> list[Fix]:
    """The program's in-place write: the same write out of place, or into a copy."""
    write = _write(case)
    source = Source.read(write.file) if write is not None and write.line else None
    statement = source.statement_at(write.line) if source else None
    if statement is not None and write.module:  # a library call wrote it
        return (not write.weight and _not_in_place(source, statement, write.maker)) or \
            _read_as_copies(source, statement, write.name or case.carriers[0].name)
    if statement is not None and write.weight:  # written out of place, or in a copy, the
        # weight would stay as it was; a weight no optimizer trains (a slow or target copy)
        # is written for the next turn: the write belongs after the step, not the loss after it
        return _built_after_writer(case, source, statement) if write.trained else []
    if statement is None or not write.name:
        return []
    indent, name = source.indent(statement.lineno), write.name
    if re.search(r"\[(\d+|'[^']*'|\"[^\"]*\")\]$", name):  # the key it had at run time
        name = _as_target(source, statement, name)  # (cache[1]): as the write names it
    if _written_name(statement) and source.reads(statement, name) == [] and \
            not _part_reads(statement, name):  # written through a view of another name
        name = _written_name(statement)
    plan = Plan(source)
    computes = _written_anew(source, plan, statement, name)
    scope = source.scope_at(statement.lineno)
    later = [s for s in _recorded_lines(source, write.later_lines, scope) if s is not statement
             and _written_anew(source, plan, s, _written_name(s))] if computes else []
    if computes and later:  # the replay saw them change the same saved tensor again
        computes = ("each write the replay recorded changing the saved tensor makes a new "
                    "tensor, so the node keeps the values it saved; the result is the same "
                    "numbers")
    if computes:
        # the function's other writes of the same kind into ``name`` (``h += conv(h)``, then
        # ``h += ff(h)``): a node may have saved the tensor each of them changes; all of them
        # out of place is the second edit, tried when this one alone still fails
        # and the writes the replay recorded of the graph's other saved tensors that the
        # backward would meet next (``z += k`` beside ``s += k @ v``): written anew too
        every = Plan(source)
        done = [s for s in source.statements(scope) if _written_anew(source, every, s, name)]
        recorded = [s for s in _recorded_lines(source, write.next_lines, scope)
                    if s not in done and _written_anew(source, every, s, _written_name(s))]
        said = "every such write of the function into it" + (
            ", and into the other tensors the replay saw written after a node saved them,"
            if recorded else "")
        return one_fix(computes, plan) + (one_fix(
            f"{said} makes a new tensor, so each node keeps the values it saved; the result "
            "is the same numbers", every) if len(done) + len(recorded) > 1 else [])
    call = statement.value if isinstance(statement, ast.Expr) else None
    if isinstance(call, ast.Call) and isinstance(call.func, ast.Attribute) and call.args and \
            path_of(call.func.value) in ("torch", "F") and path_of(call.args[0]) == name and \
            call.func.attr.endswith("_") and statement.lineno == statement.end_lineno:
        plan.replace_span(call.func, f"{name} = {path_of(call.func.value)}.{call.func.attr[:-1]}")
        return one_fix("the operation makes a new tensor, so the node keeps the values it "
                       "saved; the result is the same numbers", plan)
    temporary = _method_on_result(source, statement, name)
    if temporary is not None:  # conv(x).unsqueeze_(1): a result no name holds, written
        plan.replace_span(temporary.func, f"{source.segment(temporary.func.value)}."
                                          f"{temporary.func.attr[:-1]}")
        return one_fix("the operation makes a new tensor, so the node keeps the tensor it "
                       "saved; no name held the one written, so the result is the same numbers",
                       plan)
    into_a_copy = _written_into_a_copy(source, statement, name)
    if into_a_copy:  # z[:, j] = f(z @ a): a copy made before it would be the tensor read too
        return into_a_copy + _copy_before(source, statement, name)
    # the parts it reads of the tensor written, and of every other tensor whose part the same
    # statement writes (q[:, 1:], k[:, 1:] = rotate(q[:, 1:], k[:, 1:]))
    written = {name} | {path_of(t.value) for target in getattr(statement, "targets", [])
                        for t in (target.elts if isinstance(target, ast.Tuple) else [target])
                        if isinstance(t, ast.Subscript) and path_of(t.value)}
    reads = [n for n in ast.walk(getattr(statement, "value", statement))
             if isinstance(n, ast.Subscript) and path_of(n.value) in written]
    if reads and statement.lineno == statement.end_lineno:  # x[t] = f(x[t - 1]): the same line
        # reads a part the write then changes: the node saves a copy; so does every other
        # such write of the function (buf[2] = f(buf[0]), then buf[4] = f(buf[2])), whose
        # node the next write changes too
        lines = {statement.lineno}
        for other in source.statements(source.scope_at(statement.lineno)):
            if other is not statement and other.lineno == other.end_lineno:
                parts = _part_reads(other, name)
                reads += parts
                lines |= {other.lineno} if parts else set()
        for read in reads:
            plan.replace_span(read, f"{source.segment(read)}.clone()")
        copied = one_fix("the part read is copied before the write changes the tensor, so the "
                         "node keeps the values it saved; the result is the same numbers", plan)
        whole = _copy_before(source, statement, name)
        if write.saved_at and not any(file == source.file and line in lines for file, line
                                      in (write.saved_at, *write.saved_from)):
            return whole  # the recording shows the node built on another line, not called
            # from these: it saved a part read there, which no copy made on these lines changes
        # both at once, where nodes saved the tensor whole (relu's result) and the part read
        # (the product): the write goes into a copy, and the part read is a copy of its own
        both = Plan(source)
        for read in reads:
            both.replace_span(read, f"{source.segment(read)}.clone()")
        both.before(statement.lineno, f"{source.indent(statement.lineno)}{name} = {name}.clone()")
        combined = one_fix("the write goes into a copy made just before it, and the part it "
                           "reads is copied as well, so every node keeps the tensor it saved; "
                           "the result is the same numbers", both)
        # the node saved the tensor as its op made it (tanh's, sigmoid's result): reading
        # copies leaves that tensor written; a copy made before the writes does not. Only
        # then: a part read and saved (x[t - 1] @ w) is saved anew by every turn
        return whole + copied if write.slot == "result" else copied + combined
    return _copy_before(source, statement, name)


def _as_target(source: Source, statement: ast.stmt, name: str) -> str:
    """An entry the recording names by the key it had (``cache[1]``), as the statement's
    write names it (``cache[self.index].copy_(...)``, ``levels[i - 1] += ...``): the one entry
    of that container the statement writes; else ``name``."""
    container = name[:name.index("[")]
    written = [t for t in getattr(statement, "targets", [getattr(statement, "target", None)])
               if t is not None]
    value = getattr(statement, "value", None)
    if isinstance(value, ast.Call) and isinstance(value.func, ast.Attribute) and \
            value.func.attr.endswith("_"):
        written.append(value.func.value)  # x[k].copy_(...), x[k].mul_(...)
    found = {source.segment(t) for t in written if isinstance(t, ast.Subscript) and
             path_of(t.value) == container and t.lineno == t.end_lineno}
    return found.pop() if len(found) == 1 else name


def _recorded_lines(source: Source, lines: tuple, scope: ast.AST) -> list[ast.stmt]:
    """The statements of ``scope`` at recorded ``lines`` (file, line) of ``source``'s file."""
    found = [source.statement_at(line) for file, line in lines if file == source.file]
    return [s for s in found if s is not None and source.scope_at(s.lineno) is scope]


def _written_name(statement: ast.stmt) -> str:
    """The name ``statement`` writes in place on one line (``z`` in ``z += k``, in
    ``z.add_(k)``), else an empty string."""
    if isinstance(statement, ast.AugAssign):
        return path_of(statement.target) or ""
    call = statement.value if isinstance(statement, ast.Expr) else None
    if isinstance(call, ast.Call) and isinstance(call.func, ast.Attribute):
        return path_of(call.func.value) or ""
    return ""


def _written_anew(source: Source, plan: Plan, statement: ast.stmt, name: str) -> str:
    """``statement`` written out of place in ``plan`` when it writes ``name`` in place on one
    line (``name += v``: ``name = name + v``; ``name.relu_()``: ``name = name.relu()``); what
    the edit computes, else an empty string."""
    if isinstance(statement, ast.AugAssign) and statement.lineno != statement.end_lineno:
        return _augmented_over_lines(source, plan, statement, name)
    if statement.lineno != statement.end_lineno:
        return ""
    indent = source.indent(statement.lineno)
    if isinstance(statement, ast.AugAssign) and \
            (path_of(statement.target) or source.segment(statement.target)) == name and \
            type(statement.op) in _OPERATORS:
        value = source.segment(statement.value)
        value = value if isinstance(statement.value, _ATOMS) else f"({value})"
        plan.replace(statement.lineno,
                     f"{indent}{name} = {name} {_OPERATORS[type(statement.op)]} {value}")
        return "the write makes a new tensor, so the node keeps the values it saved; the " \
            "result is the same numbers"
    # name.div_(v), or name = name.div_(v): binding the result to the name it writes, the
    # name then holds the new tensor, as it held the written one
    call = statement.value if isinstance(statement, ast.Expr) or isinstance(
        statement, ast.Assign) and [path_of(t) for t in statement.targets] == [name] else None
    if isinstance(call, ast.Call) and isinstance(call.func, ast.Attribute) and \
            path_of(call.func.value) == name and call.func.attr.endswith("_") and \
            hasattr(torch.Tensor, call.func.attr[:-1]):  # copy_, zero_: no such method, a copy
        bound = "" if isinstance(statement, ast.Assign) else f"{name} = "
        plan.replace_span(call.func, f"{bound}{name}.{call.func.attr[:-1]}")
        return "the operation makes a new tensor, so the node keeps the values it saved; " \
            "the result is the same numbers"
    return ""


def _augmented_over_lines(source: Source, plan: Plan, statement: ast.AugAssign,
                          name: str) -> str:
    """``name /= f(...)`` over several lines written ``name = name / f(...)``: the first line's
    operator, the value's other lines as they are (in parentheses when the value is not one
    term); else an empty string."""
    target, value = statement.target, statement.value
    if (path_of(target) or source.segment(target)) != name or \
            type(statement.op) not in _OPERATORS or value.lineno != statement.lineno or \
            target.lineno != statement.lineno:
        return ""
    first = source.text(statement.lineno).encode()
    atom = isinstance(value, _ATOMS)
    head = first[:target.col_offset].decode() + \
        f"{name} = {name} {_OPERATORS[type(statement.op)]} " + ("" if atom else "(")
    plan.replace(statement.lineno, head + first[value.col_offset:].decode())
    if not atom:
        last = source.text(value.end_lineno).encode()
        plan.replace(value.end_lineno, (last[:value.end_col_offset] + b")" +
                                        last[value.end_col_offset:]).decode())
    return "the write makes a new tensor, so the node keeps the values it saved; the " \
        "result is the same numbers"


def _method_on_result(source: Source, statement: ast.stmt, name: str) -> ast.Call | None:
    """The call in ``statement`` of an in-place method that has an out-of-place twin
    (``unsqueeze_``: ``unsqueeze``) on the result of an expression no name holds, written as
    ``name`` (``conv(x).unsqueeze_(dim=1)``, named ``conv(x)``, or ``fea`` when the statement
    binds the method's result, the tensor written, to ``fea``)."""
    bound = statement.value if isinstance(statement, ast.Assign) and \
        len(statement.targets) == 1 and path_of(statement.targets[0]) == name else None
    for node in ast.walk(statement):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and \
                node.func.attr.endswith("_") and hasattr(torch.Tensor, node.func.attr[:-1]) and \
                path_of(node.func.value) is None and node.lineno == node.end_lineno and \
                (node is bound or
                 source.segment(node.func.value).replace(" ", "") == name.replace(" ", "")):
            return node
    return None


def _copy_before(source: Source, statement: ast.stmt, name: str) -> list[Fix]:
    """The write goes into a copy of ``name`` made before the first of the writes: before the
    run of in-place calls that ends in ``statement``; where the write is in loops that do not
    bind ``name`` again, also before those loops (every turn then writes the copy, never the
    tensor a node saved before the loop), first when the loops read ``name`` only in writes
    into it, else second (a node built in the loop saves the copy, and the next turn's write
    changes it: only the copy made each turn holds)."""
    found = []
    outside = _outside_loops(source, statement, name)
    for anchor in dict.fromkeys([outside, statement] if _read_only_by_writes(
            source, outside, name) else [statement, outside]):
        found += _copy_at(source, anchor, name)
    return found + _copy_in_method(source, statement, name)


def _copy_in_method(source: Source, statement: ast.stmt, name: str) -> list[Fix]:
    """An attribute of the object (``self.vec[:, 0] = bg``) written in a method: the copy is a
    name of the method's own, which the write and every later read of the method use, and the
    object keeps its tensor unwritten (a copy kept in the attribute would carry this call's
    graph into the next call). Not when the method assigns the attribute later."""
    scope = source.scope_at(statement.lineno)
    if not re.fullmatch(r"self\.\w+", name) or not isinstance(
            scope, (ast.FunctionDef, ast.AsyncFunctionDef)):
        return []
    first = _first_of_run(source, statement, name)
    after = [s for s in source.statements(scope) if s.lineno >= first.lineno and
             not hasattr(s, "body")]  # (reads in an ``if``'s test are not replaced: none then)
    if any(s.lineno > statement.lineno for s in source.stores(scope, name)):
        return []
    taken = {n.id for n in ast.walk(scope) if isinstance(n, ast.Name)} | \
        {a.arg for a in ast.walk(scope) if isinstance(a, ast.arg)}
    local = next((c for c in (name[5:], name[5:] + "_copy", name[5:] + "_own")
                  if c not in taken), "")
    if not local:
        return []
    plan = Plan(source)
    for other in after:
        for read in source.reads(other, name):
            if read.lineno != read.end_lineno:
                return []
            plan.replace_span(read, local)
    # made where the method's own body holds the write (before an ``if`` around it), so the
    # name is bound wherever it is read
    top = next(s for s in scope.body if s.lineno <= first.lineno <= s.end_lineno)
    plan.before(top.lineno, f"{source.indent(top.lineno)}{local} = {name}.clone()")
    return one_fix(f"the write goes into a copy that the method keeps under a name of its own "
                   f"and reads from there on, so the node keeps the tensor it saved and "
                   f"`{name}` stays as it was (no call's graph is kept in it for the next)",
                   plan)


def _copy_at(source: Source, statement: ast.stmt, name: str) -> list[Fix]:
    if statement.lineno != statement.end_lineno:  # (on one line, the part read is copied)
        hoisted = _value_first(source, statement, name)
        if hoisted:
            return hoisted
    plan, indent = Plan(source), source.indent(statement.lineno)
    first = _first_of_run(source, statement, name)
    if _overwrites(first, name):  # nothing of the old value's history reaches the result
        plan.before(first.lineno, f"{indent}{name} = {name}.detach().clone()")
        return one_fix("the write goes into a copy made just before it, so the node keeps "
                       "the tensor it saved, unchanged; the copy is made without the old "
                       "value's graph, which the write replaces whole (no gradient reached it)",
                       plan)
    plan.before(first.lineno, f"{indent}{name} = {name}.clone()")
    return one_fix("the write goes into a copy made just before it, so the node keeps the "
                   "tensor it saved, unchanged", plan)


def _value_first(source: Source, statement: ast.stmt, name: str) -> list[Fix]:
    """A write into a part of ``name`` whose value, over several lines, reads ``name``
    (``h[i] = cell(x,`` / ``h[i])``: a node of the value saves the part it reads, which the
    write then changes): the value is computed first, into a name of its own, then written into
    a copy of ``name``."""
    if not isinstance(statement, ast.Assign) or len(statement.targets) != 1:
        return []
    target = statement.targets[0]
    if not (isinstance(target, ast.Subscript) and path_of(target.value) == name and
            target.lineno == target.end_lineno and source.reads(statement.value, name)):
        return []
    fresh = "new_" + re.sub(r"\W+", "_", name).strip("_")
    if re.search(rf"\b{fresh}\b", "".join(source.lines)):
        return []  # (a name the program uses already)
    indent = source.indent(statement.lineno)
    plan = Plan(source).replace_span(target, fresh)
    plan.after(statement.end_lineno, f"{indent}{name} = {name}.clone()",
               f"{indent}{source.segment(target)} = {fresh}")
    return one_fix("the value is computed first, from the tensor as the nodes saved it; then it "
                   "is written into a copy, so no node's saved tensor changes", plan)


def _read_only_by_writes(source: Source, loop: ast.stmt, name: str) -> bool:
    """Whether every statement of ``loop`` that reads ``name`` writes into it (``x[i] = x[i] *
    s``); true for a statement that is no loop."""
    if not isinstance(loop, (ast.For, ast.AsyncFor, ast.While)):
        return True
    return all(_part_reads(s, name) or not source.reads(s, name)
               for s in ast.walk(loop) if isinstance(s, _SIMPLE))


def _outside_loops(source: Source, statement: ast.stmt, name: str) -> ast.stmt:
    """The outermost loop of ``statement``'s function that holds it, binds ``name`` nowhere
    (neither as its variable nor by an assignment in its body) and comes after ``name`` is
    bound in the function; else ``statement``."""
    scope = source.scope_at(statement.lineno)
    root = name.split(".")[0].split("[")[0]
    found, loop = statement, source.loop_of(statement)
    while loop is not None:
        bound = [s for s in ast.walk(loop) if isinstance(s, (ast.Assign, ast.AnnAssign)) and
                 any(_same(t, name) or _same(t, root) for t in targets(s))]
        variable = {n.id for n in ast.walk(getattr(loop, "target", ast.Pass()))
                    if isinstance(n, ast.Name)}
        if bound or root in variable or root not in _bound_before(source, scope, loop.lineno):
            break
        found = loop
        loop = _loop_holding(scope, loop)
    return found


def _bound_before(source: Source, scope: ast.AST, line: int) -> set[str]:
    """The names bound in ``scope`` before ``line``: its parameters and earlier assignments."""
    arguments = getattr(scope, "args", None)
    names = {a.arg for a in (arguments.args + arguments.kwonlyargs)} if arguments else set()
    for s in source.statements(scope):
        if s.end_lineno < line:
            names |= {t.split(".")[0].split("[")[0] for t in targets(s)}
    return names


def _loop_holding(scope: ast.AST, inner: ast.stmt) -> ast.stmt | None:
    """The innermost loop of ``scope`` (not of a nested function) that holds the loop ``inner``."""
    holders = [n for n in _walk_scope(scope) if isinstance(n, (ast.For, ast.AsyncFor, ast.While))
               and n is not inner and n.lineno < inner.lineno and inner.end_lineno <= n.end_lineno]
    return max(holders, key=lambda n: n.lineno) if holders else None


_WHOLE = ("copy_", "zero_", "fill_", "detach_")  # replace every element, or cut the history


def _overwrites(statement: ast.stmt, name: str) -> bool:
    """Whether ``statement`` is ``name.copy_(...)``, ``name.zero_()``, ``name.fill_(...)`` or
    ``name.detach_()``: after it no gradient flows back into the history ``name`` had."""
    call = statement.value if isinstance(statement, ast.Expr) else None
    return isinstance(call, ast.Call) and isinstance(call.func, ast.Attribute) and \
        path_of(call.func.value) == name and call.func.attr in _WHOLE


def _first_of_run(source: Source, statement: ast.stmt, name: str) -> ast.stmt:
    """The first of the in-place calls on ``name`` (``state.detach_()``) that come before
    ``statement`` in its block, with only statements that do not name ``name`` between them
    (``new = torch.exp(-mu)``), else ``statement``: the copy goes before them all, so none of
    them changes the tensor a node saved."""
    siblings = next((block for node in ast.walk(source.tree)
                     for block in (getattr(node, f, None) for f in ("body", "orelse"))
                     if isinstance(block, list) and statement in block), [])
    first = statement
    for before in reversed(siblings[:siblings.index(statement)] if siblings else []):
        call = before.value if isinstance(before, ast.Expr) else None
        if isinstance(call, ast.Call) and isinstance(call.func, ast.Attribute) and \
                path_of(call.func.value) == name and call.func.attr.endswith("_"):
            first = before
        elif any(path_of(n) == name for n in ast.walk(before)) or \
                not isinstance(before, _SIMPLE):
            break  # (a statement that reads or binds it, or a block: the run ends)
    return first


def _part_reads(statement: ast.stmt, name: str) -> list[ast.expr]:
    """The parts of ``name`` (``x[t - 1]``) that ``statement``, a write into a part of
    ``name`` (``x[t] = ...``), reads; none for any other statement."""
    if not isinstance(statement, (ast.Assign, ast.AugAssign)) or not any(
            isinstance(t, ast.Subscript) and path_of(t.value) == name
            for t in getattr(statement, "targets", [getattr(statement, "target", None)])):
        return []
    return [n for n in ast.walk(statement.value)
            if isinstance(n, ast.Subscript) and path_of(n.value) == name]


def _written_into_a_copy(source: Source, statement: ast.stmt, name: str) -> list[Fix]:
    """A write into a part of ``name`` whose value reads ``name`` whole (``z[:, j] = eps[:, j]
    + torch.tanh(z @ a)``: the product saved ``z``, the write then changes it): the write goes
    into a copy under a new name, the value still reads the tensor saved, and ``name`` then
    holds the copy (``z_new = z.clone()``, ``z_new[:, j] = ...``, ``z = z_new``)."""
    target = statement.targets[0] if isinstance(statement, ast.Assign) and \
        len(statement.targets) == 1 else getattr(statement, "target", None)
    if not (isinstance(statement, (ast.Assign, ast.AugAssign)) and
            isinstance(target, ast.Subscript) and path_of(target.value) == name and
            statement.lineno == statement.end_lineno):
        return []
    parts = {id(n.value) for n in ast.walk(statement.value) if isinstance(n, ast.Subscript)}
    if not [n for n in source.reads(statement.value, name) if id(n) not in parts]:
        return []  # only parts read (x[t] = f(x[t - 1])): the copies of those parts do
    taken = {n.id for n in ast.walk(source.scope_at(statement.lineno)) if isinstance(n, ast.Name)}
    copy = name.rsplit(".", 1)[-1].rstrip("]").replace("[", "_").replace('"', "")
    copy = next(f"{copy}_new{n or ''}" for n in range(100) if f"{copy}_new{n or ''}" not in taken)
    indent = source.indent(statement.lineno)
    plan = Plan(source).replace_span(target.value, copy)
    plan.before(statement.lineno, f"{indent}{copy} = {name}.clone()")
    plan.after(statement.lineno, f"{indent}{name} = {copy}")
    return one_fix("the write goes into a copy under a new name, which then takes the old "
                   "name: the value written still reads the tensor the node saved, unchanged; "
                   "the result is the same numbers", plan)


def _read_as_copies(source: Source, statement: ast.stmt, name: str) -> list[Fix]:
    """A library call wrote ``name`` in place with no ``inplace`` keyword to turn off (an
    embedding's ``max_norm`` renormalises its weight): every other line of the function that
    reads ``name`` reads a copy (``name.clone()``), so the nodes built there save the copy and
    the write no longer touches what they saved; gradients still reach ``name`` through it."""
    if not name:
        return []
    plan = Plan(source)
    for other in source.statements(source.scope_at(statement.lineno)):
        if other is statement or not isinstance(other, _SIMPLE):
            continue
        called = {id(n.func) for n in ast.walk(other) if isinstance(n, ast.Call)}
        for read in source.reads(other, name):
            if id(read) in called or read.lineno != read.end_lineno:
                continue  # a module called, not a tensor read
            plan.replace_span(read, f"{source.segment(read)}.clone()")
    return one_fix("the nodes save a copy of the tensor, made where it is read, which the "
                   "library's write does not change; the result is the same numbers, at the "
                   "cost of one more tensor's memory", plan)


def _not_in_place(source: Source, statement: ast.stmt, maker: str) -> list[Fix]:
    """The write ran inside a library call made with ``inplace=True`` (or ``True`` at the
    position torch gives ``inplace``: ``nn.LeakyReLU(0.2, True)``): that keyword made
    ``False``, in the call on the write's line (``F.relu(x, inplace=True)``), else where the
    program makes modules of the class whose forward wrote (``nn.ReLU(inplace=True)``), else
    where it makes a class it looks up by name (``getattr(nn, name)(inplace=True)``), else
    the default ``True`` of the parameter passed on as that keyword (``inplace=inplace``), or
    in a dict passed on as keywords (``**{"inplace": inplace}``), else where the program sets a module's flag to ``True`` after making it (``m.inplace = True``)."""
    def in_place(call: ast.Call) -> ast.keyword | _Default | None:
        given = _inplace_given(call)  # by keyword, or by position (an edit target either way)
        if given is None:
            return None
        return next((k for k in call.keywords if k.value is given), None) or _Default(given)

    here = [k for n in ast.walk(statement) if isinstance(n, ast.Call) for k in [in_place(n)] if k]
    if not here and maker:
        here = [k for n in ast.walk(source.tree) if isinstance(n, ast.Call) and
                (path_of(n.func) or "").split(".")[-1] == maker for k in [in_place(n)] if k]
    if not here and maker:  # a class the program looks up by name, made with the keyword
        # (``getattr(nn, activation)(inplace=True)``)
        here = [k for n in ast.walk(source.tree) if isinstance(n, ast.Call) and
                isinstance(n.func, ast.Call) and path_of(n.func.func) == "getattr"
                for k in [in_place(n)] if k]
    if not here and maker:  # ``inplace=inplace``: a parameter of the function that makes it,
        # whose default is True (``def __init__(self, ..., inplace=True)``)
        here = [d for n in ast.walk(source.tree) if isinstance(n, ast.Call) and
                (path_of(n.func) or "").split(".")[-1] == maker
                for k in n.keywords if k.arg == "inplace" and isinstance(k.value, ast.Name)
                for d in [_default_of(source.scope_at(n.lineno), k.value.id)] if d is not None]
        here = list({id(d.value): d for d in here}.values())
    if not here and maker:  # ``**params``: a dict of the function that makes it, whose
        # "inplace" entry is True or such a parameter (``{"inplace": inplace}``)
        here = [found for n in ast.walk(source.tree) if isinstance(n, ast.Call) and
                (path_of(n.func) or "").split(".")[-1] == maker
                for k in n.keywords if k.arg is None and isinstance(k.value, ast.Name)
                for found in _inplace_entries(source, source.scope_at(n.lineno), k.value.id)]
        here = list({id(d.value): d for d in here}.values())
    if not here and maker:  # the flag set after the module was made (``m.inplace = True``)
        here = [n for n in ast.walk(source.tree) if isinstance(n, ast.Assign) and
                isinstance(n.value, ast.Constant) and n.value.value is True and
                any(isinstance(t, ast.Attribute) and t.attr == "inplace" for t in n.targets)]
    if not here:
        return []
    plan = Plan(source)
    for keyword in here:
        plan.replace_span(keyword.value, "False")
    return one_fix("the operation makes a new tensor, so the node keeps the tensor it saved; "
                   "the result is the same numbers, at the cost of one more tensor's memory",
                   plan)


def _inplace_given(call: ast.Call) -> ast.expr | None:
    """The ``True`` a call of a torch layer or function gives its ``inplace`` parameter, by
    keyword (``nn.ReLU(inplace=True)``) or by position (``nn.LeakyReLU(0.2, True)``,
    ``F.relu(x, True)``: the position torch's own signature gives it); else None."""
    keyword = next((k.value for k in call.keywords if k.arg == "inplace"), None)
    if keyword is not None:
        return keyword if isinstance(keyword, ast.Constant) and keyword.value is True else None
    name = (path_of(call.func) or "").split(".")[-1]
    layer = getattr(torch.nn, name, None)
    made = layer if isinstance(layer, type) else getattr(torch.nn.functional, name, None)
    try:
        parameters = list(inspect.signature(made).parameters) if callable(made) else []
    except (TypeError, ValueError):
        return None
    if "inplace" not in parameters or parameters.index("inplace") >= len(call.args):
        return None
    given = call.args[parameters.index("inplace")]
    return given if isinstance(given, ast.Constant) and given.value is True else None


class _Default:
    """A parameter's default ``True`` as an edit target (its ``value`` the constant)."""

    def __init__(self, value: ast.Constant) -> None:
        self.value = value


def _inplace_entries(source: Source, scope: ast.AST, name: str) -> list[_Default]:
    """The ``True`` behind the "inplace" entry of the dicts that ``scope`` assigns to ``name``
    (passed on as ``**name``): the entry's own constant, or the default of the parameter it
    reads."""
    found = []
    for store in source.stores(scope, name):
        for table in ast.walk(store.value) if isinstance(store, ast.Assign) else ():
            for key, value in zip(getattr(table, "keys", []), getattr(table, "values", [])):
                if not (isinstance(table, ast.Dict) and isinstance(key, ast.Constant) and
                        key.value == "inplace"):
                    continue
                if isinstance(value, ast.Constant) and value.value is True:
                    found.append(_Default(value))
                elif isinstance(value, ast.Name) and _default_of(scope, value.id) is not None:
                    found.append(_default_of(scope, value.id))
    return found


def _default_of(scope: ast.AST, name: str) -> _Default | None:
    """The default ``True`` of the parameter ``name`` of the function ``scope``, else None."""
    arguments = getattr(scope, "args", None)
    if arguments is None:
        return None
    positional = arguments.posonlyargs + arguments.args
    pairs = list(zip(positional[len(positional) - len(arguments.defaults):], arguments.defaults))
    pairs += [(a, d) for a, d in zip(arguments.kwonlyargs, arguments.kw_defaults) if d is not None]
    return next((_Default(d) for a, d in pairs if a.arg == name and
                 isinstance(d, ast.Constant) and d.value is True), None)


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
