"""Predicting, before backward runs, whether it will hit a stale saved tensor, and explaining why.

A saved tensor is **stale** when backward can no longer use it: an earlier backward freed it, or
it was modified in place after it was saved (its version counter moved). Backward from a root
fails exactly when it executes a node holding a stale saved tensor. :func:`diagnose` finds the
nodes that backward would execute, reads the state of their saved tensors without unpacking any
that a hook packed (so a checkpoint is not recomputed), and reports:

* ``ok``: whether backward will get through (never true when part of the graph is hidden from
  it, as inside a region compiled by ``torch.compile``);
* the **frontier**: the first stale nodes on each path from the root, where this step's graph
  meets an old one, with the line of your code that created each (when the forward ran under
  ``torch.autograd.set_detect_anomaly``);
* which of your ``suspects`` (hidden state, cached features, module attributes) carry an old graph;
* the likely pattern, its fix, and the book's notebook about it: decided as the command decides
  it, from the carrier among the suspects or, when none is named, among the tensors the program
  holds by name where it calls :func:`diagnose` (:mod:`autograd_lens.predict.frame_suspects`).

:func:`diagnose_on_error` adds the same diagnosis to the error message at the moment backward
fails, and ``%load_ext autograd_lens`` does it for every cell of a notebook.
"""

from __future__ import annotations

from typing import Any

import torch
from torch.autograd.graph import Node

from ..lens._inputs import backward_inputs, graph_roots
from ..lens.after_failure import Failure, freed_now
from ..lens.graph import (SavedSlot, breadth_first, children, is_custom_function, node_name,
                          stale_slots, without_gc)
from .report import FrontierNode, Report, SourceLine
from .frame_suspects import caller_frames
from .evidence import pattern_of
from .suspects import judge_suspects, suspect_items

_UNPACK_NAMES = frozenset({"saved_tensors", "saved_variables"})

def _unpacks_saved(node: Node) -> bool:
    """Whether a custom Function's backward reads ``ctx.saved_tensors`` (freed ones then fail)."""
    code = getattr(getattr(getattr(node, "_forward_cls", None), "backward", None), "__code__", None)
    return code is None or bool(_UNPACK_NAMES & set(code.co_names))


def _read(node: Node) -> tuple[int, tuple[SavedSlot, ...], bool]:
    """How many saved tensors ``node`` has, the stale ones its backward would use, and whether
    the lens cannot see into it: a region compiled by ``torch.compile``, whose backward needs
    more than its saved tensors show, or a node whose saved tensors it cannot read."""
    try:
        count, stale = stale_slots(node)
    except RuntimeError:
        return 0, (), True
    custom = is_custom_function(node)
    compiled = custom and node_name(node) == "CompiledFunctionBackward"
    if stale and custom and not compiled and not _unpacks_saved(node):
        stale = []  # its backward never reads ctx.saved_tensors: a second run works
    return count, tuple(stale), compiled


def _executed(order: list[Node], kids: dict[Node, list[Node]], inputs: list[torch.Tensor] | None,
              grad: bool) -> list[Node]:
    """The nodes backward (or autograd.grad when ``grad``) would execute, in walk order: with
    ``inputs``, those on a path from the root to an input. ``kids``: each node's children."""
    if inputs is None:
        return order
    parents: dict[Node, list[Node]] = {node: [] for node in order}
    for node in order:
        for child in kids[node]:
            parents[child].append(node)
    leaf_ids = {id(t) for t in inputs if t.grad_fn is None}
    targets = [t.grad_fn for t in inputs if t.grad_fn in parents]
    targets += [node for node in order if id(getattr(node, "variable", None)) in leaf_ids]
    if grad:  # autograd.grad does not run the nodes that produced its inputs
        targets = [parent for target in targets for parent in parents[target]]
    run = set(breadth_first(targets, follow=parents.__getitem__))
    return [node for node in order if node in run]


@without_gc
def diagnose(root: Any, suspects: Any = None, *, inputs: Any = None, grad: bool = False) -> Report:
    """Say, before ``root.backward()`` runs, whether it will fail on a stale saved tensor, and why.

    Looks at every node backward would execute and at the state of its saved tensors, without
    unpacking any that a hook packed, so a later backward behaves exactly as it would have.

    Args:
        root: the tensor you would call ``.backward()`` on, such as the loss (or a list of them).
        suspects: tensors that cross from one step to the next, by name, such as
            ``{"h": h, "feats": feats}`` (values may be lists or tuples of tensors, such as an
            LSTM's ``(h, c)``), or an ``nn.Module`` whose tensor attributes and buffers are
            checked. The report says which of them carry a stale graph.
        inputs: as in ``backward(inputs=...)``: only the nodes on paths from the root to these
            tensors run, so only their saved tensors matter.
        grad: with ``inputs``, predict ``torch.autograd.grad(root, inputs)`` instead, which does
            not run the nodes that produced non-leaf inputs.

    Returns:
        A :class:`Report`: ``.ok``, ``.stale``, ``.frontier``, ``.suspects``, ``.pattern``,
        ``.hidden``; its ``str()`` is a short explanation with the fix and a link to the book.

    Raises:
        TypeError: ``root`` (or a suspect, or an input) is not a tensor.
        ValueError: ``root`` has no ``grad_fn`` (a leaf, made under no_grad, or detached).

    >>> import torch
    >>> w = torch.ones(3, requires_grad=True)
    >>> h = (w * w).tanh()                 # computed once, outside the loop
    >>> (h * 2).sum().backward()           # step 1 frees h's graph
    >>> report = diagnose((h * 3).sum(), suspects={"h": h})
    >>> report.ok
    False
    >>> [f.node_name for f in report.frontier]
    ['TanhBackward0']
    >>> report.suspects[0].message
    '`h` still carries the graph of an earlier backward: compute it inside the loop, or detach it (or compute it under torch.no_grad()) if it needs no gradient.'
    >>> diagnose((h.detach() * 3 * w).sum()).ok
    True
    """
    return _report(root, suspects, inputs, grad, None, caller_frames())[0]


