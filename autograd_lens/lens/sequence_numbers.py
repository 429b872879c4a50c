"""What a node's sequence number tells: whether it was made before a mark, and which nodes of a
graph earlier calls already went through.

Every node carries a sequence number, increasing in the order the forward created them
(AccumulateGrad's counts as newest: never "old"). :func:`newest_number` and
:func:`reaches_before` compare a graph with a mark taken earlier; :func:`old_nodes` finds, from
the :class:`~autograd_lens.lens.history.Call` records, the nodes of this graph that earlier calls
went through: through a root still alive (:func:`alive_roots`) when there is one, by number
otherwise.
"""

from __future__ import annotations

from typing import Any

import torch

from .graph import breadth_first, children
from .history import Call


_LEAF_SEQUENCE = 2 ** 63  # AccumulateGrad nodes carry the largest number: never "old"


def newest_number() -> int:
    """The sequence number the newest node of this thread has now (every node made from now on
    has a larger one); very large when no node can be made (inference mode)."""
    try:
        with torch.enable_grad():
            return torch.zeros((), requires_grad=True).neg().grad_fn._sequence_nr()
    except RuntimeError:
        return _LEAF_SEQUENCE - 1


def reaches_before(tensors: tuple, mark: int) -> bool:
    """Whether the graph of ``tensors`` (the tuple torch's engine gets) holds a node numbered
    ``mark`` or less: made before the node numbered ``mark`` was. It walks the whole graph when
    it holds none (a graph made since)."""
    stack = [t.grad_fn for t in tensors]
    seen = set()
    while stack:
        node = stack.pop()
        if node is None or node in seen:
            continue
        if node._sequence_nr() <= mark:
            return True
        seen.add(node)
        stack += [child for child, _ in node.next_functions]
    return False


def sequence(node: Any) -> int:
    """A node's sequence number (AccumulateGrad's counts as newest)."""
    number = node._sequence_nr()
    return _LEAF_SEQUENCE if number >= _LEAF_SEQUENCE else number


def _toward(order: list[Any], inputs: tuple[Any, ...]) -> set[Any] | None:
    """The nodes of ``order`` from which a way leads to one of ``inputs`` (weak references to
    tensors: a leaf's AccumulateGrad, or a non-leaf's own node); None when an input is gone (a
    function's local view: where it led cannot be told)."""
    tensors = [ref() for ref in inputs]
    if any(t is None for t in tensors):
        return None
    targets = {t.grad_fn for t in tensors if t.grad_fn is not None}
    leaves = {id(t) for t in tensors if t.grad_fn is None}
    found = {n for n in order if n in targets or id(getattr(n, "variable", None)) in leaves}
    # children are made before their parents: in that order, one pass finds them all
    for node in sorted((n for n in order if not hasattr(n, "variable")),
                       key=lambda n: n._sequence_nr()):
        if node not in found and any(child in found for child in children(node)):
            found.add(node)
    return found


def alive_roots(call: Call, known: dict[int, Any]) -> list[Any]:
    """The nodes ``call`` started from that are still alive, among ``known`` (by number)."""
    return [known[number] for number in call.roots if number in known]


def old_nodes(order: list[Any], calls: list[Call], inplace: bool,
              known: dict[int, Any]) -> tuple[set[Any], list[Call]]:
    """The nodes of this graph (``order``) that earlier calls already went through, and the calls
    that explain them, newest first.

    For the freed-graph error, calls that retained their graph do not count; for the in-place
    error they do (their saved tensors can be modified afterwards, by ``optimizer.step()``).
    ``known``: nodes that are still alive, by sequence number (this graph's, and those of the
    tensors the user's variables hold), to find earlier roots among.
    """
    in_graph = set(order)
    old: set[Any] = set()
    used: list[Call] = []
    for call in reversed(calls):
        if call.retained and not inplace:
            continue
        alive = alive_roots(call, known)
        if alive:
            went = {n for n in breadth_first(alive) if n in in_graph and not hasattr(n, "variable")}
        else:
            went = {n for n in order if sequence(n) <= call.sequence}
        toward = _toward(order, call.inputs) if call.inputs else None
        if toward is not None:  # a gradient goes only through the nodes on a way to its inputs
            went &= toward
        went -= old
        if went:
            old |= went
            used.append(call)
    return old, used
