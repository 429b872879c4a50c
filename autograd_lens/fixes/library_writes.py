"""The in-place write a library call makes: its ``inplace`` turned off, or its tensor read as
copies.

A write that ran inside a library call made with ``inplace=True`` (``nn.ReLU(inplace=True)``,
``F.relu(x, inplace=True)``, or ``True`` at the position torch gives ``inplace``:
``nn.LeakyReLU(0.2, True)``): the edit makes that ``True`` ``False``, in the call on the write's
line, else where the program makes modules of the class whose forward wrote, or a class it looks
up by name (``getattr(nn, name)(inplace=True)``), else the default ``True`` of the parameter
passed on as the keyword (``inplace=inplace``), or in a dict passed on as keywords
(``**{"inplace": inplace}``), else where the program sets a module's flag after making it
(``m.inplace = True``). A library call's write with no ``inplace`` keyword to turn off (an
embedding's ``max_norm`` renormalising its weight): the function's other reads of that tensor
read a copy. The result is the same numbers, at the cost of one more tensor's memory.
"""

from __future__ import annotations

import ast
import inspect

import torch

from ..source.edits import Plan
from ..source.source_file import _SIMPLE, Source, path_of
from .rules import Fix, one_fix


def _read_as_copies(source: Source, statement: ast.stmt, name: str) -> list[Fix]:
    """A library call wrote ``name`` in place with no ``inplace`` keyword to turn off (an
    embedding's ``max_norm`` renormalises its weight): every other line of the function that
    reads ``name`` reads a copy (``name.clone()``), so the nodes built there save the copy and
    the write no longer touches what they saved; gradients still reach ``name`` through it."""
    if not name:
        return []
    plan = Plan(source)
    for other in source.statements(source.scope_at(statement.lineno)):
        if other is statement or not isinstance(other, _SIMPLE):
            continue
        called = {id(n.func) for n in ast.walk(other) if isinstance(n, ast.Call)}
        for read in source.reads(other, name):
            if id(read) in called or read.lineno != read.end_lineno:
                continue  # a module called, not a tensor read
            plan.replace_span(read, f"{source.segment(read)}.clone()")
    return one_fix("the nodes save a copy of the tensor, made where it is read, which the "
                   "library's write does not change; the result is the same numbers, at the "
                   "cost of one more tensor's memory", plan)


def _not_in_place(source: Source, statement: ast.stmt, maker: str) -> list[Fix]:
    """The write ran inside a library call made with ``inplace=True`` (or ``True`` at the
    position torch gives ``inplace``: ``nn.LeakyReLU(0.2, True)``): that keyword made
    ``False``, in the call on the write's line (``F.relu(x, inplace=True)``), else where the
    program makes modules of the class whose forward wrote (``nn.ReLU(inplace=True)``), else
    where it makes a class it looks up by name (``getattr(nn, name)(inplace=True)``), else
    the default ``True`` of the parameter passed on as that keyword (``inplace=inplace``), or
    in a dict passed on as keywords (``**{"inplace": inplace}``), else where the program sets a module's flag to ``True`` after making it (``m.inplace = True``)."""
    def in_place(call: ast.Call) -> ast.keyword | _Default | None:
        given = _inplace_given(call)  # by keyword, or by position (an edit target either way)
        if given is None:
            return None
        return next((k for k in call.keywords if k.value is given), None) or _Default(given)

    here = [k for n in ast.walk(statement) if isinstance(n, ast.Call) for k in [in_place(n)] if k]
    if not here and maker:
        here = [k for n in ast.walk(source.tree) if isinstance(n, ast.Call) and
                (path_of(n.func) or "").split(".")[-1] == maker for k in [in_place(n)] if k]
    if not here and maker:  # a class the program looks up by name, made with the keyword
        # (``getattr(nn, activation)(inplace=True)``)
        here = [k for n in ast.walk(source.tree) if isinstance(n, ast.Call) and
                isinstance(n.func, ast.Call) and path_of(n.func.func) == "getattr"
                for k in [in_place(n)] if k]
    if not here and maker:  # ``inplace=inplace``: a parameter of the function that makes it,
        # whose default is True (``def __init__(self, ..., inplace=True)``)
        here = [d for n in ast.walk(source.tree) if isinstance(n, ast.Call) and
                (path_of(n.func) or "").split(".")[-1] == maker
                for k in n.keywords if k.arg == "inplace" and isinstance(k.value, ast.Name)
                for d in [_default_of(source.scope_at(n.lineno), k.value.id)] if d is not None]
        here = list({id(d.value): d for d in here}.values())
    if not here and maker:  # ``**params``: a dict of the function that makes it, whose
        # "inplace" entry is True or such a parameter (``{"inplace": inplace}``)
        here = [found for n in ast.walk(source.tree) if isinstance(n, ast.Call) and
                (path_of(n.func) or "").split(".")[-1] == maker
                for k in n.keywords if k.arg is None and isinstance(k.value, ast.Name)
                for found in _inplace_entries(source, source.scope_at(n.lineno), k.value.id)]
        here = list({id(d.value): d for d in here}.values())
    if not here and maker:  # the flag set after the module was made (``m.inplace = True``)
        here = [n for n in ast.walk(source.tree) if isinstance(n, ast.Assign) and
                isinstance(n.value, ast.Constant) and n.value.value is True and
                any(isinstance(t, ast.Attribute) and t.attr == "inplace" for t in n.targets)]
    if not here:
        return []
    plan = Plan(source)
    for keyword in here:
        plan.replace_span(keyword.value, "False")
    return one_fix("the operation makes a new tensor, so the node keeps the tensor it saved; "
                   "the result is the same numbers, at the cost of one more tensor's memory",
                   plan)


