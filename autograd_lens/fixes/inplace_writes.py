"""The edit rule of the in-place error: a saved tensor changed after a node saved it.

Two writes change a saved tensor (see :mod:`autograd_lens.explain.writes`): the program's own
in-place operation, and a weight changed between the forward and the backward (the program's
write, an optimizer's ``step()``: :mod:`autograd_lens.fixes.built_again`). Where a library call
made the write, :mod:`autograd_lens.fixes.library_writes` gives the edit.

The program's own in-place operation (``probs += 1e-6``, ``h.relu_()``, ``self.queue[i] = k``):
the edit writes out of place (``probs = probs + 1e-6``, ``h = h.relu()``); an in-place method on
a result no name holds (``conv(x).unsqueeze_(1)``) becomes its out-of-place twin; where the
function writes the name in place more than once (``h += a(h)``, then ``h += b(h)``), a second
edit makes every such write out of place, for when the recorded one alone still fails. Where the
write is into part of the tensor, it writes into a copy (:mod:`autograd_lens.fixes.write_copies`);
parts read by writes into the same tensor (``buf[2] = f(buf[0])``, ``buf[4] = f(buf[2])``) are
read as copies on every such line, except where the node saved the written tensor as its own
result (``probs = sigmoid(z)``, then ``probs[m] = 1 - probs[m]``): the copy is then made before
the writes. The node keeps the tensor it saved, unchanged.

See :mod:`autograd_lens.fixes.rules` for what a rule reads and returns.
"""

from __future__ import annotations

import ast
import re

import torch

from ..source.edits import Plan
from ..source.source_file import Source, path_of
from .rules import Case, Fix, one_fix
from .write_copies import _copy_before, _part_reads, _written_into_a_copy
from .library_writes import _not_in_place, _read_as_copies
from .built_again import _built_after_writer, _write

_OPERATORS = {ast.Add: "+", ast.Sub: "-", ast.Mult: "*", ast.Div: "/", ast.FloorDiv: "//",
              ast.Pow: "**", ast.MatMult: "@", ast.Mod: "%"}
_ATOMS = (ast.Name, ast.Attribute, ast.Constant, ast.Call, ast.Subscript)


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
    name = write.name
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
