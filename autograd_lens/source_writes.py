"""Where the program writes a tensor in place, or steps an optimizer, as its source shows.

:mod:`autograd_lens.writes` knows, from version counters, which tensor a node saved was changed;
this module finds the lines: an in-place operation on a name (``probs += 1e-6``, ``h.relu_()``,
``self.queue[i] = k``), an optimizer's ``step()``, an assignment before a line, and whether a
step lies between two lines of a function.
"""

from __future__ import annotations

import ast
import linecache
from typing import Any, Iterator

import torch

from .candidates import NOT_USERS
from .reads import path_of, source_tree


def _functions(frames: list[Any]) -> Iterator[tuple[str, ast.AST, int]]:
    """The user's functions to look for a write in: each frame's own first (with its line), then
    every function of the frames' files (a write inside a module's ``forward``)."""
    files = []
    for frame in frames:
        code = frame.f_code
        tree = source_tree(code.co_filename)
        if tree is None:
            continue
        for node in ast.walk(tree):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Module)) and \
                    getattr(node, "lineno", code.co_firstlineno) == code.co_firstlineno and \
                    getattr(node, "name", "<module>") == code.co_name:
                yield code.co_filename, node, frame.f_lineno
                break
        if code.co_filename not in files and not code.co_filename.startswith(NOT_USERS):
            files.append(code.co_filename)
    for filename in files:
        for node in ast.walk(source_tree(filename)):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                yield filename, node, 0


_AUGMENTED = {ast.Add: "Add", ast.Sub: "Sub", ast.Mult: "Mul", ast.Div: "Div", ast.Pow: "Pow"}
_MODULES = ("torch", "F", "nn.functional", "torch.nn.functional")


def _in_place(statement: ast.stmt) -> Iterator[str]:
    """The paths a statement writes in place: ``x += 1``, ``x.relu_()``, ``x[i] = v``,
    ``torch.relu_(x)``."""
    yield from (path for path, _ in _in_place_nodes(statement))


_PART = ("CopySlices", "IndexPutBackward")  # a write into part of a tensor, or into a view


def _in_place_nodes(statement: ast.stmt) -> Iterator[tuple[str, tuple[str, ...]]]:
    """(path, the nodes autograd may record for the write) for each in-place write of a
    statement: ``x += 1`` is an ``AddBackward``, ``x.relu_()`` a ``ReluBackward``, a write into
    part of a tensor (``x[i] = v``) or into a view ``CopySlices`` or ``IndexPutBackward``."""
    if isinstance(statement, ast.AugAssign):
        yield path_of(statement.target) or "", _PART if isinstance(
            statement.target, ast.Subscript) else (_AUGMENTED.get(type(statement.op), "?") +
                                                   "Backward", _PART[0])
    if isinstance(statement, ast.Assign):
        for target in statement.targets:
            if isinstance(target, ast.Subscript):
                yield path_of(target.value) or "", _PART
    for node in ast.walk(statement):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and \
                node.func.attr.endswith("_") and not node.func.attr.startswith("_"):
            written = node.func.value
            if path_of(written) in _MODULES and node.args:  # torch.relu_(x)
                written = node.args[0]
            kind = "".join(w.capitalize() for w in node.func.attr[:-1].split("_")) + "Backward"
            yield path_of(written) or "", _PART if isinstance(written, ast.Subscript) else \
                (kind, _PART[0])


_BLOCKS = (ast.For, ast.AsyncFor, ast.While, ast.If, ast.With, ast.AsyncWith, ast.Try)
_SCOPES = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)


def _statements(scope: ast.AST) -> list[ast.stmt]:
    """The simple statements of ``scope``, in blocks too, not in nested functions or classes."""
    found, todo = [], list(ast.iter_child_nodes(scope))
    while todo:
        node = todo.pop()
        if isinstance(node, _SCOPES):
            continue
        if isinstance(node, ast.stmt) and not isinstance(node, _BLOCKS):
            found.append(node)
        else:
            todo += list(ast.iter_child_nodes(node))
    return sorted(found, key=lambda n: n.lineno)


def _last_before(scope: ast.AST, line: int, wanted: Any) -> ast.stmt | None:
    """The last statement of ``scope`` (before ``line`` when given) that ``wanted`` accepts."""
    hits = [s for s in _statements(scope) if wanted(s) and (not line or s.lineno < line)]
    return hits[-1] if hits else None


