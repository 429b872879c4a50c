"""A drawing's text: what the graph holds, in words, for a screen reader and a search engine.

:func:`describe` is written from the graph itself, never by hand: how many nodes, which leaves,
which saved tensors and in which state. :func:`~autograd_lens.draw` puts it in the picture (the
SVG's title, which the book copies into each image's alt text).
"""

from __future__ import annotations

from collections import Counter
from typing import Any, Mapping

import torch

from ._inputs import graph_roots, leaf_names
from .graph import node_slots, walk

LISTED = 4  # kinds of saved tensor named per state; the rest are counted


def _kinds(slots: list) -> str:
    counts = Counter(f"{slot.node_name} {slot.name}" for slot in slots)
    named = [f"{n} x {kind}" if n > 1 else kind for kind, n in counts.most_common(LISTED)]
    rest = sum(counts.values()) - sum(n for _, n in counts.most_common(LISTED))
    return ", ".join(named) + (f" and {rest} more" if rest else "")


def describe(root: Any, params: Mapping[str, torch.Tensor] | None = None, *,
             shown: int | None = None) -> str:
    """One paragraph that says what the autograd graph behind ``root`` holds.

    Args:
        root: the tensor the graph ends at (or a list of tensors), as for :func:`~autograd_lens.draw`.
        params: names for leaf tensors, such as ``dict(model.named_parameters())``.
        shown: how many of the nodes the drawing shows in full (the rest collapsed), if not all.

    Returns:
        A string with the number of nodes and the named leaves, then the saved tensors (how
        many, how many alive, freed and modified in place, and which node and slot are freed
        or modified).

    >>> import torch
    >>> x = torch.ones(3, requires_grad=True)
    >>> loss = (x * x).sum()
    >>> loss.backward()
    >>> describe(loss, {"x": x})
    'Autograd graph of 3 nodes, leaves: x. 2 saved tensors: 0 alive, 2 freed (MulBackward0 other, MulBackward0 self).'
    """
    roots = graph_roots(root)
    nodes = walk(roots)
    names = leaf_names(params)
    leaves = [names.get(id(getattr(n, "variable", None)), "") for n in nodes
              if isinstance(getattr(n, "variable", None), torch.Tensor)]
    slots = [slot for node in nodes for slot in node_slots(node)]
    by_state = {state: [s for s in slots if s.state == state] for state in ("alive", "freed", "modified")}
    text = f"Autograd graph of {len(nodes)} nodes"
    named = [leaf for leaf in leaves if leaf]
    if named:
        text += ", leaves: " + ", ".join(named[:LISTED]) + (f" and {len(named) - LISTED} more"
                                                              if len(named) > LISTED else "")
    text += (f". {len(slots)} saved tensors: {len(by_state['alive'])} alive, "
             f"{len(by_state['freed'])} freed")
    if by_state["freed"]:
        text += f" ({_kinds(by_state['freed'])})"
    if by_state["modified"]:
        text += f", {len(by_state['modified'])} modified in place ({_kinds(by_state['modified'])})"
    text += "."
    if shown is not None and shown < len(nodes):
        text += f" Drawn in full: {shown} of the nodes; the other {len(nodes) - shown} in one box."
    return text
