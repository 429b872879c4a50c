"""A path: a name as the source writes it (``h``, ``self.h``, ``outputs['loss']``, ``buffer[3]``).

:func:`path_of` reads one from an expression (an entry whose key is not a constant is named by
its container), :func:`item_path` writes an entry's, and :func:`overlaps` tells whether one
path is another or lies inside it (``self`` and ``self.h``).
"""

from __future__ import annotations

import ast


def path_of(node: ast.AST, *, exact: bool = False) -> str | None:
    """``h``, ``self.h``, ``out['loss']``, ``buf[3]``, ``buf[-1]``; None for anything else. An
    entry whose key is not a constant (``buf[i]``) is named by its container (``buf``), or None
    when ``exact``."""
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        base = path_of(node.value, exact=exact)
        return None if base is None else f"{base}.{node.attr}"
    if isinstance(node, ast.Subscript):
        base = path_of(node.value, exact=exact)
        if base is None:
            return None
        key = _constant_key(node.slice)
        if key is not None:
            return item_path(base, key)
        return None if exact else base
    return None


def _constant_key(key: ast.AST) -> int | str | None:
    """A key written as a constant: ``3``, ``"loss"``, or an entry from the end (``-1``)."""
    if isinstance(key, ast.UnaryOp) and isinstance(key.op, ast.USub) and \
            isinstance(key.operand, ast.Constant) and type(key.operand.value) is int:
        return -key.operand.value
    if isinstance(key, ast.Constant) and isinstance(key.value, (int, str)):
        return key.value
    return None


def item_path(base: str, key: int | str) -> str:
    """``buffer[3]``, ``outputs["loss"]``."""
    return f'{base}["{key}"]' if isinstance(key, str) else f"{base}[{key}]"


def overlaps(a: str, b: str) -> bool:
    """Whether one path is the other or lies inside it (``self`` and ``self.h``)."""
    short, long_ = (a, b) if len(a) <= len(b) else (b, a)
    return long_ == short or long_.startswith(short + ".") or long_.startswith(short + "[")
