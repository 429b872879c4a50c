"""When an edit that a rule would write cannot do what it says, as the source shows.

A rule writes its edit from the source alone. Each check here finds, in the same source, a reason
that the edit would leave the old graph in place or cut a graph this step still needs; the rule
then gives the next fix, or none (an empty answer is honest, a guessed edit is not):

- a statement computed again inside the loop that reads another value computed once before the
  loop (its graph comes back with it);
- a detach put before a statement that already detaches the same name (it did not run, or the
  old graph does not come in there);
- a running value stored detached that the same function then returns (this call's own output
  would lose its graph);
- a value detached where it is passed to a function that differentiates with
  ``torch.autograd.grad`` (what it differentiates may no longer require grad);
- a name that a function only reads, from its module or an enclosing function (``h = h.detach()``
  there would make it a local name, unbound when read), or an attribute that ``__init__`` reads
  before the statement that first sets it;
- a value kept before the loop from a network that the loop calls again (a snapshot of its
  output: computed again inside, it would be the loop's own);
- an attribute computed once in ``__init__`` from the object's own parts (detached, they would
  never be trained);
- a value computed from a gradient taken with ``create_graph=True`` (weights adapted by an inner
  step: kept as a constant, the outer step would get no gradient through the inner one).
"""

from __future__ import annotations

import ast

from .edits import Source, path_of, targets

_FACTORIES = {"randn", "rand", "randint", "randperm", "zeros", "ones", "full", "empty", "eye",
              "arange", "linspace", "tensor", "as_tensor", "from_numpy", "normal", "zeros_like",
              "ones_like", "randn_like", "rand_like", "full_like", "empty_like"}


def _data(value: ast.expr | None) -> bool:
    """Whether ``value`` is data, never a graph: a constant, a ``torch`` factory (``torch.randn``,
    ``torch.zeros``), or a tuple or arithmetic of those."""
    if value is None or isinstance(value, ast.Constant):
        return True
    if isinstance(value, (ast.Tuple, ast.List)):
        return all(_data(item) for item in value.elts)
    if isinstance(value, ast.BinOp):
        return _data(value.left) and _data(value.right)
    if isinstance(value, ast.UnaryOp):
        return _data(value.operand)
    if isinstance(value, ast.Call):
        name = path_of(value.func) or ""
        return name.startswith("torch.") and name.split(".")[-1] in _FACTORIES
    return False


def _no_grad(source: Source, statement: ast.stmt) -> bool:
    """Whether ``statement`` sits in a ``with torch.no_grad():`` block."""
    return any(isinstance(node, ast.With) and node.lineno < statement.lineno <= node.end_lineno
               and any("no_grad" in source.segment(item.context_expr) for item in node.items)
               for node in ast.walk(source.scope_at(statement.lineno)))


def reads_kept_value(source: Source, store: ast.stmt, loop: ast.stmt) -> bool:
    """Whether ``store`` (before ``loop``) reads a name that the same function computes before
    the loop and never again in it, from something other than data (``values = critic(obs)``
    for ``advantages = returns - values``): computing ``store`` again inside the loop would
    bring that value's old graph back."""
    scope = source.scope_at(store.lineno)
    calls = {id(part) for n in ast.walk(store) if isinstance(n, ast.Call)
             for part in ast.walk(n.func)}  # ``critic`` and ``model`` in ``model.style(x)``
    for name in {n.id for n in ast.walk(store.value) if isinstance(n, ast.Name)
                 and isinstance(n.ctx, ast.Load) and id(n) not in calls}:
        stores = source.stores(scope, name)
        before = [s for s in stores if s.end_lineno < loop.lineno]
        inside = [s for s in stores if loop.lineno <= s.lineno <= loop.end_lineno]
        if before and not inside and not _data(getattr(before[-1], "value", None)) and \
                not _no_grad(source, before[-1]):
            return True
    return False


