"""One file of the user's program as the edit rules read it: its lines, its syntax tree, and the
questions they ask of it.

:class:`Source` answers which statement holds a line, which functions hold it, where a name is
assigned or read, which calls are the backward's, and whether a name may hold None;
:func:`path_of` names what an edit can write back (``buf[i]`` is not ``buf``), and
:func:`targets` the paths a statement assigns.
"""

from __future__ import annotations

import ast
import linecache
from typing import Iterator

from . import paths, reads
from .reads import _SCOPES


_SIMPLE = (ast.Assign, ast.AugAssign, ast.AnnAssign, ast.Expr, ast.Return)


def path_of(node: ast.AST) -> str | None:
    """``h``, ``self.h``, ``out["loss"]``, ``buf[3]`` as written; None for anything else (an
    edit names only what it can write back, so ``buf[i]`` is not ``buf``)."""
    return paths.path_of(node, exact=True)


def is_none_test(test: ast.AST, path: str) -> bool:
    """Whether ``test`` is ``path is None`` (a memo's guard: ``if self._cache is None:``)."""
    return isinstance(test, ast.Compare) and len(test.ops) == 1 and \
        isinstance(test.ops[0], ast.Is) and path_of(test.left) == path and \
        isinstance(test.comparators[0], ast.Constant) and test.comparators[0].value is None


def _same(a: str, b: str) -> bool:
    return a.replace("'", '"') == b.replace("'", '"')


def _walk_scope(node: ast.AST) -> Iterator[ast.AST]:
    """Every node under ``node`` without entering nested functions or classes."""
    for child in ast.iter_child_nodes(node):
        yield child
        if not isinstance(child, _SCOPES):
            yield from _walk_scope(child)


class Source:
    """One file's lines and syntax tree."""

    def __init__(self, file: str, lines: list[str], tree: ast.Module) -> None:
        self.file, self.lines, self.tree = file, lines, tree

    @classmethod
    def read(cls, file: str) -> Source | None:
        lines = linecache.getlines(file)
        try:
            return cls(file, lines, ast.parse("".join(lines))) if lines else None
        except (SyntaxError, ValueError):
            return None

    def text(self, line: int) -> str:
        return self.lines[line - 1].rstrip("\r\n")

    def indent(self, line: int) -> str:
        text = self.text(line)
        return text[:len(text) - len(text.lstrip())]

    def segment(self, node: ast.AST) -> str:
        return ast.get_source_segment("".join(self.lines), node) or ""

    def scopes_at(self, line: int) -> list[ast.AST]:
        """The module, then each function holding ``line``, innermost last."""
        found: list[ast.AST] = [self.tree]
        node: ast.AST = self.tree
        while True:
            inner = [n for n in ast.walk(node) if n is not node
                     and isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))
                     and n.lineno <= line <= n.end_lineno]
            if not inner:
                return found
            node = max(inner, key=lambda n: n.end_lineno - n.lineno)  # the next one down
            found.append(node)

    def scope_at(self, line: int) -> ast.AST:
        return self.scopes_at(line)[-1]

    def statement_at(self, line: int) -> ast.stmt | None:
        """The innermost simple statement holding ``line`` (None on a loop's or def's header)."""
        best = None
        for node in ast.walk(self.tree):
            if isinstance(node, ast.stmt) and node.lineno <= line <= node.end_lineno:
                if best is None or node.end_lineno - node.lineno <= best.end_lineno - best.lineno:
                    best = node
        return best if isinstance(best, _SIMPLE + (ast.If, ast.With)) else None

    def loop_of(self, node: ast.stmt) -> ast.stmt | None:
        """The innermost loop of the same function whose body holds ``node``."""
        return reads.innermost_loop(self.scope_at(node.lineno), node.lineno)

    def block_of(self, statement: ast.stmt) -> list[ast.stmt]:
        """The statement list (a body or an ``else``) that holds ``statement``, else []."""
        return next((block for node in ast.walk(self.tree) for field in ("body", "orelse")
                     if isinstance(block := getattr(node, field, None), list) and
                     any(s is statement for s in block)), [])

    def statements(self, scope: ast.AST) -> list[ast.stmt]:
        """The statements of ``scope`` (not of nested functions), in source order."""
        found = [n for n in _walk_scope(scope) if isinstance(n, ast.stmt)]
        return sorted(found, key=lambda n: (n.lineno, n.col_offset))

    def stores(self, scope: ast.AST, path: str) -> list[ast.stmt]:
        """The assignments of ``path`` in ``scope``, in source order."""
        return [s for s in self.statements(scope) if any(_same(t, path) for t in targets(s))]

    def reads(self, node: ast.AST, path: str) -> list[ast.expr]:
        """The reads of ``path`` under ``node`` (not inside nested functions)."""
        return [n for n in [node, *_walk_scope(node)]
                if isinstance(getattr(n, "ctx", None), ast.Load) and path_of(n) is not None
                and _same(path_of(n), path)]

    def calls(self, scope: ast.AST, names: tuple[str, ...]) -> list[tuple[ast.stmt, ast.Call]]:
        """Calls of a function or method named one of ``names`` (``backward``, ``grad``), with
        the statement holding each, in source order."""
        found = []
        for statement in self.statements(scope):
            for node in ast.walk(statement):
                name = getattr(node, "func", None)
                name = getattr(name, "attr", getattr(name, "id", None))
                if isinstance(node, ast.Call) and name in names and \
                        self.statement_at(node.lineno) is statement:
                    found.append((statement, node))
        return found

    def calls_within(self, statement: ast.stmt, names: tuple[str, ...]) -> list[ast.Call]:
        """Calls of ``names`` inside the functions of this file that ``statement`` calls
        (``self.log_grad_norm(loss)`` runs ``torch.autograd.grad``), in source order."""
        called = {getattr(n.func, "attr", getattr(n.func, "id", None)) for n in ast.walk(statement)
                  if isinstance(n, ast.Call)}
        return [call for node in ast.walk(self.tree)
                if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and
                node.name in called for _, call in self.calls(node, names)]

    def as_written(self, statement: ast.stmt, path: str) -> str:
        """``path`` as ``statement`` reads it: itself, or, for an entry named by the key it had
        at run time (``states["north"]``), the one read that names the key by a variable
        (``states[name]``); else ``path`` itself."""
        if self.reads(statement, path) or not path.endswith("]"):
            return path
        container = path[:path.index("[")]
        found = {self.segment(n) for n in _walk_scope(statement)
                 if isinstance(n, ast.Subscript) and isinstance(n.ctx, ast.Load)
                 and isinstance(n.slice, ast.Name) and _same(path_of(n.value) or "", container)}
        return found.pop() if len(found) == 1 else path

    def may_be_none(self, path: str) -> bool:
        """Whether the program assigns None to ``path`` anywhere (for ``states[name]``, fills
        the container with None), or takes it as a parameter whose default is None."""
        container = path[:path.index("[")] if "[" in path else None
        for node in ast.walk(self.tree):
            for target, value in _pairs(node):
                if _same(target, path) and isinstance(value, ast.Constant) and value.value is None:
                    return True
                if container and _same(target, container) and _holds_none(value):
                    return True
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                args = node.args.args + node.args.kwonlyargs
                defaults = [None] * (len(node.args.args) - len(node.args.defaults)) + \
                    list(node.args.defaults) + list(node.args.kw_defaults)
                for arg, default in zip(args, defaults):
                    if arg.arg == path and isinstance(default, ast.Constant) and default.value is None:
                        return True
        return False


