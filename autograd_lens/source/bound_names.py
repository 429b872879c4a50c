"""The names an edit's new lines read, and whether each is bound at their line on every path (a
parameter, a name assigned before in the function, a global or a builtin): an edit that reads a
name before it exists (``output = output.detach()`` above the line that makes ``output``) is not
offered."""

from __future__ import annotations

import ast


_BUILTINS = frozenset(dir(__import__("builtins"))) | {"__file__", "__name__", "__doc__",
                                                    "__builtins__", "__spec__", "__loader__",
                                                    "__package__", "__annotations__"}


_NESTED = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)


def _stored(node: ast.AST) -> set[str]:
    """The names a statement (or expression) binds in its own scope."""
    found: set[str] = set()
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        return {node.name}
    for child in ast.walk(node) if not isinstance(node, _NESTED) else ():
        if isinstance(child, ast.Name) and isinstance(child.ctx, ast.Store):
            found.add(child.id)
        elif isinstance(child, (ast.Import, ast.ImportFrom)):
            found |= {(a.asname or a.name).split(".")[0] for a in child.names}
        elif isinstance(child, ast.ExceptHandler) and child.name:
            found.add(child.name)
        elif isinstance(child, (ast.MatchAs, ast.MatchStar)) and child.name:
            found.add(child.name)
    return found


def _loads(node: ast.AST) -> set[str]:
    """The names an expression (or a simple statement) reads from its scope: a comprehension's
    or a lambda's own names left out."""
    found: set[str] = set()

    def visit(child: ast.AST, own: frozenset[str]) -> None:
        if isinstance(child, ast.Name) and isinstance(child.ctx, ast.Load):
            if child.id not in own:
                found.add(child.id)
            return
        if isinstance(child, (ast.ListComp, ast.SetComp, ast.GeneratorExp, ast.DictComp)):
            inner = own | {n for g in child.generators for n in _stored(g.target)}
            for index, generator in enumerate(child.generators):
                visit(generator.iter, own if index == 0 else inner)
                for test in generator.ifs:
                    visit(test, inner)
            for part in ("elt", "key", "value"):
                if getattr(child, part, None) is not None:
                    visit(getattr(child, part), inner)
            return
        if isinstance(child, ast.Lambda):
            args = child.args
            names = {a.arg for a in args.posonlyargs + args.args + args.kwonlyargs}
            names |= {a.arg for a in (args.vararg, args.kwarg) if a is not None}
            visit(child.body, own | names)
            return
        if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            for part in child.decorator_list:
                visit(part, own)
            return
        for grandchild in ast.iter_child_nodes(child):
            visit(grandchild, own)

    visit(node, frozenset())
    return found


def _headers(statement: ast.stmt) -> list[ast.AST]:
    """The parts of a compound statement read before its body runs (all of a simple one)."""
    if isinstance(statement, (ast.If, ast.While)):
        return [statement.test]
    if isinstance(statement, (ast.For, ast.AsyncFor)):
        return [statement.iter]
    if isinstance(statement, (ast.With, ast.AsyncWith)):
        return [item.context_expr for item in statement.items]
    if isinstance(statement, ast.Try) or type(statement).__name__ == "TryStar":
        return []
    if isinstance(statement, ast.Match):
        return [statement.subject]
    return [statement]


