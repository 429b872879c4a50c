"""The graph's side of an in-place write: the nodes whose saved tensor changed, and what they take.

A node whose saved tensor was modified after it saved it (its slot reads ``"modified"``; or
``"freed"``) is found by :func:`stale_nodes`. Past views (a weight's transpose, a reshape), the
tensors such a node takes lead to leaves and to the nodes that made them; and the nodes that
took a written tensor as their input recorded the write (``AddBackward`` for ``h += x``,
``CopySlices`` for a write into a view), whose names :mod:`~autograd_lens.explain.writes` looks
for in the source.
"""

from __future__ import annotations

from typing import Any

import torch

from ..lens.graph import breadth_first, children, node_name, stale_slots


_VIEWS = ("TBackward", "ViewBackward", "TransposeBackward", "PermuteBackward", "ExpandBackward",
          "UnsqueezeBackward", "SqueezeBackward", "AsStridedBackward", "SelectBackward",
          "SliceBackward", "UnsafeViewBackward", "ReshapeAliasBackward", "AliasBackward")


def stale_nodes(order: list[Any], state: str) -> list[tuple[Any, str]]:
    """The nodes of ``order`` holding a saved tensor in ``state`` (``"modified"`` since saved, or
    ``"freed"``), each with its first such slot, in the order given."""
    found = []
    for node in order:
        try:
            slots = stale_slots(node)[1]
        except RuntimeError:
            continue
        found += [(node, s.name) for s in slots if s.state == state][:1]
    return found


def written_nodes(order: list[Any]) -> list[tuple[Any, str]]:
    """The nodes of this graph holding a saved tensor modified since saved, with the slot."""
    return stale_nodes(order, "modified")


def past_views(node: Any) -> list[Any]:
    """The nodes whose outputs ``node`` takes, reached past views (a weight's transpose, a
    reshape): leaves' nodes (holding ``variable``) and the nodes that made the other tensors."""
    found, todo = [], list(children(node))
    while todo:
        child = todo.pop()
        if child is None:
            continue
        if node_name(child).startswith(_VIEWS):
            todo += children(child)
        else:
            found.append(child)
    return found


def leaves_under(node: Any) -> list[torch.Tensor]:
    """The leaf tensors ``node`` takes, directly or through views (a weight's transpose)."""
    return [c.variable for c in past_views(node)
            if isinstance(getattr(c, "variable", None), torch.Tensor)]


def reaches(tensor: torch.Tensor, node: Any) -> bool:
    start = tensor.grad_fn
    if start is None:
        return False
    near = breadth_first([start], stop=lambda n: n is node)
    return node in near[:64]


def writers(order: list[Any], op: str) -> set[str]:
    """The names (without their number) of the nodes that took, as their input, a tensor that
    a node named ``op`` made: where that tensor was written in place, one of these recorded the
    write (``h += x`` after ``h = sigmoid(...)``: ``AddBackward`` over ``SigmoidBackward0``; a
    view's base written in place records a ``CopySlices``). When the message names the op
    without ``Backward`` (``output 0 of Relu``), the tensor is the output of an in-place op
    (``code.relu_()``), whose own node recorded the write."""
    made = {n for n in order if op and node_name(n).startswith(op) and
            node_name(n)[len(op):].rstrip("0123456789") in ("", "Backward")}
    found = {node_name(n).rstrip("0123456789") for n in order
             if any(c in made for c in children(n))}
    if op == "AsStrided":  # a view: a write into it, or into its base, is a CopySlices
        found |= {"CopySlices"} & {node_name(n) for n in order}
    if op and not op.endswith("Backward"):  # "output 0 of Relu": the write itself (relu_())
        found.add(op + "Backward")
    return found


def written_after(tensor: torch.Tensor, node: Any, makers: set[Any]) -> bool:
    """Whether ``tensor`` is the output of an in-place write of a tensor ``node`` took (its
    node takes that tensor's maker, one of ``makers``, as its input: ``attn.masked_fill_(...)``
    after ``attn @ v`` saved ``attn``)."""
    start = tensor.grad_fn
    return start is not None and start is not node and any(c in makers for c in children(start))


def base_writers(order: list[Any], node: Any, makers: set[Any]) -> set[str]:
    """The names (without their number) of the nodes that took, as their input, a tensor that
    ``node`` saved, reached past views (its maker is one of ``makers``): a tensor written in
    place after ``node`` saved a view of it (``emb *= keep`` after a linear layer read ``emb``
    reshaped) is, from then on, the output of the write's node, which takes the tensor's maker
    as its input."""
    return {node_name(n).rstrip("0123456789") for n in order if n is not node and
            not node_name(n).startswith(_VIEWS) and any(c in makers for c in children(n))}
