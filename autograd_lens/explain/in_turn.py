"""Losses of one forward that a loop backpropagates in turn: which nodes the loop's earlier
calls went through.

``for name, loss in losses.items(): (weights[name] * loss).backward()``: when the second pass
fails, the first pass's root (built on the call's line) is gone, and the nodes of the failing
loss were made before that pass, so the order in which the forward made the nodes cannot tell
them from the shared part that the first pass freed. The collection the loop walks can: the
losses it holds before the failing one are those the loop's earlier passes backpropagated, and
the nodes of this graph that their graphs hold are the ones those passes went through.
"""

from __future__ import annotations

from typing import Any

import torch

from ..lens.graph import breadth_first
from ..lens.history import Call
from .scene_lines import from_collection

_ENTRIES = 100  # a collection of losses is small: longer ones are not read past this


def in_turn(latest: Call | None, frames: list[Any]) -> bool:
    """Whether the latest call ran at the failing call's line, in a loop that takes its losses
    from a collection built before it (``for loss in losses: (w * loss).backward()``)."""
    if latest is None or not frames:
        return False
    code = frames[0].f_code
    return latest.where == (code.co_filename, code.co_firstlineno, frames[0].f_lineno) and \
        from_collection(code.co_filename, code.co_firstlineno, code.co_name, frames[0].f_lineno)


def went_in_turn(frame: Any, order: list[Any]) -> set[Any]:
    """The nodes of this graph (``order``) that the losses held before the failing one, in a
    collection of ``frame``'s variables, reach: what the loop's earlier passes went through
    (empty when no collection holds the failing loss after others)."""
    in_graph = set(order)
    for value in list(frame.f_locals.values()):
        nodes = [t.grad_fn for t in _entries(value)]
        at = next((i for i, node in enumerate(nodes) if node in in_graph), 0)
        before = [node for node in nodes[:at] if node is not None and node not in in_graph]
        if before:
            return {node for node in breadth_first(before)
                    if node in in_graph and not hasattr(node, "variable")}
    return set()


def _entries(value: Any) -> list[torch.Tensor]:
    """The tensors of a dict, list or tuple, in order, also inside tuple entries
    (``[("segment", loss), ...]``)."""
    if isinstance(value, dict):
        items = list(value.values())[:_ENTRIES]
    elif isinstance(value, (list, tuple)):
        items = list(value[:_ENTRIES])
    else:
        return []
    flat = [part for item in items for part in (item if isinstance(item, tuple) else (item,))]
    return [t for t in flat if isinstance(t, torch.Tensor)]
