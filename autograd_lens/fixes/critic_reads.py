"""Which reads of a GAN's generated batch belong to the critic's own step, read from the source.

A fake batch goes through the discriminator twice: once in the discriminator's step, where its
loss should take the batch as data (``netD(fake.detach())``), and once in the generator's step,
where the generator's loss must reach the generator through it. Which read is which depends on
the order of the two steps, not on which one failed: after a discriminator step the failing read
is the generator's, after several generator steps it is the discriminator's. What tells them
apart is the step each read leads to: a read passed to a network ``N`` is the critic's when the
first backward after it is followed by the step of an optimizer made from ``N.parameters()``
(the step that trains the network scoring the batch).

:func:`critic_reads` gives those reads; the GAN rule detaches them
(:func:`autograd_lens.fixes.detached_reads.detach_reads_before`).
"""

from __future__ import annotations

import ast

from ..source.source_file import Source, path_of


def optimized_networks(source: Source) -> set[str]:
    """The networks of the file that an optimizer of their own trains."""
    return set(_optimizers_of(source).values())


def _optimizers_of(source: Source) -> dict[str, str]:
    """The network each optimizer of the file is made from: ``{"optD": "netD"}`` for
    ``optD = Adam(netD.parameters(), ...)``."""
    found = {}
    for node in ast.walk(source.tree):
        if not isinstance(node, ast.Assign) or not isinstance(node.value, ast.Call):
            continue
        networks = {path_of(c.func.value) for c in ast.walk(node.value)
                    if isinstance(c, ast.Call) and isinstance(c.func, ast.Attribute) and
                    c.func.attr == "parameters"} - {None}
        if len(networks) == 1:  # one network's parameters (not a GAN's both)
            network = next(iter(networks))
            found.update({path_of(t): network for t in node.targets if path_of(t)})
    return found


def _calls(statement: ast.stmt, attr: str) -> list[ast.Call]:
    return [n for n in ast.walk(statement) if isinstance(n, ast.Call) and
            isinstance(n.func, ast.Attribute) and n.func.attr == attr]


def _stepped_after(statements: list[ast.stmt], index: int) -> str | None:
    """The optimizer whose ``step()`` first follows the first backward after
    ``statements[index]`` (in source order), or None."""
    later = statements[index + 1:]
    backward = next((i for i, s in enumerate(later) if _calls(s, "backward")), None)
    if backward is None:
        return None
    for statement in later[backward:]:
        steps = _calls(statement, "step")
        if steps:
            return path_of(steps[0].func.value)
    return None


def critic_reads(source: Source, scope: ast.AST, name: str) -> list[ast.expr]:
    """The reads of ``name`` in ``scope`` passed straight to a network whose own optimizer
    steps right after the next backward (see the module's docstring); not already detached."""
    networks = _optimizers_of(source)
    statements = [s for s in source.statements(scope) if not hasattr(s, "body")]
    found = []
    for index, statement in enumerate(statements):
        passed = [c for c in ast.walk(statement) if isinstance(c, ast.Call) and
                  any(path_of(a) == name for a in c.args)]
        stepped = _stepped_after(statements, index) if passed else None
        for call in passed:
            if stepped in networks and networks[stepped] == path_of(call.func):
                found += [a for a in call.args if path_of(a) == name]
    return found