def _holds_none(value: ast.expr | None) -> bool:
    """A container built with None entries: ``{k: None for k in ...}``, ``[None] * n``,
    ``dict.fromkeys(keys)``, ``defaultdict(lambda: None)``, a literal with a None in it."""
    none = lambda node: isinstance(node, ast.Constant) and node.value is None  # noqa: E731
    if isinstance(value, ast.DictComp):
        return none(value.value)
    if isinstance(value, (ast.ListComp, ast.SetComp)):
        return none(value.elt)
    if isinstance(value, ast.Dict):
        return any(none(v) for v in value.values)
    if isinstance(value, (ast.List, ast.Tuple)):
        return any(none(v) for v in value.elts)
    if isinstance(value, ast.BinOp) and isinstance(value.op, ast.Mult):
        return _holds_none(value.left) or _holds_none(value.right)
    if isinstance(value, ast.Call) and (path_of(value.func) or "").split(".")[-1] == \
            "defaultdict" and value.args:  # defaultdict(lambda: None): None for a new key
        return isinstance(value.args[0], ast.Lambda) and none(value.args[0].body)
    return isinstance(value, ast.Call) and getattr(value.func, "attr", None) == "fromkeys" \
        and len(value.args) == 1


def _pairs(node: ast.AST) -> Iterator[tuple[str, ast.expr | None]]:
    """(target path, value) for each target an assignment statement gives a value."""
    if isinstance(node, ast.Assign):
        for target in node.targets:
            if isinstance(target, ast.Tuple) and isinstance(node.value, ast.Tuple) and \
                    len(target.elts) == len(node.value.elts):
                for item, value in zip(target.elts, node.value.elts):
                    if path_of(item):
                        yield path_of(item), value
            elif path_of(target):
                yield path_of(target), node.value
    elif isinstance(node, ast.AnnAssign) and path_of(node.target):
        yield path_of(node.target), node.value


def targets(node: ast.AST) -> list[str]:
    """The paths a statement assigns (``h`` and ``out`` in ``out, h = rnn(x, h)``)."""
    found = []
    items = list(node.targets) if isinstance(node, ast.Assign) else \
        [node.target] if isinstance(node, (ast.AugAssign, ast.AnnAssign)) else []
    while items:
        item = items.pop(0)
        if isinstance(item, (ast.Tuple, ast.List)):
            items[:0] = item.elts
        elif isinstance(item, ast.Starred):
            items.insert(0, item.value)
        elif path_of(item):
            found.append(path_of(item))
    return found