def from_inner_step(source: Source, store: ast.stmt) -> bool:
    """Whether ``store`` (``adapted = theta - lr * step``) reads a name that its function assigns
    from ``torch.autograd.grad(..., create_graph=True)`` before it: a value whose graph through
    the gradient is the point (second-order meta-learning); detached, the weights before the inner
    step would get no gradient from it."""
    scope = source.scope_at(store.lineno)
    for name in {n.id for n in ast.walk(store.value) if isinstance(n, ast.Name)}:
        for made in source.stores(scope, name):
            if made.end_lineno < store.lineno and any(_second_order(n) for n in ast.walk(made)):
                return True
    return False


def _second_order(node: ast.AST) -> bool:
    """``torch.autograd.grad(..., create_graph=True)`` (or ``grad``/``autograd.grad``)."""
    return isinstance(node, ast.Call) and \
        path_of(node.func) in ("torch.autograd.grad", "autograd.grad", "grad") and \
        any(k.arg == "create_graph" and isinstance(k.value, ast.Constant) and k.value.value is True
            for k in node.keywords)


def already_detached(source: Source, statement: ast.stmt, path: str) -> bool:
    """Whether ``statement`` assigns ``path`` a value it detaches (``self.h = tuple(s.detach()
    for s in self.h)``): a detach put before it changes nothing."""
    value = getattr(statement, "value", None)
    if value is None or path not in targets(statement) or not source.reads(value, path):
        return False
    chosen = {id(part) for n in ast.walk(value) if isinstance(n, (ast.IfExp, ast.BoolOp))
              for part in ast.walk(n)}  # ``h.detach() if fixed else h``: maybe not detached
    # What a detach's receiver may be: ``path`` itself, or a name a comprehension over ``path``
    # binds (``s`` in ``tuple(s.detach() for s in self.h)``); ``f(loss.detach(), h)`` detaches
    # another value.
    over = {t.id for n in ast.walk(value) if isinstance(n, ast.comprehension) and
            source.reads(n.iter, path) for t in ast.walk(n.target) if isinstance(t, ast.Name)}
    return any(isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) and
               n.func.attr == "detach" and not n.args and id(n) not in chosen and
               (source.reads(n.func.value, path) or
                any(isinstance(r, ast.Name) and r.id in over for r in ast.walk(n.func.value)))
               for n in ast.walk(value))


def returned_after(source: Source, store: ast.stmt, path: str) -> bool:
    """Whether the function holding ``store`` returns ``path`` itself after it (``return spk,
    self.mem``): stored detached, the value this call hands on as its output would have no graph
    (``return out - self.center`` keeps the graph of ``out``, and a statistic used to scale or
    to center may well be a constant)."""
    scope = source.scope_at(store.lineno)
    return any(isinstance(node, ast.Return) and node.lineno > store.end_lineno and
               any(path_of(value) == path for value in _handed_on(node.value))
               for node in source.statements(scope))


def _handed_on(value: ast.expr | None) -> list[ast.expr]:
    """The values a return hands on as they are: the items of a tuple or list, both branches
    of a conditional expression, else the value itself."""
    if isinstance(value, (ast.Tuple, ast.List)):
        return [item for element in value.elts for item in _handed_on(element)]
    if isinstance(value, ast.IfExp):
        return _handed_on(value.body) + _handed_on(value.orelse)
    return [] if value is None else [value]


def differentiates(source: Source, statement: ast.stmt) -> bool:
    """Whether ``statement`` calls ``torch.autograd.grad``, itself or in a function of this file
    it calls (the function that computes a gradient penalty)."""
    called = {getattr(n.func, "attr", getattr(n.func, "id", "")) for n in ast.walk(statement)
              if isinstance(n, ast.Call)}
    return "grad" in called or bool(source.calls_within(statement, ("grad",)))


def bound_elsewhere(source: Source, line: int, name: str) -> bool:
    """Whether ``name``, read in the function holding ``line``, is bound outside it (a module's
    global, a variable of an enclosing function): that function neither binds it nor declares it
    ``global`` or ``nonlocal``, so an assignment added there would make it local."""
    scope = source.scope_at(line)
    if "." in name or "[" in name or not isinstance(scope, (ast.FunctionDef, ast.AsyncFunctionDef)):
        return False
    arguments = scope.args
    if name in {a.arg for a in arguments.posonlyargs + arguments.args + arguments.kwonlyargs +
                [arguments.vararg, arguments.kwarg] if a is not None}:
        return False
    for node in ast.walk(scope):
        if isinstance(node, (ast.Global, ast.Nonlocal)) and name in node.names:
            return False
        if isinstance(node, ast.Name) and node.id == name and isinstance(node.ctx, ast.Store):
            return False
    return True


