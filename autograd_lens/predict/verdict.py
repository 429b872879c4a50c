"""Deciding the pattern from evidence: the carrier, the graph between the two calls, the calls.

The command, :func:`~autograd_lens.diagnose` and :class:`~autograd_lens.diagnose_on_error` all
gather an :class:`Evidence` and ask :func:`decide` which pattern of the catalogue it shows.
Nothing here reads the words of the user's source: a checkpoint is named when a checkpointed
region is in the old graph, a custom Function when its node is where a second backward fails,
and with no evidence for any pattern the answer is ``"unknown"`` (the debugging page).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, NamedTuple

import torch

from ..lens.graph import breadth_first, children, is_custom_function, node_name, stale_slots
from ..lens.history import Call
from ..lens.sequence_numbers import sequence


class Suspected(NamedTuple):
    """A carrier known only by its graph (a suspect named to ``diagnose``)."""

    kind: str
    origin: str
    update: str = ""
    outside_loop: bool = False


@dataclass
class Evidence:
    """What is known about one failed (or predicted) backward.

    Attributes:
        root_old: the backward starts from a node an earlier call already went through.
        again: the earlier call that started from the carrier itself (``loss.backward()``,
            then ``(loss + penalty).backward()``), if any.
        first_saved: the old nodes holding saved tensors first met from the new part.
        checkpointed: a checkpointed region lies in the old graph.
        inplace: saved tensors were modified in place (and no call freed them since).
        nested: it failed inside a backward run by another backward (a custom Function's
            backward calling autograd.grad, a reentrant checkpoint).
        latest: the newest earlier call that explains the old graph, if recorded.
        same_step: that call ran earlier in the same function as the failing one.
        same_critic: the new part uses leaves that the earlier call's graph used too, the
            old graph entering below them (a discriminator run on a batch it already saw).
        new_weights: the new part of the graph takes leaves (a second network), not only
            the old part (a second loss over the same output).
        carrier: the most likely carrier (anything with ``kind``, ``origin``, ``update``,
            ``outside_loop``; ``entry`` when the source is known), or None.
        through_weights: between the carrier and the old graph lies a node that takes weights
            (a recurrence), not only sums and scalings (a running statistic).
        on_module: the carrier is an attribute (or entry) kept on an ``nn.Module``.
        on_object: the carrier is an attribute (or entry) kept on any object.
        grows: the carrier's list or dict holds tensors of several steps (old and new entries,
            or old ones from before different calls), not one state per entry.
        accumulating: from the root, through nodes that save nothing, a sum or stack with an
            old branch (``total = total + loss``).
        recurrence: between the root and the old graph, a node takes weights that the old
            graph took too: the same model run again on an old output.
        disjoint: the new part of the graph and the old part use no leaf in common (two heads
            on one shared part).
        write: for the in-place error, what changed the saved tensor
            (:class:`~autograd_lens.explain.writes.Write`), when found.
        from_gradient: the carrier was made from a gradient taken with ``create_graph=True``
            (its graph holds a gradient's own nodes): weights stepped by a differentiable update.
    """

    root_old: bool = False
    again: Call | None = None
    first_saved: list[Any] = field(default_factory=list)
    checkpointed: bool = False
    inplace: bool = False
    nested: bool = False
    latest: Call | None = None
    same_step: bool = False
    same_critic: bool = False
    new_weights: bool = False
    carrier: Any = None
    on_module: bool = False
    on_object: bool = False
    grows: bool = True
    through_weights: bool = False
    accumulating: bool = False
    recurrence: bool = False
    disjoint: bool = False
    write: Any = None
    from_gradient: bool = False


def decide(evidence: Evidence) -> str:
    """The key of the pattern in :data:`~autograd_lens.predict.report.PATTERNS` the evidence shows."""
    e, latest = evidence, evidence.latest
    if e.inplace or e.write is not None:
        if e.write is not None and e.write.how == "op":
            return "written_in_place"
        return "modified_in_place"
    if e.nested and e.checkpointed:
        return "checkpoint"
    if e.nested and any(_is_custom(n) for n in e.first_saved):
        return "custom_function"
    again = e.again is not None and e.again.kind == "backward"
    if e.root_old or again or e.again is not None and not e.again.on_parameters:
        latest = e.again or latest
        if latest is not None and latest.kind == "grad":
            return "grad_then_backward"
        if e.checkpointed:
            return "checkpoint"
        if any(_is_custom(n) for n in e.first_saved):
            return "custom_function"
        return "backward_twice"
    if latest is not None and latest.kind == "grad":
        return "meta_learning" if latest.on_parameters else "higher_order"
    carrier = e.carrier
    if carrier is not None and carrier.origin == "list" and not e.grows:
        # One state per entry (a dict of states, per-layer memories): as its holder.
        carrier = carrier._replace(origin="attribute" if e.on_object else "variable") \
            if hasattr(carrier, "_replace") else _as_holder(carrier, e.on_object)
    if carrier is None:
        if e.accumulating:
            return "accumulated_loss"
        if e.recurrence:
            return "hidden_state"
        return "shared_trunk" if e.same_step or e.disjoint else "unknown"
    if carrier.update == "accumulate":
        return "module_state" if carrier.origin == "attribute" else "accumulated_loss"
    if carrier.origin == "list":
        return "growing_buffer"
    if carrier.kind == "old":
        if e.same_step:
            # A second network fed with it after the earlier backward; read before that
            # backward only (both losses built first): two losses over one forward.
            # The same weights below the carrier too (a model run again on its own output,
            # a refinement pass): not a critic scoring what another network made.
            fed_after = getattr(carrier, "entry", "") != "unread"
            return "gan_discriminator" if e.same_critic and not e.recurrence else \
                "two_networks" if e.new_weights and fed_after else "shared_trunk"
        if carrier.origin == "attribute" and (e.on_module or not carrier.outside_loop):
            return "module_state"
        # Assigned only before the loop: reused every step; else kept from the step before.
        return "outside_loop" if carrier.outside_loop else _carried(e)
    if e.same_step:
        return "shared_trunk"
    if carrier.origin == "attribute":
        return "hidden_state" if e.through_weights else "module_state"
    return _carried(e)


def _carried(e: Evidence) -> str:
    """A value kept from an earlier step: a state carried from one batch into the next, unless
    its graph shows weights stepped by a gradient (an unrolled optimisation, which no pattern of
    the catalogue fixes as it stands). A state that no weights run on again may be a value
    computed from predictions and kept: :mod:`autograd_lens.explain.refine` tells it from the source."""
    if e.from_gradient and not (e.recurrence or e.through_weights):
        return "unknown"
    return "hidden_state"


def _as_holder(carrier: Any, on_object: bool) -> Suspected:
    return Suspected(carrier.kind, "attribute" if on_object else "variable", carrier.update,
                     carrier.outside_loop)


def _is_custom(node: Any) -> bool:
    return is_custom_function(node) and not any(
        word in node_name(node) for word in ("Checkpoint", "Compiled"))


def is_checkpoint(node: Any) -> bool:
    """A reentrant checkpoint's node."""
    return "CheckpointFunction" in node_name(node)


def in_regions(nodes: Any, regions: list[tuple[int, int]]) -> bool:
    """Whether a node was created inside a recorded checkpointed region (by sequence number)."""
    return any(low < sequence(n) <= high for n in nodes for low, high in regions)


def first_saved(frontier: list[Any], old: set[Any]) -> list[Any]:
    """The old nodes holding saved tensors first met below ``frontier`` (the frontier itself
    when its nodes hold any)."""
    def holds(node: Any) -> bool:
        try:
            return bool(stale_slots(node)[0])
        except RuntimeError:
            return False

    found = breadth_first(frontier, stop=holds, follow=lambda n: [c for c in children(n) if c in old])
    return [n for n in found if holds(n)]


_VIEWS = ("TBackward", "ViewBackward", "TransposeBackward", "PermuteBackward", "ExpandBackward",
          "UnsqueezeBackward", "SqueezeBackward", "UnsafeViewBackward", "ReshapeAliasBackward")


def _weights(node: Any, old: set[Any]) -> list[Any]:
    """The leaves ``node`` itself takes (directly, or through a view or transpose of one)."""
    found = []
    for child in children(node):
        if hasattr(child, "variable"):
            found.append(child)
        elif child not in old and node_name(child).startswith(_VIEWS):
            found += [n for n in children(child) if hasattr(n, "variable")]
    return found


def through_weights(start: Any, reaching: Any, old: set[Any], shared: bool = False) -> bool:
    """Whether, from ``start`` down to the old graph, a node on the way takes weights (with
    ``shared``: weights that the old graph took too, the same model run again on its output,
    a recurrence)."""
    if start is None or start in old:
        return False
    way = breadth_first([start], stop=lambda n: n in old,
                        follow=lambda n: [c for c in children(n) if reaching(c)])
    taken = leaves_of(w for n in way if n not in old for w in _weights(n, old))
    if not shared:
        return bool(taken)
    below = breadth_first([c for n in way for c in children(n) if c in old])
    return bool(taken & leaves_of(below))


def leaves_of(nodes: Any) -> set[int]:
    """The ids of the leaf tensors under ``nodes``' AccumulateGrad nodes."""
    return {id(n.variable) for n in nodes if isinstance(getattr(n, "variable", None), torch.Tensor)}