def op_on(path: str, frames: list[Any]) -> tuple | None:
    """Where the program writes ``path`` in place (``self.queue`` is matched in any method by
    its attribute): (file, line, function, text, the path as written there)."""
    attr = path.split(".", 1)[1] if "." in path else ""

    def writes(statement: ast.stmt) -> str:
        return next((p for p in _in_place(statement) if p == path or (
            attr and p.endswith("." + attr.split(".")[-1]))), "")
    return _found(frames, writes)


def step_of(optimizer: str, frames: list[Any]) -> tuple | None:
    """Where the program calls ``optimizer.step()``: (file, line, function, text, name)."""
    def steps(statement: ast.stmt) -> str:
        return optimizer if any(isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) and
                   n.func.attr == "step" and path_of(n.func.value) == optimizer
                   for n in ast.walk(statement)) else ""
    return _found(frames, steps)


def _found(frames: list[Any], wanted: Any) -> tuple | None:
    for filename, scope, line in _functions(frames):
        hit = _last_before(scope, line, wanted) or (_last_before(scope, 0, wanted) if line else None)
        if hit is not None:
            text = (ast.get_source_segment("".join(linecache.getlines(filename)), hit)
                    or "").split("\n")[0]
            return filename, hit.lineno, getattr(scope, "name", "<module>"), text, wanted(hit)
    return None


def steps_between(filename: str, first: int, last: int) -> bool:
    """Whether the source calls a ``step()`` (an optimizer's) on a line after ``first`` and
    before ``last`` of ``filename``, in the function holding ``last``: retaining the graph of
    the call at ``first`` for a backward at ``last`` would meet weights that step changed."""
    tree = source_tree(filename) if filename else None
    if tree is None or first >= last:
        return False
    scopes = [n for n in ast.walk(tree) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))
              and n.lineno <= last <= n.end_lineno and n.lineno <= first]
    scope = min(scopes, key=lambda n: n.end_lineno - n.lineno) if scopes else tree
    return any(isinstance(n, ast.Call) and _steps(n) and first < n.lineno < last
               for s in _statements(scope) for n in ast.walk(s))


def _steps(call: ast.Call) -> bool:
    """``opt.step()``, or an optimizer's own step of another name (sharpness-aware
    minimization's ``optimizer.first_step()``): a ``*_step`` method of an optimizer's name."""
    if not isinstance(call.func, ast.Attribute):
        return False
    owner = (path_of(call.func.value) or "").split(".")[-1].lower()
    return call.func.attr == "step" or (call.func.attr.endswith("_step") and "optim" in owner)


def built_before(filename: str, name: str, line: int) -> int:
    """The line of the last assignment of ``name`` before ``line``, in the function holding
    ``line`` (0: none)."""
    tree = source_tree(filename) if filename else None
    if tree is None:
        return 0
    scopes = [n for n in ast.walk(tree) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))
              and n.lineno <= line <= n.end_lineno]
    scope = min(scopes, key=lambda n: n.end_lineno - n.lineno) if scopes else tree
    stores = [s.lineno for s in _statements(scope) if s.lineno < line and isinstance(
        s, (ast.Assign, ast.AnnAssign)) and any(
        path_of(t) == name for target in getattr(s, "targets", [getattr(s, "target", None)])
        for t in (target.elts if isinstance(target, ast.Tuple) else [target]))]
    return stores[-1] if stores else 0


def op_recorded(writers: set[str], frames: list[Any]) -> tuple | None:
    """Where the program writes in place a tensor whose write autograd recorded as one of
    ``writers`` (node names without their number: ``AddBackward``, ``CopySlices``), in any
    function of the user's files (a module's ``forward`` that has returned): (file, line,
    function, text, the path written). A name that a live frame holds as something other than
    a tensor (a counter, ``n += 1``) is not a candidate."""
    live = {(f.f_code.co_filename, f.f_code.co_firstlineno): f for f in frames}

    def writes(statement: ast.stmt, frame: Any = None) -> str:
        for path, kind in _in_place_nodes(statement):
            held = frame.f_locals.get(path.split(".")[0].split("[")[0]) if frame else None
            if path and writers.intersection(kind) and (held is None or isinstance(held, torch.Tensor)):
                return path
        return ""
    for filename, scope, _ in _functions(frames):
        frame = live.get((filename, getattr(scope, "lineno", 1)))
        hits = [s for s in _statements(scope) if writes(s, frame)]
        if hits:  # the last: a write after the node saved the tensor
            text = (ast.get_source_segment("".join(linecache.getlines(filename)), hits[-1])
                    or "").split("\n")[0]
            return filename, hits[-1].lineno, getattr(scope, "name", "<module>"), text, \
                writes(hits[-1], frame)
    return None
