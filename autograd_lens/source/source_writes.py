"""Where the program writes a tensor in place, or steps an optimizer, as its source shows.

:mod:`autograd_lens.explain.writes` knows, from version counters, which tensor a node saved was changed;
this module finds the lines: an in-place operation on a name (``probs += 1e-6``, ``h.relu_()``,
``self.queue[i] = k``), an optimizer's ``step()``, an assignment before a line, and whether a
step lies between two lines of a function. What a statement writes in place is read by
:mod:`~autograd_lens.source.in_place_ops`; the functions and statements searched come from
:mod:`~autograd_lens.source.function_search`.
"""

from __future__ import annotations

import ast
import sys
from typing import Any

import torch

from .candidates import NOT_USERS
from .function_search import first_line, functions, last_before, statements
from .in_place_ops import in_place, in_place_modules, in_place_nodes
from .reads import source_tree
from .paths import path_of


def op_on(path: str, frames: list[Any]) -> tuple | None:
    """Where the program writes ``path`` in place (``self.queue`` is matched in any method by
    its attribute): (file, line, function, text, the path as written there)."""
    return _found(frames, writer_of(path))


def writer_of(path: str) -> Any:
    """A test of a statement: the path as it writes ``path`` in place ("" when it does not);
    ``self.queue`` is matched in any method by its attribute."""
    attr = path.split(".", 1)[1] if "." in path else ""

    def writes(statement: ast.stmt) -> str:
        return next((p for p in in_place(statement) if p == path or (
            attr and p.endswith("." + attr.split(".")[-1]))), "")
    return writes


def step_of(optimizer: str, frames: list[Any]) -> tuple | None:
    """Where the program calls ``optimizer.step()``: (file, line, function, text, name)."""
    def steps(statement: ast.stmt) -> str:
        return optimizer if any(isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) and
                   n.func.attr == "step" and path_of(n.func.value) == optimizer
                   for n in ast.walk(statement)) else ""
    return _found(frames, steps)


_PARAMETER_LISTS = ("parameters", "named_parameters")


def _parameter_names(scope: ast.AST, module: str) -> set[str]:
    """The loop variables of ``scope`` that run over a module's parameters: ``p`` in ``for p
    in critic.parameters()`` (``module``: the module's name; empty: any module's)."""
    names = set()
    for node in ast.walk(scope):
        call = node.iter if isinstance(node, (ast.For, ast.comprehension)) else None
        if _lists_parameters(call, module):
            target = node.target.elts[-1] if isinstance(node.target, ast.Tuple) else node.target
            names |= {path_of(target) or ""} - {""}
        elif isinstance(call, ast.Call) and path_of(call.func) == "zip" and \
                isinstance(node.target, ast.Tuple) and len(node.target.elts) == len(call.args):
            # for tp, sp in zip(teacher.parameters(), student.parameters())
            names |= {path_of(t) or "" for t, a in zip(node.target.elts, call.args)
                      if _lists_parameters(a, module)} - {""}
    return names


def _lists_parameters(call: Any, module: str) -> bool:
    """Whether ``call`` is ``module.parameters()`` (any module's when ``module`` is empty)."""
    return isinstance(call, ast.Call) and isinstance(call.func, ast.Attribute) and \
        call.func.attr in _PARAMETER_LISTS and (not module or path_of(call.func.value) == module)


def weight_op(module: str, frames: list[Any]) -> tuple | None:
    """Where the program writes a weight of ``module`` in place (``p.clamp_(-c, c)`` in a loop
    over ``critic.parameters()``, ``critic[0].weight.data.mul_(0.5)``): in the failing
    function, only before the failing line (a write further down has not run yet); in another
    function of the program (a function that clips), any. (file, line, function, text, the path
    written)."""
    live = set()
    for filename, scope, line in functions(frames):
        if line:
            live.add(id(scope))
        elif id(scope) in live:
            continue  # a failing function: looked at up to its failing line only
        names = _parameter_names(scope, module if line else "")

        def writes(statement: ast.stmt) -> str:
            return next((p for p in in_place(statement) if p.split(".")[0] in names or (
                module and line and p.startswith((module + ".", module + "[")))), "")
        hit = last_before(scope, line, writes)
        if hit is not None:
            text = first_line(filename, hit)
            written = writes(hit)
            root = written.split(".")[0]
            return filename, hit.lineno, getattr(scope, "name", "<module>"), text, \
                root if root in names else written.removesuffix(".data")
    return None