class _Bound:
    """Walks one scope's statements in order, keeping the names bound on every path so far, and
    notes each name that a statement starting on one of ``lines`` reads before it is bound."""

    def __init__(self, local: set[str], lines: set[int] | None, scope: str) -> None:
        self.local, self.lines, self.unbound, self.scope = local, lines, [], scope

    def check(self, statement: ast.stmt, bound: set[str]) -> None:
        if self.lines is not None and statement.lineno not in self.lines:
            return
        for part in _headers(statement):
            for name in sorted(_loads(part) & self.local - bound):
                self.unbound.append((name, statement.lineno, self.scope, ast.unparse(part)))
        if isinstance(statement, ast.AugAssign) and isinstance(statement.target, ast.Name) and \
                statement.target.id in self.local - bound:
            self.unbound.append((statement.target.id, statement.lineno, self.scope,
                                 ast.unparse(statement)))

    def body(self, statements: list[ast.stmt], bound: set[str]) -> set[str]:
        for statement in statements:
            bound = self.statement(statement, bound)
        return bound

    def statement(self, statement: ast.stmt, bound: set[str]) -> set[str]:
        self.check(statement, bound)
        if isinstance(statement, ast.If):
            return self.body(statement.body, set(bound)) & self.body(statement.orelse, set(bound))
        if isinstance(statement, (ast.For, ast.AsyncFor, ast.While)):
            inside = set(bound) | (_stored(statement.target) if hasattr(statement, "target")
                                   else set())
            self.body(statement.body, inside)
            self.body(statement.orelse, set(bound))
            return bound
        if isinstance(statement, (ast.With, ast.AsyncWith)):
            inside = set(bound)
            for item in statement.items:
                if item.optional_vars is not None:
                    inside |= _stored(item.optional_vars)
            return self.body(statement.body, inside)
        if isinstance(statement, ast.Try) or type(statement).__name__ == "TryStar":
            after = self.body(statement.body, set(bound))
            for handler in statement.handlers:
                self.body(handler.body, set(bound) | ({handler.name} if handler.name else set()))
            after = self.body(statement.orelse, after)
            return self.body(statement.finalbody, after)
        if isinstance(statement, ast.Match):
            for case in statement.cases:
                self.body(case.body, set(bound) | _stored(case.pattern))
            return bound
        return bound | _stored(statement)


def arguments_of(scope: ast.AST, starred: bool = True) -> set[str]:
    """The names of the function ``scope``'s arguments (``starred``: ``*args`` and ``**kw``
    too); none for a module or a class."""
    arguments = getattr(scope, "args", None)
    if not isinstance(arguments, ast.arguments):
        return set()
    extra = filter(None, (arguments.vararg, arguments.kwarg)) if starred else ()
    return {a.arg for a in (*arguments.posonlyargs, *arguments.args, *arguments.kwonlyargs,
                            *extra)}


def binds(scope: ast.AST, name: str) -> bool:
    """Whether the function ``scope`` binds ``name``: an argument or a local of it."""
    return name in arguments_of(scope) or name in _scope_locals(scope)


def _scope_locals(scope: ast.AST) -> set[str]:
    body = scope.body if hasattr(scope, "body") else []
    names: set[str] = set()
    declared: set[str] = set()
    stack = list(body)
    while stack:
        node = stack.pop()
        if isinstance(node, (ast.Global, ast.Nonlocal)):
            declared |= set(node.names)
            continue
        names |= _stored(node) if isinstance(node, _NESTED) else \
            {n.id for n in ast.iter_child_nodes(node) if isinstance(n, ast.Name)
             and isinstance(n.ctx, ast.Store)} | (_stored(node) if isinstance(
                 node, (ast.Import, ast.ImportFrom, ast.ExceptHandler)) else set())
        if not isinstance(node, _NESTED):
            stack.extend(ast.iter_child_nodes(node))
    return names - declared


def _unbound_in(tree: ast.Module, lines: set[int] | None,
                module: bool = True) -> list[tuple[str, int, str, str]]:
    """The names that the statements starting on ``lines`` (None: all) read before they are
    bound on some path of their scope (the module's, or a function's): (name, line, scope,
    the statement's text). ``module`` False: the module's own statements are not checked (a
    notebook cell, whose names other cells bind)."""
    found = []
    star = any(isinstance(n, ast.ImportFrom) and any(a.name == "*" for a in n.names)
               for n in ast.walk(tree))
    scopes: list[ast.AST] = [tree] + [n for n in ast.walk(tree)
                                      if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))]
    for scope in scopes:
        if scope is not tree and lines is not None and not any(
                scope.lineno <= line <= scope.end_lineno for line in lines):
            continue
        local = _scope_locals(scope)
        bound: set[str] = set()
        if isinstance(scope, ast.Module):
            if star or not module:
                continue
            # At module level, a name never bound there is unbound too, unless a builtin.
            every = {n.id for n in ast.walk(scope) if isinstance(n, ast.Name)}
            local = (local | every) - _BUILTINS
        else:
            args = scope.args
            bound = {a.arg for a in args.posonlyargs + args.args + args.kwonlyargs}
            bound |= {a.arg for a in (args.vararg, args.kwarg) if a is not None}
        walker = _Bound(local, lines, getattr(scope, "name", ""))
        walker.body(scope.body, bound)
        found += walker.unbound
    return found


