"""Which nodes a drawing shows in full when the whole graph is too big to read.

A graph that drags an old graph along can hold a hundred nodes; drawn whole at a page's width its
labels shrink to a few pixels. What the reader needs is the way in: the nodes from the root down
to where the stale part begins (the first nodes whose saved tensors are freed or modified in
place). :func:`stale_path` picks those; :func:`~autograd_lens.draw` with ``focus="stale"`` draws
them and collapses every other node into one box that says how many it holds. A drawing can
also focus on named targets (tensors or nodes, see :func:`paths_to`): the paths from the root down
to each of them, such as the branch that climbs into another network's weights.
"""

from __future__ import annotations

from typing import Any

import torch
from torch.autograd.graph import Node

from .graph import children, node_slots

FOCUS_RULES = ("stale",)


def _is_stale(node: Node) -> bool:
    return any(slot.stale for slot in node_slots(node))


def _parents_in_walk(nodes: list[Node]) -> dict[Node, Node]:
    """Each node's parent on its breadth-first path from the root (the roots have none)."""
    parent: dict[Node, Node] = {}
    for node in nodes:
        for child in children(node):
            if child not in parent and child is not node:
                parent[child] = node
    for node in nodes[:1]:
        parent.pop(node, None)
    return parent


def stale_path(nodes: list[Node]) -> list[Node]:
    """The nodes on the shortest paths from the root to the first stale nodes, in walk order.

    ``nodes`` is a walk from the root (:func:`~autograd_lens.walk`). A first stale node holds a
    freed or modified saved tensor and has no stale node above it on its path from the root:
    it is where backward would fail. The leaves these nodes feed (``AccumulateGrad``, the
    parameters) are kept too; everything else (the rest of the old graph) is left out. With no
    stale node, every node is kept.

    >>> import torch
    >>> from autograd_lens import walk, node_name
    >>> x = torch.ones(2, requires_grad=True)
    >>> old = (x.exp() * 2).sin()
    >>> old.sum().backward()
    >>> new = (old * 3).sum()
    >>> [node_name(n) for n in stale_path(walk(new))]
    ['SumBackward0', 'MulBackward0', 'SinBackward0']
    >>> len(walk(new))       # the old graph's MulBackward0, ExpBackward0 and x's AccumulateGrad
    6
    """
    parent = _parents_in_walk(nodes)

    def path(node: Node) -> list[Node]:
        chain = [node]
        while chain[-1] in parent:
            chain.append(parent[chain[-1]])
        return chain

    first = [n for n in nodes if _is_stale(n) and not any(_is_stale(p) for p in path(n)[1:])]
    if not first:
        return list(nodes)
    keep = {node for stale in first for node in path(stale)}
    keep |= {child for node in keep for child in children(node) if hasattr(child, "variable")}
    return [node for node in nodes if node in keep]


def _target_node(target: Any, nodes: list[Node]) -> Node:
    """The node a focus target stands for: a node itself, a tensor's ``grad_fn``, or a leaf's
    ``AccumulateGrad`` node."""
    if isinstance(target, torch.Tensor):
        if target.grad_fn is not None:
            return target.grad_fn
        found = [n for n in nodes if getattr(n, "variable", None) is target]
        if not found:
            raise ValueError("a focus target is a leaf tensor the graph does not reach: pass a "
                             "tensor or node of the drawn graph.")
        return found[0]
    if target not in nodes:
        raise ValueError(f"focus target {target!r} is not a node of the drawn graph: pass a "
                         "tensor or node the root reaches (al.walk(root) lists them).")
    return target


def paths_to(nodes: list[Node], targets: list[Any]) -> list[Node]:
    """The nodes on the shortest paths from the root to each target, in walk order.

    ``targets`` are tensors (a leaf such as a parameter stands for its ``AccumulateGrad`` node)
    or nodes of the walk. The leaves the kept nodes feed are kept too.

    >>> import torch
    >>> from autograd_lens import walk, node_name
    >>> x = torch.ones(2, requires_grad=True)
    >>> w = torch.ones(2, requires_grad=True)
    >>> loss = (x.exp() * 2).sin().sum() + (w * 3).sum()
    >>> [node_name(n) for n in paths_to(walk(loss), [w])]
    ['AddBackward0', 'SumBackward0', 'MulBackward0', 'AccumulateGrad']
    """
    parent = _parents_in_walk(nodes)
    keep: set[Node] = set()
    for target in targets:
        node = _target_node(target, nodes)
        keep.add(node)
        while node in parent:
            node = parent[node]
            keep.add(node)
    keep |= {child for node in keep for child in children(node) if hasattr(child, "variable")}
    return [node for node in nodes if node in keep]


def focused(nodes: list[Node], focus: Any) -> list[Node]:
    """The nodes a drawing shows in full under ``focus`` (``None``: all of them)."""
    if focus is None:
        return list(nodes)
    if isinstance(focus, (torch.Tensor, Node)):
        return paths_to(nodes, [focus])
    if isinstance(focus, (list, tuple)) and focus and all(
            isinstance(t, (torch.Tensor, Node)) for t in focus):
        return paths_to(nodes, list(focus))
    if not isinstance(focus, str) or focus not in FOCUS_RULES:
        raise ValueError(f"focus must be None or one of {FOCUS_RULES} or tensors/nodes of the graph "
                         f"to draw the paths to, got {focus!r}: focus='stale' draws the path from "
                         "the root into the freed graph.")
    return stale_path(nodes)
