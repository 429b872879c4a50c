"""Reading a graph after the backward that failed on it: which saved tensors it freed itself.

``diagnose_on_error`` diagnoses a failing call after the failure, not before every call (a walk
of the whole graph on every backward would cost more than the rest of the guard). But a backward
that fails has already run part of its graph, and without ``retain_graph`` it freed the saved
tensors of the nodes it ran: read as they are, those would look freed by an earlier backward.
The order in which torch's engine runs the nodes tells them apart.

Each node carries a sequence number, larger than those of the nodes it passes its gradient to
(they existed before it). Of the nodes whose gradients are ready, the engine runs the one
numbered highest first; so it runs a graph in decreasing sequence order, and a backward that
fails stops at the first node, in that order, whose saved tensors were stale before the call:
**the failing node**. Every node numbered above it ran (and, without ``retain_graph``, was freed by
this call); none numbered below it did, and those are read exactly as they were before the call.

The failing node is the highest-numbered node that was stale before the call: one whose saved
tensor was modified in place (backward never modifies one), or a freed one that an earlier
call went through (as :mod:`autograd_lens.lens.history` records them) or that was made before the
guard started (whose past is not known; the guard counts it as freed earlier). An earlier call
whose root is no longer alive (``criterion(out, y).backward()``) is taken to have gone through
every node numbered up to its root: a node made before that root but outside its graph, which
the failing call then ran, counts as freed earlier. The prediction :func:`diagnose` makes
before the call has no such limit.
"""

from __future__ import annotations

from typing import Any, NamedTuple

from .graph import SavedSlot, breadth_first
from .history import Call
from .sequence_numbers import alive_roots, sequence


class Failure(NamedTuple):
    """What the guard knows about the call that failed and the calls before it.

    Attributes:
        kind: ``"freed"`` (the freed-graph error) or ``"modified"`` (the in-place error).
        retained: the failing call kept its graph (``retain_graph``): it freed nothing.
        mark: nodes numbered above it were made after every call recorded before this one.
        start: nodes numbered up to it were made before the guard started.
        calls: the earlier calls, each with the number above which it ran (-1: all of its
            graph; a failed call ran only the part above its failing node).
        known: alive nodes by sequence number, where an earlier call's root would be.
    """

    kind: str
    retained: bool
    mark: int
    start: int
    calls: tuple[tuple[Call, int], ...]
    known: dict[int, Any]


def _went(order: list[Any], failure: Failure) -> set[Any]:
    """The nodes of this graph (``order``) that earlier calls ran without keeping their graph."""
    in_graph = set(order)
    went: set[Any] = set()
    for call, above in failure.calls:
        if call.retained:
            continue
        alive = alive_roots(call, failure.known)
        reached = breadth_first(alive) if alive else order
        went.update(n for n in reached if n in in_graph and above < sequence(n) <= call.sequence)
    return went


def _stale_before(node: Any, slots: tuple[SavedSlot, ...], went: set[Any],
                  failure: Failure) -> bool:
    """Whether ``node``'s saved tensors were stale before the failing call."""
    if failure.kind == "modified":
        return any(slot.state == "modified" for slot in slots)
    number = sequence(node)
    return number <= failure.mark and (node in went or number <= failure.start)


def failing_node(stale_nodes: dict[Any, tuple[SavedSlot, ...]], order: list[Any],
                 failure: Failure) -> int:
    """The sequence number of the node the call failed at; when the records cannot tell it,
    the largest it can be."""
    went = _went(order, failure) if failure.kind == "freed" else set()
    before = [sequence(n) for n, slots in stale_nodes.items()
              if _stale_before(n, slots, went, failure)]
    if before:
        return max(before)
    # Nothing that the records explain: every stale node made before the latest call counts
    # as stale before this one (as a diagnosis without records would say).
    old = [sequence(n) for n in stale_nodes if sequence(n) <= failure.mark]
    return max(old, default=failure.mark)


def freed_now(stale_nodes: dict[Any, tuple[SavedSlot, ...]], order: list[Any],
              failure: Failure) -> tuple[int, set[Any]]:
    """The failing node's number, and the nodes among ``stale_nodes`` (nodes of the graph
    ``order`` with their stale saved tensors, read after the failure) that the failing call
    freed itself: their saved tensors were alive before it."""
    first = failing_node(stale_nodes, order, failure)
    if failure.retained:
        return first, set()
    return first, {n for n, slots in stale_nodes.items()
                   if sequence(n) > first and all(slot.state == "freed" for slot in slots)}
