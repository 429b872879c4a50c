"""The in-place writes a statement makes, as its syntax shows them.

``x += 1``, ``x.relu_()``, ``x[i] = v`` and ``torch.relu_(x)`` write a tensor in place, and so
does a call made with ``inplace=True`` (``F.relu(x, inplace=True)``) or of a module made so
(``self.act = nn.ReLU(inplace=True)``, found by :func:`in_place_modules`). :func:`in_place`
gives the paths a statement writes; :func:`in_place_nodes` also the nodes autograd may record
for each write (``AddBackward``, ``ReluBackward``, ``CopySlices``), to match a recorded write.
"""

from __future__ import annotations

import ast
from typing import Iterator

from .reads import source_tree
from .paths import path_of


_AUGMENTED = {ast.Add: "Add", ast.Sub: "Sub", ast.Mult: "Mul", ast.Div: "Div", ast.Pow: "Pow"}
_MODULES = ("torch", "F", "nn.functional", "torch.nn.functional")


def in_place(statement: ast.stmt) -> Iterator[str]:
    """The paths a statement writes in place: ``x += 1``, ``x.relu_()``, ``x[i] = v``,
    ``torch.relu_(x)``."""
    yield from (path for path, _ in in_place_nodes(statement))


_PART = ("CopySlices", "IndexPutBackward")  # a write into part of a tensor, or into a view


def in_place_nodes(statement: ast.stmt, modules: dict[str, str] | None = None
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


def made_in_place(call: ast.AST) -> str:
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
    return made_in_place(node) or modules.get(path_of(node.func) or "", "")


def in_place_modules(filename: str) -> dict[str, str]:
    """The attributes a file assigns a module made with ``inplace=True`` (``self.act =
    nn.ReLU(inplace=True)``), with the node its write records."""
    tree = source_tree(filename)
    found = {}
    for node in ast.walk(tree) if tree is not None else ():
        kind = made_in_place(node.value) if isinstance(node, ast.Assign) else ""
        for target in node.targets if kind else ():
            found[path_of(target) or ""] = kind
    found.pop("", None)
    return found