@without_gc
def diagnose_graph(root: Any) -> Report:
    """:func:`diagnose` of ``root`` from its graph alone, without looking for a carrier among
    the tensors of the caller's frames (the command's own use, which names the carriers
    itself)."""
    return _report(root, None, None, False, None)[0]


@without_gc
def diagnose_after_failure(root: Any, failure: Failure, suspects: Any = None, *,
                           inputs: Any = None, grad: bool = False) -> tuple[Report, int | None]:
    """:func:`diagnose`'s report of a backward that has just failed, as it would have been made
    before the call: the saved tensors the call freed itself read as alive (see
    :mod:`autograd_lens.lens.after_failure`); and the number of the node it failed at (None when
    nothing in the graph is stale)."""
    return _report(root, suspects, inputs, grad, failure)


def _report(root: Any, suspects: Any, inputs: Any, grad: bool,
            failure: Failure | None, frames: list[Any] = ()) -> tuple[Report, int | None]:
    """The report, read from the graph as it is now, or (with ``failure``) as it was before the
    call that failed; and the number of the node the call failed at. ``frames``: the program's
    frames where it was asked for, whose tensors may show the carrier (see :func:`_pattern`)."""
    roots = graph_roots(root)
    wanted = None if inputs is None else backward_inputs(inputs)
    if not isinstance(grad, bool):
        raise TypeError(f"grad must be True or False, got {grad!r}.")
    if grad and wanted is None:
        raise ValueError("grad=True predicts torch.autograd.grad(root, inputs): pass inputs too.")
    items = suspect_items(suspects)

    kids: dict[Node, list[Node]] = {}

    def read_children(node: Node) -> list[Node]:
        kids[node] = below = children(node)
        return below

    order = breadth_first((r.grad_fn for r in roots), follow=read_children)
    executed = _executed(order, kids, wanted, grad)
    slot_count: dict[Node, int] = {}
    stale_nodes: dict[Node, tuple[SavedSlot, ...]] = {}
    hidden: list[Node] = []
    for node in executed:
        slot_count[node], stale, opaque = _read(node)
        if stale:
            stale_nodes[node] = stale
        if opaque:
            hidden.append(node)
    first = None
    if failure is not None and stale_nodes:
        first, freed = freed_now(stale_nodes, order, failure)
        for node in freed:
            del stale_nodes[node]

    # Breadth-first from the roots through the executed nodes, stopping at stale nodes: those
    # are the frontier.
    def follow(node: Node) -> list[Node]:
        return [child for child in kids[node] if child in slot_count]

    frontier: list[Node] = []
    fresh: list[Node] = []
    starts = [r.grad_fn for r in roots if r.grad_fn in slot_count]
    for node in breadth_first(starts, stop=stale_nodes.__contains__,
                              follow=kids.__getitem__ if wanted is None else follow):
        (frontier if node in stale_nodes else fresh).append(node)

    outside: dict[Node, bool] = {}

    def is_stale(node: Node) -> bool:
        if node in slot_count:
            return node in stale_nodes
        if node not in outside:
            outside[node] = bool(_read(node)[1])
        return outside[node]

    found = judge_suspects(items, slot_count, stale_nodes, is_stale)
    frontier_items = tuple(FrontierNode(n, node_name(n), stale_nodes[n], SourceLine.of(n))
                           for n in frontier)
    return Report(
        ok=not stale_nodes and not hidden,
        stale=tuple(slot for n in executed if n in stale_nodes for slot in stale_nodes[n]),
        frontier=frontier_items,
        suspects=tuple(s for s, _ in found),
        pattern=pattern_of(roots, stale_nodes, frontier, fresh, slot_count, found, items, is_stale,
                         list(frames)) if stale_nodes else None,
        nodes_checked=len(executed),
        anomaly=any(f.source is not None for f in frontier_items),
        hidden=tuple(node_name(n) for n in hidden),
    ), first
