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
- a value kept before the loop from a network that the loop calls again (a snapshot of its
  output: computed again inside, it would be the loop's own);
- an attribute computed once in ``__init__`` from the object's own parts (detached, they would
  never be trained);
- a value computed from a gradient taken with ``create_graph=True`` (weights adapted by an inner
  step: kept as a constant, the outer step would get no gradient through the inner one).

Whether an edit's new lines read only names bound at their line is
:mod:`autograd_lens.source.bound_names`'s.
"""

from __future__ import annotations

import ast

from .source_file import Source, path_of, targets

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