def _inplace_given(call: ast.Call) -> ast.expr | None:
    """The ``True`` a call of a torch layer or function gives its ``inplace`` parameter, by
    keyword (``nn.ReLU(inplace=True)``) or by position (``nn.LeakyReLU(0.2, True)``,
    ``F.relu(x, True)``: the position torch's own signature gives it); else None."""
    keyword = next((k.value for k in call.keywords if k.arg == "inplace"), None)
    if keyword is not None:
        return keyword if isinstance(keyword, ast.Constant) and keyword.value is True else None
    name = (path_of(call.func) or "").split(".")[-1]
    layer = getattr(torch.nn, name, None)
    made = layer if isinstance(layer, type) else getattr(torch.nn.functional, name, None)
    try:
        parameters = list(inspect.signature(made).parameters) if callable(made) else []
    except (TypeError, ValueError):
        return None
    if "inplace" not in parameters or parameters.index("inplace") >= len(call.args):
        return None
    given = call.args[parameters.index("inplace")]
    return given if isinstance(given, ast.Constant) and given.value is True else None


class _Default:
    """A parameter's default ``True`` as an edit target (its ``value`` the constant)."""

    def __init__(self, value: ast.Constant) -> None:
        self.value = value


def _inplace_entries(source: Source, scope: ast.AST, name: str) -> list[_Default]:
    """The ``True`` behind the "inplace" entry of the dicts that ``scope`` assigns to ``name``
    (passed on as ``**name``): the entry's own constant, or the default of the parameter it
    reads."""
    found = []
    for store in source.stores(scope, name):
        for table in ast.walk(store.value) if isinstance(store, ast.Assign) else ():
            for key, value in zip(getattr(table, "keys", []), getattr(table, "values", [])):
                if not (isinstance(table, ast.Dict) and isinstance(key, ast.Constant) and
                        key.value == "inplace"):
                    continue
                if isinstance(value, ast.Constant) and value.value is True:
                    found.append(_Default(value))
                elif isinstance(value, ast.Name) and _default_of(scope, value.id) is not None:
                    found.append(_default_of(scope, value.id))
    return found


def _default_of(scope: ast.AST, name: str) -> _Default | None:
    """The default ``True`` of the parameter ``name`` of the function ``scope``, else None."""
    arguments = getattr(scope, "args", None)
    if arguments is None:
        return None
    positional = arguments.posonlyargs + arguments.args
    pairs = list(zip(positional[len(positional) - len(arguments.defaults):], arguments.defaults))
    pairs += [(a, d) for a, d in zip(arguments.kwonlyargs, arguments.kw_defaults) if d is not None]
    return next((_Default(d) for a, d in pairs if a.arg == name and
                 isinstance(d, ast.Constant) and d.value is True), None)