def _set_later_in_init(tree: ast.Module, lines: set[int]) -> list[tuple[str, int]]:
    """The ``self.X`` that the statements of an ``__init__`` on ``lines`` read while that
    ``__init__`` sets ``self.X`` only on a later line (``self.scale = self.scale.detach()``
    put before ``self.scale = ...``), each with its line."""
    found = []
    for init in ast.walk(tree):
        if not (isinstance(init, ast.FunctionDef) and init.name == "__init__" and init.args.args
                and any(init.lineno < line <= init.end_lineno for line in lines)):
            continue
        me = init.args.args[0].arg
        sets: dict[str, list[int]] = {}
        for node in ast.walk(init):
            for target in getattr(node, "targets", []) + [getattr(node, "target", None)]:
                if isinstance(target, ast.Attribute) and isinstance(target.value, ast.Name) \
                        and target.value.id == me:
                    sets.setdefault(target.attr, []).append(node.lineno)
        for node in ast.walk(init):
            at = sets.get(getattr(node, "attr", ""), [])
            if isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Load) and \
                    isinstance(node.value, ast.Name) and node.value.id == me and \
                    node.lineno in lines and any(line > node.lineno for line in at) and \
                    not any(line < node.lineno for line in at):
                found.append((f"{me}.{node.attr}", node.lineno))
    return found


def names_bound(fixes: list) -> tuple[list, list[str]]:
    """The fixes whose new lines read only names bound at their line on every path (a
    parameter, a name assigned before in the function, a global or a builtin), and, for each
    left out, why (one clause). A fix whose edited file would not parse is left out too."""
    import linecache

    from .edits import apply, by_file
    from .places import is_cell

    kept, why = [], []
    for fix in fixes:
        reason = None
        for file, group in by_file(list(fix.edits)).items():
            lines = linecache.getlines(file)
            if not lines:
                continue
            try:
                edited = apply(group, lines)
            except ValueError:
                continue
            new_lines, shift, origin = set(), 0, {}
            for edit in sorted(group, key=lambda e: e.line):
                start = edit.line + shift
                new_lines |= set(range(start, start + len(edit.new)))
                origin.update({line: edit.line for line in range(start, start + len(edit.new))})
                shift += len(edit.new) - 1
            try:
                tree = ast.parse("".join(edited))
            except SyntaxError:
                reason = f"the edit ({fix.computes}) would not parse"
                break
            whole = not is_cell(file)
            try:  # what the program already reads so (after a loop, say) is not the edit's,
                # at the line it replaces too (``netD(fake.detach())`` for ``netD(fake)``)
                before = {(n, s, line) for n, line, s, _ in
                          _unbound_in(ast.parse("".join(lines)), None, whole)}
            except SyntaxError:
                before = set()
            unbound = [u for u in _unbound_in(tree, new_lines, whole)
                       if (u[0], u[2], origin.get(u[1])) not in before]
            if unbound:
                name, line, _, _ = unbound[0]
                reason = (f"the edit ({fix.computes}) reads `{name}` at its line {line}, "
                          "where that name is not yet bound on every path (it would raise "
                          "UnboundLocalError or NameError)")
                break
            unset = _set_later_in_init(tree, new_lines)
            if unset:
                name, line = unset[0]
                reason = (f"the edit ({fix.computes}) reads `{name}` at its line {line}, in "
                          "__init__ before the statement that first sets it (it would raise "
                          "AttributeError)")
                break
        if reason is None:
            kept.append(fix)
        else:
            why.append(reason)
    return kept, why

