"""Where the program writes a tensor in place, or steps an optimizer, as its source shows.

:mod:`autograd_lens.explain.writes` knows, from version counters, which tensor a node saved was changed;
this module finds the lines: an in-place operation on a name (``probs += 1e-6``, ``h.relu_()``,
``self.queue[i] = k``), an optimizer's ``step()``, an assignment before a line, and whether a
step lies between two lines of a function.
"""

from __future__ import annotations

import ast
import linecache
import sys
from typing import Any, Iterator

import torch

from .candidates import NOT_USERS
from .reads import path_of, source_tree


def _functions(frames: list[Any]) -> Iterator[tuple[str, ast.AST, int]]:
    """The user's functions to look for a write in: each frame's own first (with its line), then
    every function of the frames' files (a write inside a module's ``forward``)."""
    files, called = [], set()
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
                if not code.co_filename.startswith(NOT_USERS):
                    called |= _called_before(node, frame.f_lineno)
                break
        if code.co_filename not in files and not code.co_filename.startswith(NOT_USERS):
            files.append(code.co_filename)
    for filename in files:
        for node in ast.walk(source_tree(filename)):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                yield filename, node, 0
    # Another module of the program: only the functions that a live frame called before its line.
    for filename in [f for f in _program_modules() if f not in files]:
        for node in ast.walk(source_tree(filename) or ast.Module(body=[])):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name in called:
                yield filename, node, 0


def _called_before(scope: ast.AST, line: int) -> set[str]:
    """The names of the functions ``scope`` calls before ``line`` (``pull`` in
    ``utils.pull(a, b)``)."""
    return {(path_of(n.func) or "").split(".")[-1] for n in ast.walk(scope)
            if isinstance(n, ast.Call) and getattr(n, "lineno", line) < line} - {""}


def _program_modules() -> list[str]:
    """The files of the program's own modules that are imported now (a ``utils.py`` beside the
    script): those outside Python's and the installed libraries' folders."""
    files = []
    for module in list(sys.modules.values()):
        filename = getattr(module, "__file__", None) or ""
        if filename.endswith(".py") and not filename.startswith(NOT_USERS):
            files.append(filename)
    return files


_AUGMENTED = {ast.Add: "Add", ast.Sub: "Sub", ast.Mult: "Mul", ast.Div: "Div", ast.Pow: "Pow"}
_MODULES = ("torch", "F", "nn.functional", "torch.nn.functional")


def _in_place(statement: ast.stmt) -> Iterator[str]:
    """The paths a statement writes in place: ``x += 1``, ``x.relu_()``, ``x[i] = v``,
    ``torch.relu_(x)``."""
    yield from (path for path, _ in _in_place_nodes(statement))


_PART = ("CopySlices", "IndexPutBackward")  # a write into part of a tensor, or into a view


def _in_place_nodes(statement: ast.stmt, modules: dict[str, str] | None = None
                    ) -> Iterator[tuple[str, tuple[str, ...]]]:
    """(path, the nodes autograd may record for the write) for each in-place write of a
    statement: ``x += 1`` is an ``AddBackward``, ``x.relu_()`` a ``ReluBackward``, a write into
    part of a tensor (``x[i] = v``) or into a view ``CopySlices`` or ``IndexPutBackward``; a
    call with ``inplace=True`` (``F.relu(x, inplace=True)``), or of a module that ``modules``
    says was made with it (``self.act(x)``), writes its first argument."""
    if isinstance(statement, ast.AugAssign):
        yield path_of(statement.target) or "", _PART if isinstance(
            statement.target, ast.Subscript) else (_AUGMENTED.get(type(statement.op), "?") +
                                                   "Backward", _PART[0])
    if isinstance(statement, ast.Assign):
        for target in statement.targets:
            if isinstance(target, ast.Subscript):
                yield path_of(target.value) or "", _PART
    for node in ast.walk(statement):
        kind = _call_in_place(node, modules or {})
        if kind and node.args:  # F.relu(x, inplace=True), self.act(x) made with inplace=True
            yield path_of(node.args[0]) or "", (kind + "Backward", _PART[0])
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and \
                node.func.attr.endswith("_") and not node.func.attr.startswith("_"):
            written = node.func.value
            if path_of(written) in _MODULES and node.args:  # torch.relu_(x)
                written = node.args[0]
            kind = "".join(w.capitalize() for w in node.func.attr[:-1].split("_")) + "Backward"
            yield path_of(written) or "", _PART if isinstance(written, ast.Subscript) else \
                (kind, _PART[0])