def snapshot(source: Source, store: ast.stmt, loop: ast.stmt) -> bool:
    """Whether ``store`` (before ``loop``) calls a network that the loop calls again
    (``old_values = critic(obs)`` before, ``v = critic(obs[mb])`` inside): the value kept is
    that network's output before the loop's steps on purpose; computed again inside the loop it
    would equal the loop's own output, and what the program compares with it would change."""
    def called(node: ast.AST) -> set[str]:
        return {path_of(n.func) for n in ast.walk(node) if isinstance(n, ast.Call) and
                path_of(n.func) and not path_of(n.func).split(".")[0] in ("torch", "F", "nn")}
    return bool(called(store.value) & called(loop))


def computed_once(source: Source, path: str) -> bool:
    """Whether the attribute of ``path`` (``prompt`` of ``model.prompt``) is assigned only in
    ``__init__`` methods, each time from the object's own parts (``self.prompt =
    self.mlp(self.emb(ids))``):
    detached where a step reads it, what computes it would never receive a gradient again; the
    fix is to compute it where it is read."""
    if "." not in path or "[" in path:
        return False
    attr = path.rsplit(".", 1)[1]
    inits = [n for n in ast.walk(source.tree) if isinstance(n, ast.FunctionDef) and
             n.name == "__init__"]
    stores = [n for n in ast.walk(source.tree) if isinstance(n, (ast.Assign, ast.AnnAssign))
              and any(isinstance(t, ast.Attribute) and t.attr == attr
                      for target in (n.targets if isinstance(n, ast.Assign) else [n.target])
                      for t in ast.walk(target))]  # (unpacked too: ``out, self.h = ...``)
    return bool(stores) and all(any(i.lineno <= s.lineno <= i.end_lineno and
                                    _reads_own(s.value, i) for i in inits) and
                                not _no_grad(source, s) for s in stores)


def _reads_own(value: ast.expr | None, init: ast.FunctionDef) -> bool:
    """Whether ``value`` reads an attribute of the object being built (``self.mlp``): a part
    the object registers, trained with it (a parameter made inline, never registered, is not)."""
    own = init.args.args[0].arg if init.args.args else None
    return any(isinstance(n, ast.Attribute) and isinstance(n.value, ast.Name) and
               n.value.id == own for n in ast.walk(value or ast.Pass()))


# -- the names an edit's new lines use, bound at their line ---------------------------------

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


_GRADIENT_USERS = ("clip_grad_norm_", "clip_grad_value_", "clip_grad_norm", "clip_grads_with_norm_",
                   "step", "zero_grad", "unscale_")


def gradients_used_between(source: Source, first: ast.stmt, second: ast.stmt) -> ast.stmt | None:
    """The first statement between ``first`` and ``second`` (two backward calls) that reads or
    changes the gradients the first one accumulated (a clip, a step, ``zero_grad``, a ``.grad``):
    there, two backward calls are not one backward of the sum, and merging them would move the
    second loss's gradients past that statement."""
    scope = source.scope_at(second.lineno)
    for statement in sorted((n for n in ast.walk(scope) if isinstance(n, ast.stmt)),
                            key=lambda n: n.lineno):
        if not first.end_lineno < statement.lineno < second.lineno:
            continue
        if isinstance(statement, (ast.If, ast.For, ast.While, ast.With, ast.Try)):
            continue  # its own statements are looked at one by one
        for node in ast.walk(statement):
            if isinstance(node, ast.Call) and (path_of(node.func) or "").split(".")[-1] in \
                    _GRADIENT_USERS:
                return statement
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and \
                    node.func.attr in _GRADIENT_USERS:
                return statement
            if isinstance(node, ast.Attribute) and node.attr == "grad":
                return statement
    return None