def _found(frames: list[Any], wanted: Any) -> tuple | None:
    for filename, scope, line in functions(frames):
        hit = last_before(scope, line, wanted) or (last_before(scope, 0, wanted) if line else None)
        if hit is not None:
            text = first_line(filename, hit)
            return filename, hit.lineno, getattr(scope, "name", "<module>"), text, wanted(hit)
    return None


def steps_between(filename: str, first: int, last: int) -> bool:
    """Whether the source calls a ``step()`` (an optimizer's), or writes a tensor in place under
    ``torch.no_grad()``, on a line after ``first`` and before ``last`` of ``filename``, in the
    function holding ``last``: retaining the graph of the call at ``first`` for a backward at
    ``last`` would meet weights that step (or write) changed."""
    tree = source_tree(filename) if filename else None
    if tree is None or first >= last:
        return False
    scopes = [n for n in ast.walk(tree) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))
              and n.lineno <= last <= n.end_lineno and n.lineno <= first]
    scope = min(scopes, key=lambda n: n.end_lineno - n.lineno) if scopes else tree
    return any(isinstance(n, ast.Call) and _steps(n) and first < n.lineno < last
               for s in statements(scope) for n in ast.walk(s)) or any(
        first < s.lineno < last and any(in_place(s))
        for block in ast.walk(scope) if _without_grad(block) for s in statements(block))


def _without_grad(node: ast.AST) -> bool:
    """``with torch.no_grad():`` (or ``inference_mode``): where a program writes its weights in
    place by hand (a step of its own, weights perturbed as sharpness-aware minimization does)."""
    return isinstance(node, (ast.With, ast.AsyncWith)) and any(
        (path_of(item.context_expr.func if isinstance(item.context_expr, ast.Call)
                 else item.context_expr) or "").split(".")[-1] in ("no_grad", "inference_mode")
        for item in node.items)


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
    stores = [s.lineno for s in statements(scope) if s.lineno < line and isinstance(
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
    made_in_place: dict[str, dict[str, str]] = {}  # each file's modules made with inplace=True
    modules: dict[str, str] = {}

    def writes(statement: ast.stmt, frame: Any = None) -> str:
        for path, kind in in_place_nodes(statement, modules):
            held = frame.f_locals.get(path.split(".")[0].split("[")[0]) if frame else None
            if path and writers.intersection(kind) and (held is None or isinstance(held, torch.Tensor)):
                return path
        return ""
    for filename, scope, _ in functions(frames):
        frame = live.get((filename, getattr(scope, "lineno", 1)))
        if filename not in made_in_place:
            made_in_place[filename] = in_place_modules(filename)
        modules = made_in_place[filename]
        hits = [s for s in statements(scope) if writes(s, frame)]
        if hits:  # the last: a write after the node saved the tensor
            text = first_line(filename, hits[-1])
            return filename, hits[-1].lineno, getattr(scope, "name", "<module>"), text, \
                writes(hits[-1], frame)
    return None


def own_write(owner: type, attribute: str) -> tuple | None:
    """Where a module's own code writes its weight in place (``self.weight.mul_(...)`` in the
    ``forward`` of the module's class, or of a class it derives from, in the program's files):
    (file, line, function, text, the path written); the last such write of the first method
    that has one."""
    wanted = {f"self.{attribute}", f"self.{attribute}.data"}
    for cls in owner.__mro__:
        filename = getattr(sys.modules.get(cls.__module__), "__file__", None) or ""
        tree = source_tree(filename) if filename and not filename.startswith(NOT_USERS) else None
        for node in ast.walk(tree) if tree is not None else ():
            if not (isinstance(node, ast.ClassDef) and node.name == cls.__name__):
                continue
            for method in node.body:
                hits = [s for s in statements(method) if wanted.intersection(in_place(s))]
                if isinstance(method, (ast.FunctionDef, ast.AsyncFunctionDef)) and hits:
                    text = first_line(filename, hits[-1])
                    return filename, hits[-1].lineno, method.name, text, f"self.{attribute}"
    return None
