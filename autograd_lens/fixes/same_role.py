"""The other arguments of the same role: detached with the carrier.

When the carrier goes into a function as one of its arguments (``backward_D(D_B, real_B, fake_B)``)
and the same loop step calls that function again with another value in the same place
(``backward_D(D_A, real_A, fake_A)``), that value went the same way through the graph an earlier
backward freed: a detach of the carrier alone leaves the next call failing with the same error.
Each such value is detached with it.
"""

from __future__ import annotations

import ast

from ..source.source_file import Source, path_of


def _places(statement: ast.AST, path: str) -> set[tuple[str, int]]:
    """(function, position) of each call in ``statement`` that takes ``path`` as a positional
    argument."""
    return {(path_of(n.func), i) for n in ast.walk(statement) if isinstance(n, ast.Call) and
            path_of(n.func) for i, arg in enumerate(n.args) if path_of(arg) == path}


def same_role(source: Source, statement: ast.stmt, path: str) -> list[str]:
    """The other paths that later statements of the same loop pass to the same function in
    the same place as ``statement`` passes ``path``, each assigned before ``statement`` in the
    same function (in source order, once each)."""
    return list(dict.fromkeys(other for other, _ in passed_later(source, statement, path)))


def passed_later(source: Source, statement: ast.stmt, path: str) -> list[tuple[str, ast.stmt]]:
    """Each such other path with the later statement that passes it (``fake_A`` with
    ``loss_D_A = backward_D(D_A, real_A, fake_A)``): where its detach goes when the detach is
    written at the call."""
    places, loop = _places(statement, path), source.loop_of(statement)
    if not places or loop is None:
        return []
    scope, found = source.scope_at(statement.lineno), []
    for later in source.statements(scope):
        if not statement.end_lineno < later.lineno <= loop.end_lineno:
            continue
        for node in ast.walk(later):
            if isinstance(node, ast.Call) and path_of(node.func):
                for i, arg in enumerate(node.args):
                    other = path_of(arg)
                    if (path_of(node.func), i) in places and other and other != path and \
                            (other, later) not in found and _made_before(source, scope, other,
                                                                         statement):
                        found.append((other, later))
    return found


def _made_before(source: Source, scope: ast.AST, path: str, statement: ast.stmt) -> bool:
    return any(s.end_lineno < statement.lineno for s in source.stores(scope, path))
