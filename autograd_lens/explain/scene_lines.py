"""The facts of a scene read from the program's lines: the same loss built again, losses taken
from a collection in turn, a state fed from its own value, a store read back by key or filled
once per key, an attribute a class assigns only when it is built."""

from __future__ import annotations

import ast
import inspect
from typing import Any

from ..source.backward_calls import NAMES, backward_subject, scaled_target
from ..source.candidates import NOT_USERS
from ..source.source_file import Source
from ..source.reads import function_at, innermost_loop, source_tree
from ..source.paths import path_of
from ..source.in_place_ops import in_place


def _subject(source: Source, line: int) -> tuple[ast.stmt, ast.expr] | None:
    """The statement at ``line`` and the loss its backward call starts from."""
    statement = source.statement_at(line)
    if statement is None:
        return None
    for node in ast.walk(statement):
        if isinstance(node, ast.Call) and getattr(node.func, "attr", None) in NAMES:
            subject = backward_subject(node)
            if subject is not None:
                return statement, subject
    return None


def _resolved(source: Source, statement: ast.stmt, subject: ast.expr) -> ast.expr:
    """The loss as an expression: a name, replaced by the value last assigned to it before
    ``statement`` in its function (one plain assignment), else the expression itself."""
    name = path_of(subject)
    if name is None or not isinstance(subject, (ast.Name, ast.Attribute)):
        return subject
    stores = [s for s in source.stores(source.scope_at(statement.lineno), name)
              if s.lineno < statement.lineno]
    last = stores[-1] if stores else None
    if isinstance(last, ast.Assign) and len(last.targets) == 1 and \
            path_of(last.targets[0]) == name:
        return last.value
    return subject


def same_loss_again(file: str, earlier: int, line: int) -> bool:
    """Whether the backward at ``line`` starts from the same expression as the one at
    ``earlier`` (a name stands for the value last assigned to it), and no name that expression
    reads is assigned between the two lines: the same loss, built again from the same values."""
    source = Source.read(file)
    first = _subject(source, earlier) if source is not None else None
    second = _subject(source, line) if source is not None else None
    if first is None or second is None:
        return False
    before, after = _resolved(source, *first), _resolved(source, *second)
    if ast.dump(before) != ast.dump(after):
        return False
    read = {path_of(n) for n in ast.walk(after) if isinstance(n, (ast.Name, ast.Attribute))}
    scope = source.scope_at(line)
    between = [s for s in source.statements(scope) if earlier < s.lineno < second[0].lineno]
    return not any(source.stores(scope, name) and any(
        s in between for s in source.stores(scope, name)) for name in read if name)


def backwarded(frame: Any) -> str | None:
    """The name of the loss that the call on ``frame``'s current line starts from."""
    source = Source.read(frame.f_code.co_filename)
    found = _subject(source, frame.f_lineno) if source is not None else None
    return path_of(found[1]) if found is not None else None


def memoised(file: str, line: int, entry: str) -> bool:
    """Whether the function holding ``line`` stores into the container of ``entry``
    (``cache`` of ``cache[3]``) only under a test that the key is not in it yet."""
    source = Source.read(file) if "[" in entry else None
    if source is None:
        return False
    container = entry[:entry.index("[")]
    tests = [node for node in ast.walk(source.scope_at(line)) if isinstance(node, ast.If)
             and _not_in(node.test, container)]
    stores = [node for node in ast.walk(source.scope_at(line)) if isinstance(node, ast.Subscript)
              and isinstance(node.ctx, ast.Store) and path_of(node.value) == container]
    return bool(stores) and all(any(test.body[0].lineno <= store.lineno <= test.end_lineno
                                    for test in tests) for store in stores)


def self_fed(file: str, line: int, name: str) -> bool:
    """Whether the function holding ``line`` assigns ``name`` (``s``; ``h`` for ``h[0]``) from
    an expression that reads it (``z, s = cell(x, s)``, ``h = 0.9 * h + x``): a state that
    evolves from its own value (also when the source cannot be read: nothing is changed)."""
    source = Source.read(file)
    if source is None:
        return True
    path = name[:name.index("[")] if "[" in name else name
    scope = source.scope_at(line)
    stores = source.stores(scope, path)
    return any(source.reads(store.value, path) and not _after_store(scope, store, stores)
               for store in stores if getattr(store, "value", None))


