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
* the likely pattern, its fix, and the book's notebook about it.

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
from .report import PATTERNS, FrontierNode, Pattern, Report, SourceLine, Suspect
from .suspects import judge_suspects, suspect_items
from ..lens.history import recorded_calls
from ..lens.sequence_numbers import old_nodes, sequence
from .verdict import Evidence, Suspected, decide, is_checkpoint, leaves_of, through_weights

_UNPACK_NAMES = frozenset({"saved_tensors", "saved_variables"})
_ACCUMULATING = frozenset({"AddBackward0", "AddBackward1", "StackBackward0", "CatBackward0",
                           "SumBackward1", "UnbindBackward0"})


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


def _carrier(suspects: list[tuple[Suspect, Pattern]], items: list[Any],
             stale: Any) -> tuple[Any, Any]:
    """The first stale suspect that backward reaches, as a carrier (kind, origin), with its node."""
    for (suspect, _), (name, tensor, origin) in zip(suspects, items):
        if suspect.state == "stale" and suspect.reaches_root:
            node = tensor.grad_fn
            old = stale(node)  # an old tensor named as a suspect is reused from before
            carrier = Suspected("old" if old else "carried",
                                {"module": "attribute", "list": "list"}.get(origin, "variable"),
                                outside_loop=old)
            return carrier, node
    return None, None


def _pattern(roots: list[torch.Tensor], stale_nodes: dict[Node, tuple[SavedSlot, ...]],
             frontier: list[Node], fresh: list[Node], slot_count: dict[Node, int],
             suspects: list[tuple[Suspect, Pattern]], items: list[Any], is_stale: Any) -> Pattern:
    """The pattern, decided by :func:`~autograd_lens.predict.verdict.decide` from what the graph and
    the suspects show (no record of earlier calls here: see ``diagnose_on_error``)."""
    calls = recorded_calls()
    if calls:  # recorded by the command or diagnose_on_error: which call freed this graph
        known = {sequence(n): n for n in slot_count}
        evidence_latest = old_nodes(list(slot_count), calls, False, known)[1][:1]
    else:
        evidence_latest = []
    evidence = Evidence(
        latest=evidence_latest[0] if evidence_latest else None,
        inplace=all(slot.state == "modified" for slots in stale_nodes.values() for slot in slots),
        root_old=any(r.grad_fn in stale_nodes for r in roots) or not any(slot_count[n] for n in fresh),
        first_saved=list(frontier), checkpointed=any(is_checkpoint(n) for n in frontier))
    evidence.carrier, node = _carrier(suspects, items, is_stale)
    reaches = _reaching(is_stale)
    if evidence.carrier is not None and evidence.carrier.kind == "carried":
        evidence.through_weights = through_weights(node, reaches, set(stale_nodes))
    # From the root down through nodes that save nothing, an accumulating node with a stale
    # branch: total = total + loss, torch.stack(log_probs).sum().
    slotless = {node for node in fresh if not slot_count[node]}
    region = [node for node in breadth_first([r.grad_fn for r in roots if r.grad_fn in slotless],
                                          stop=lambda n: n not in slotless) if node in slotless]
    evidence.accumulating = any(node_name(n) in _ACCUMULATING for n in region) and any(
        child in stale_nodes for n in region for child in children(n))
    # No weights in common between the new part and the old one: a part shared by two heads.
    evidence.recurrence = through_weights(roots[0].grad_fn, reaches, set(stale_nodes),
                                          shared=True)
    evidence.disjoint = not (leaves_of(fresh) & leaves_of(breadth_first(frontier)))
    return PATTERNS[decide(evidence)]


def _reaching(is_stale: Any) -> Any:
    """``reaches(node)``: whether a stale node is ``node`` or lies below it. Each node is decided
    once, from its children's answers, so asking for every node on a path costs one walk, not
    one walk per node."""
    known: dict[Node, bool] = {}

    def reaches(start: Node) -> bool:
        todo = [start]
        while todo:  # depth-first, without recursion: a graph can be thousands of nodes deep
            node = todo[-1]
            if node in known:
                todo.pop()
            elif is_stale(node):
                known[node] = True
                todo.pop()
            else:
                below = children(node)
                undecided = [child for child in below if child not in known]
                if undecided:
                    todo += undecided
                else:
                    known[node] = any(known[child] for child in below)
                    todo.pop()
        return known[start]
    return reaches


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
    return _report(root, suspects, inputs, grad, None)[0]


@without_gc
def diagnose_after_failure(root: Any, failure: Failure, suspects: Any = None, *,
                           inputs: Any = None, grad: bool = False) -> tuple[Report, int | None]:
    """:func:`diagnose`'s report of a backward that has just failed, as it would have been made
    before the call: the saved tensors the call freed itself read as alive (see
    :mod:`autograd_lens.lens.after_failure`); and the number of the node it failed at (None when
    nothing in the graph is stale)."""
    return _report(root, suspects, inputs, grad, failure)


def _report(root: Any, suspects: Any, inputs: Any, grad: bool,
            failure: Failure | None) -> tuple[Report, int | None]:
    """The report, read from the graph as it is now, or (with ``failure``) as it was before the
    call that failed; and the number of the node the call failed at."""
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
        pattern=_pattern(roots, stale_nodes, frontier, fresh, slot_count, found, items, is_stale)
        if stale_nodes else None,
        nodes_checked=len(executed),
        anomaly=any(f.source is not None for f in frontier_items),
        hidden=tuple(node_name(n) for n in hidden),
    ), first