# What an activation (or dropout) made with inplace=True records for its write, by its class or
# its function's name, where that is not the name itself (nn.ReLU: ReluBackward; F.dropout: Mul).
_IN_PLACE_KINDS = {"ReLU": "Relu", "LeakyReLU": "LeakyRelu", "ReLU6": "Hardtanh", "relu6": "Hardtanh",
                   "ELU": "Elu", "SELU": "Elu", "selu": "Elu", "CELU": "Celu", "SiLU": "Silu",
                   "Dropout": "Mul", "Dropout1d": "Mul", "Dropout2d": "Mul", "Dropout3d": "Mul",
                   "dropout": "Mul", "dropout1d": "Mul", "dropout2d": "Mul", "dropout3d": "Mul"}


def _made_in_place(call: ast.AST) -> str:
    """The node a call made with ``inplace=True`` records (``Relu``), or ""."""
    if not isinstance(call, ast.Call) or not any(
            k.arg == "inplace" and isinstance(k.value, ast.Constant) and k.value.value is True
            for k in call.keywords):
        return ""
    name = (path_of(call.func) or "").split(".")[-1]
    return _IN_PLACE_KINDS.get(name) or "".join(w.capitalize() for w in name.split("_"))


def _call_in_place(node: ast.AST, modules: dict[str, str]) -> str:
    """What a call writes its first argument as, in place: ``F.relu(x, inplace=True)``, or a
    module that ``modules`` names (``self.act(x)``); "" for any other call."""
    if not isinstance(node, ast.Call):
        return ""
    return _made_in_place(node) or modules.get(path_of(node.func) or "", "")


def in_place_modules(filename: str) -> dict[str, str]:
    """The attributes a file assigns a module made with ``inplace=True`` (``self.act =
    nn.ReLU(inplace=True)``), with the node its write records."""
    tree = source_tree(filename)
    found = {}
    for node in ast.walk(tree) if tree is not None else ():
        kind = _made_in_place(node.value) if isinstance(node, ast.Assign) else ""
        for target in node.targets if kind else ():
            found[path_of(target) or ""] = kind
    found.pop("", None)
    return found


def first_line(filename: str, statement: ast.stmt) -> str:
    """The first line of ``statement``'s source, as written in ``filename``."""
    return (ast.get_source_segment("".join(linecache.getlines(filename)), statement)
            or "").split("\n")[0]


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
    return _found(frames, writer_of(path))


def writer_of(path: str) -> Any:
    """A test of a statement: the path as it writes ``path`` in place ("" when it does not);
    ``self.queue`` is matched in any method by its attribute."""
    attr = path.split(".", 1)[1] if "." in path else ""

    def writes(statement: ast.stmt) -> str:
        return next((p for p in _in_place(statement) if p == path or (
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
    for filename, scope, line in _functions(frames):
        if line:
            live.add(id(scope))
        elif id(scope) in live:
            continue  # a failing function: looked at up to its failing line only
        names = _parameter_names(scope, module if line else "")

        def writes(statement: ast.stmt) -> str:
            return next((p for p in _in_place(statement) if p.split(".")[0] in names or (
                module and line and p.startswith((module + ".", module + "[")))), "")
        hit = _last_before(scope, line, writes)
        if hit is not None:
            text = first_line(filename, hit)
            written = writes(hit)
            root = written.split(".")[0]
            return filename, hit.lineno, getattr(scope, "name", "<module>"), text, \
                root if root in names else written.removesuffix(".data")
    return None


def _found(frames: list[Any], wanted: Any) -> tuple | None:
    for filename, scope, line in _functions(frames):
        hit = _last_before(scope, line, wanted) or (_last_before(scope, 0, wanted) if line else None)
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
               for s in _statements(scope) for n in ast.walk(s)) or any(
        first < s.lineno < last and any(_in_place(s))
        for block in ast.walk(scope) if _without_grad(block) for s in _statements(block))


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
    made_in_place: dict[str, dict[str, str]] = {}  # each file's modules made with inplace=True
    modules: dict[str, str] = {}

    def writes(statement: ast.stmt, frame: Any = None) -> str:
        for path, kind in _in_place_nodes(statement, modules):
            held = frame.f_locals.get(path.split(".")[0].split("[")[0]) if frame else None
            if path and writers.intersection(kind) and (held is None or isinstance(held, torch.Tensor)):
                return path
        return ""
    for filename, scope, _ in _functions(frames):
        frame = live.get((filename, getattr(scope, "lineno", 1)))
        if filename not in made_in_place:
            made_in_place[filename] = in_place_modules(filename)
        modules = made_in_place[filename]
        hits = [s for s in _statements(scope) if writes(s, frame)]
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
                hits = [s for s in _statements(method) if wanted.intersection(_in_place(s))]
                if isinstance(method, (ast.FunctionDef, ast.AsyncFunctionDef)) and hits:
                    text = first_line(filename, hits[-1])
                    return filename, hits[-1].lineno, method.name, text, f"self.{attribute}"
    return None