def _after_store(scope: ast.AST, store: ast.stmt, stores: list[ast.stmt]) -> bool:
    """Whether another of ``stores`` comes before ``store`` in its block (``w = f(p); w = w /
    w.sum()``): then ``store`` reads the value just made, not the one kept from before."""
    for node in ast.walk(scope):
        for block in (getattr(node, "body", None), getattr(node, "orelse", None)):
            if isinstance(block, list) and any(s is store for s in block):
                earlier = block[:[id(s) for s in block].index(id(store))]
                return any(s is other for s in earlier for other in stores)
    return False


def looked_up(file: str, line: int, entry: str) -> bool:
    """Whether the statement at ``line`` reads the container of ``entry`` (``cache`` of
    ``cache[3]``) entry by entry, by a key it computes (``cache[i]``), and never as a whole
    (``torch.stack(cache)``, ``sum(cache)``), and the program never appends to it
    (filled once, or by key): a store of values read back, not a buffer."""
    source = Source.read(file) if "[" in entry else None
    statement = source.statement_at(line) if source is not None else None
    if statement is None:
        return False
    container = entry[:entry.index("[")]
    if any(isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and
           node.func.attr in ("append", "extend", "insert") and path_of(node.func.value) == container
           for node in ast.walk(source.tree)):
        return False  # a list grown step by step: a buffer
    reads = [node for node in ast.walk(statement) if path_of(node, exact=True) == container]
    keyed = {id(node.value) for node in ast.walk(statement) if isinstance(node, ast.Subscript)
             and not isinstance(node.slice, ast.Constant) and path_of(node.value) == container}
    return bool(keyed) and all(id(node) in keyed for node in reads)


def _not_in(test: ast.expr, container: str) -> bool:
    return isinstance(test, ast.Compare) and len(test.ops) == 1 and \
        isinstance(test.ops[0], ast.NotIn) and path_of(test.comparators[0]) == container


def from_collection(file: str, first_line: int, function: str, line: int) -> bool:
    """Whether the backward at ``line`` starts from the target of the ``for`` loop holding it
    (``for loss in losses:``, directly or through a name assigned from it): a loss taken from a
    collection built before the loop."""
    tree = source_tree(file)
    scope = function_at(tree, first_line, function) if tree is not None else None
    source = Source.read(file) if scope is not None else None
    found = _subject(source, line) if source is not None else None
    loop = innermost_loop(scope, line) if found is not None else None
    loss = _resolved(source, *found) if loop is not None else None  # through ``l = loss``
    if not isinstance(loop, ast.For) or loss is None:
        return False
    targets = {n.id for n in ast.walk(loop.target) if isinstance(n, ast.Name)}
    return scaled_target(loss, targets)


def made_once(owner: Any, attribute: str) -> bool:
    """Whether the classes of ``owner`` (the program's own) assign ``self.<attribute>`` in
    ``__init__`` and in no other method."""
    places = set()
    for cls in type(owner).__mro__:
        try:
            file = inspect.getsourcefile(cls)
        except TypeError:
            continue
        tree = source_tree(file) if file and not file.startswith(NOT_USERS) else None
        for name, value in vars(cls).items() if tree is not None else ():
            code = getattr(value, "__code__", None)
            if code is None:
                continue
            scope = function_at(tree, code.co_firstlineno, code.co_name)
            if scope is None:
                continue
            if any(_assigns(n, attribute) for n in ast.walk(scope)):
                places.add(name)
            if any(f"self.{attribute}" in in_place(s) for s in ast.walk(scope)
                   if isinstance(s, ast.stmt)):
                places.add(name + " (in place)")  # self.bank[idx] = ..., self.bank.mul_(...)
    return places == {"__init__"}


def _assigns(node: ast.AST, attribute: str) -> bool:
    """Whether ``node`` assigns ``self.<attribute>`` a value (None, a placeholder that something
    else fills, is not one)."""
    targets = node.targets if isinstance(node, ast.Assign) else \
        [node.target] if isinstance(node, (ast.AugAssign, ast.AnnAssign)) else []
    value = getattr(node, "value", None)
    if isinstance(value, ast.Constant) and value.value is None:
        return False
    return any(isinstance(t, ast.Attribute) and t.attr == attribute and
               isinstance(t.value, ast.Name) and t.value.id == "self"
               for target in targets
               for t in (target.elts if isinstance(target, ast.Tuple) else [target]))

