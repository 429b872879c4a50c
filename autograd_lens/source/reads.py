"""Reading the user's source: which names a step reads before it assigns them.

A variable that carries an old graph into a training step is, in the source, one that the step
*reads before it assigns* (``out, h = rnn(x, h)`` reads ``h`` first; ``loss = ...`` assigns
``loss`` first). This module turns a function's source into a list of :class:`Use` events in
the order Python evaluates them, cuts out the part that runs in one step, and answers "is this
path read before it is assigned here, and on which line?".

A *path* is a name as written: ``h``, ``self.h``, ``outputs['loss']``, ``buffer[3]`` (see
:mod:`~autograd_lens.source.paths`).
"""

from __future__ import annotations

import ast
import functools
import linecache
from typing import NamedTuple

from .paths import overlaps, path_of

# Calls that put something into a container without reading its tensors into this step.
MUTATORS = frozenset({"append", "extend", "insert", "clear", "pop", "add", "update",
                      "setdefault", "register_buffer"})
# Reads that look at a value without computing with it: ``state is not None``, ``len(buffer)``.
_LOOKS = frozenset({"isinstance", "len", "print", "type", "id", "hasattr", "repr", "str"})
# Methods that read a tensor's value without its graph: ``h.detach()``, ``loss.item()``.
# A container's methods that read its entries: ``self.cache.get(key)`` reads ``self.cache``.
_LOOKUPS = ("get", "values", "items")
_VALUE_ONLY = frozenset({"detach", "item", "tolist", "numpy", "size", "dim", "numel"})
_SCOPES = (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)
_LOOPS = (ast.For, ast.AsyncFor, ast.While)


class Use(NamedTuple):
    """One read or assignment of a path, at a line of the source."""

    path: str
    store: bool
    line: int
    mutator: bool = False
    adds: bool = False  # an assignment that adds to the old value: total = total + x, total += x
    alias: str = ""  # for ``value = value_next``: the path whose value it takes
    branch_end: int = 0  # an assignment under an ``if``: the last line of that ``if``
    part: bool = False  # an assignment into part of the value (``x[i] = v``), named by ``x``


class _Reader:
    """Collects :class:`Use` events in evaluation order, without entering nested functions."""

    def __init__(self) -> None:
        self.uses: list[Use] = []
        self.looking = False  # inside a read that does not compute (kept as a mutator-like use)
        self.branch_end = 0  # inside an ``if``: its last line

    def look(self, nodes: list[ast.AST]) -> None:
        was, self.looking = self.looking, True
        for node in nodes:
            self.load(node)
        self.looking = was

    def load(self, node: ast.AST) -> None:
        if isinstance(node, _SCOPES):
            return
        path = path_of(node) if isinstance(node, (ast.Name, ast.Attribute, ast.Subscript)) else None
        if path is not None:
            self.uses.append(Use(path, False, node.lineno, mutator=self.looking))
            if isinstance(node, ast.Subscript):
                self.load(node.slice)
            return
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) \
                and node.func.attr in MUTATORS and path_of(node.func.value) is not None:
            self.uses.append(Use(path_of(node.func.value), False, node.lineno, mutator=True))
            for arg in node.args + [k.value for k in node.keywords]:
                self.load(arg)
            return
        if isinstance(node, ast.Compare) and all(isinstance(op, (ast.Is, ast.IsNot))
                                                  for op in node.ops):
            self.look([node.left, *node.comparators])
            return
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) \
                and node.func.attr in _VALUE_ONLY and path_of(node.func.value) is not None:
            self.look([node.func.value])
            return
        if isinstance(node, ast.Call) and getattr(node.func, "id", None) in _LOOKS:
            self.look(node.args)
            return
        if isinstance(node, ast.stmt):
            self.statement(node)
            return
        for child in ast.iter_child_nodes(node):
            self.load(child)

    def store(self, target: ast.AST, adds: bool = False, alias: str = "") -> None:
        if isinstance(target, (ast.Tuple, ast.List)):
            for item in target.elts:
                self.store(item)
        elif isinstance(target, ast.Starred):
            self.store(target.value)
        else:
            path = path_of(target)
            if isinstance(target, ast.Subscript):
                self.load(target.slice)
            if path is not None:
                part = isinstance(target, ast.Subscript) and path == path_of(target.value)
                self.uses.append(Use(path, True, target.lineno, adds=adds, alias=alias,
                                     branch_end=self.branch_end, part=part))

    def statement(self, node: ast.stmt) -> None:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            self.uses.append(Use(node.name, True, node.lineno))
        elif isinstance(node, ast.Assign):
            self.load(node.value)
            value = node.value
            adds = isinstance(value, ast.BinOp) and isinstance(value.op, ast.Add)
            alias = path_of(value) or ""
            for target in node.targets:
                path = path_of(target)
                self.store(target, adds and path is not None
                           and path in (path_of(value.left), path_of(value.right)), alias)
        elif isinstance(node, ast.AugAssign):
            self.load(node.target)
            self.load(node.value)
            self.store(node.target, isinstance(node.op, ast.Add))
        elif isinstance(node, ast.AnnAssign):
            if node.value is not None:
                self.load(node.value)
                self.store(node.target)
        elif isinstance(node, (ast.For, ast.AsyncFor)):
            self.load(node.iter)
            self.loop(node)
        elif isinstance(node, ast.While):
            self.loop(node)
        elif isinstance(node, ast.If):  # ``if self.bank:`` looks at a container, reads no tensor
            test = node.test.operand if isinstance(node.test, ast.UnaryOp) and isinstance(
                node.test.op, ast.Not) else node.test
            (self.look if path_of(test) is not None else self.load)(
                [test] if path_of(test) is not None else node.test)
            was, self.branch_end = self.branch_end, node.end_lineno
            for child in node.body + node.orelse:
                self.statement(child)
            self.branch_end = was
        else:
            for child in ast.iter_child_nodes(node):
                self.load(child)

    def loop(self, node: ast.stmt) -> None:
        """One iteration: the loop variable (or the test), then the body, then ``else``."""
        if isinstance(node, ast.While):
            self.load(node.test)
        else:
            self.store(node.target)
        for child in node.body + node.orelse:
            self.statement(child)


