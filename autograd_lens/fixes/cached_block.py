"""A weight a parametrization computes, kept by one ``parametrize.cached()`` block around the
whole training loop: the block made per step.

Inside ``parametrize.cached()`` a parametrized weight is computed once and kept, with its graph,
until the block ends. A block that holds the training loop keeps the first step's weight for
every later step: the second backward goes through the graph the first one freed (and the step's
update never reaches the weight in use). With the block inside the loop, each step computes the
weight once, from the weights the last step updated, and the cache ends with the step. Only a
candidate: run before it is called the fix.
"""

from __future__ import annotations

import ast

from ..source.candidates import PARAMETRIZED
from ..source.edits import Plan
from ..source.source_file import Source, path_of
from .rules import Fix, one_fix


def _cached_block(node: ast.AST) -> bool:
    """Whether ``node`` is a ``with`` statement whose one context is a ``cached()`` call."""
    return isinstance(node, ast.With) and len(node.items) == 1 and \
        isinstance(node.items[0].context_expr, ast.Call) and \
        (path_of(node.items[0].context_expr.func) or "").split(".")[-1] == "cached"


def _one_line_header(node: ast.stmt) -> bool:
    return node.body[0].lineno == node.lineno + 1


def cached_per_step(carrier: object, failed: tuple[str, int] | None) -> list[Fix]:
    """Where the carrier is a weight that a parametrization's cache keeps, and the failing
    backward is in a loop that is the one statement of a ``cached()`` block: the block's header
    and the loop's change places, so that the block is inside the loop."""
    if getattr(carrier, "form", None) != PARAMETRIZED or failed is None:
        return []
    source = Source.read(failed[0])
    if source is None:
        return []
    for block in ast.walk(source.tree):
        if not _cached_block(block) or len(block.body) != 1:
            continue
        loop = block.body[0]
        if not isinstance(loop, (ast.For, ast.While)) or loop.orelse or \
                not loop.lineno < failed[1] <= loop.end_lineno or \
                not (_one_line_header(block) and _one_line_header(loop)):
            continue
        outer, inner = source.indent(block.lineno), source.indent(loop.lineno)
        plan = Plan(source)
        plan.replace(block.lineno, outer + source.text(loop.lineno).strip())
        plan.replace(loop.lineno, inner + source.text(block.lineno).strip())
        return one_fix("the cached() block goes inside the loop: each step computes the "
                       "parametrized weight once, from the weights the last step updated, and "
                       "its cache, with that step's graph, ends with the step", plan)
    return []