def uses_of(node: ast.AST) -> list[Use]:
    """Every read and assignment in ``node`` (a function, a module or one loop iteration)."""
    reader = _Reader()
    if isinstance(node, _LOOPS):
        reader.loop(node)
    else:
        for child in getattr(node, "body", []):
            reader.statement(child)
    return reader.uses


@functools.lru_cache(maxsize=64)
def _parse(filename: str, size: int) -> ast.Module | None:
    try:
        return ast.parse("".join(linecache.getlines(filename)))
    except (SyntaxError, ValueError):
        return None


def source_tree(filename: str) -> ast.Module | None:
    """The parsed source of a file or notebook cell (None when it cannot be read)."""
    lines = linecache.getlines(filename)
    return _parse(filename, sum(map(len, lines))) if lines else None


def function_at(tree: ast.Module, first_line: int, name: str) -> ast.AST:
    """The function whose code starts at ``first_line`` (the module itself for module code)."""
    if name == "<module>":
        return tree
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name == name:
            start = min([node.lineno] + [d.lineno for d in node.decorator_list])
            if start == first_line or node.lineno == first_line:
                return node
    return tree


def innermost_loop(scope: ast.AST, line: int) -> ast.stmt | None:
    """The innermost loop of ``scope`` (not of a nested function) whose body holds ``line``."""
    found = None
    work = list(getattr(scope, "body", []))
    while work:
        node = work.pop()
        if isinstance(node, _SCOPES):
            continue
        if isinstance(node, _LOOPS) and node.body[0].lineno <= line <= node.end_lineno:
            found = node
            work = list(node.body)
            continue
        if getattr(node, "lineno", line) <= line <= getattr(node, "end_lineno", -1):
            work.extend(n for n in ast.iter_child_nodes(node) if isinstance(n, ast.stmt))
    return found


def step_uses(scope: ast.AST, line: int, previous: int | None) -> list[Use]:
    """The uses that make up the step that failed at ``line``, in the order they run.

    After a previous backward at line ``previous`` of the same function (None if unknown), in
    the same loop iteration or in straight code: the uses from just after it up to ``line``.
    Otherwise, in a loop: one iteration, from the loop's start up to ``line``; outside a loop:
    the function up to ``line``.
    """
    loop = innermost_loop(scope, line)
    uses = uses_of(scope if loop is None else loop)
    start = loop.lineno if loop is not None else 0
    if previous is not None and start <= previous < line and (
            loop is None or previous <= loop.end_lineno):
        start = previous
    else:
        start -= 1
    return [u for u in uses if start < u.line <= line]


def first_read(uses: list[Use], path: str) -> tuple[Use | None, bool]:
    """The most specific read of ``path`` before it is assigned, and whether it is read at all
    before being assigned (True: the value comes from before this stretch of code). An
    assignment under an ``if`` that ends before the last use (``if step % 4 == 0: h =
    h.detach()``) may not run: it does not make the value new (a read after it there does)."""
    best: Use | None = None
    last, branch = (uses[-1].line if uses else 0), (0, 0)  # branch: (store, end) of such an if
    for use in uses:
        stores = use.store and overlaps(use.path, path) and len(use.path) <= len(path)
        if use.branch_end and use.branch_end < last:
            branch = (use.line, use.branch_end) if stores else branch
            continue  # assigned under an ``if`` that ended: on other turns the old value stays
        if stores:
            return best, best is not None
        if not use.store and not use.mutator and overlaps(use.path, path) and \
                not branch[0] < use.line <= branch[1]:
            if best is None or _common(use.path, path) > _common(best.path, path):
                best = use
    return best, best is not None


def _common(a: str, b: str) -> int:
    return min(len(a), len(b)) if overlaps(a, b) else 0


def reads_of_attribute(tree: ast.Module, attr: str) -> list[tuple[str, Use, bool, int]]:
    """Functions of ``tree`` that read ``<something>.attr``: (function name, read, whether the
    function reads it before assigning it, the function's first line as its code counts it)."""
    found = []
    for node in ast.walk(tree):
        if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            continue
        uses = uses_of(node)
        paths = {u.path for u in uses if not u.store and not u.mutator
                 and (u.path.endswith("." + attr) or f".{attr}[" in u.path or
                      u.path.endswith(tuple(f".{attr}.{m}" for m in _LOOKUPS)))}
        for path in sorted(paths):  # self.queue[0], self.cache.get(k): read self.queue, self.cache
            base = path if path.endswith("." + attr) else \
                path.split(f".{attr}[" if f".{attr}[" in path else f".{attr}.")[0] + "." + attr
            use, before = first_read(uses, base)
            if use is not None and len(use.path) > len(base):  # self.queue.T names self.queue
                use = use._replace(path=base)
            if use is None:  # assigned first (a cache filled once), then read
                use = next((u for u in uses if not u.store and not u.mutator
                            and overlaps(u.path, base)), None)
            if use is not None:
                first = min([node.lineno] + [d.lineno for d in node.decorator_list])
                found.append((node.name, use, before, first))
    return found
