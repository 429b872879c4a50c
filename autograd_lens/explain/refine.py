"""The pattern, looked at again with the frames and the source, where the graph alone says too
much.

A value the graph shows as kept from an earlier step may have been made earlier in this very
step, in a caller, before a backward there went through it (a discriminator's loss built and
backpropagated by a helper, after the generators' backward in the loop that calls it): nothing
crosses from one step into the next; a second loss goes through what the first backward went
through. And a list or dict of tensors kept across updates may be a store of values that later
steps read back entry by entry (teacher outputs computed once, last epoch's predictions per
sample), not a buffer of one update's terms: emptying it would lose what it is kept for. A
state that no weights run on again, and that no line of the program makes from its own value
(``s = cell(x, s)``), is not a state at all but a value computed from predictions and kept.
And a gradient taken of a loss that a backward then goes through again is an inner step of
meta-learning only when the failing graph takes a weight adapted after it (``w - lr * g``);
without one, the gradient only weighed or measured the loss. And an attribute that its class
assigns only in ``__init__`` was not updated with history: it was computed once, when the object
was built, and reused by every step.
"""

from __future__ import annotations

from typing import Any

# Patterns that say a value crosses from one step (or from before the loop) into the next.
_ACROSS_STEPS = ("hidden_state", "outside_loop", "kept_value")


def refined(key: str, evidence: Any, scene: Any) -> str:
    """``key``, or the pattern the frames and the source show instead."""
    if key == "hidden_state" and not (evidence.recurrence or evidence.through_weights) and \
            scene.carrier is not None and not scene.self_fed:
        # no weights run on it again, and no line makes it from its own value: not a state
        # that evolves from step to step, but a value computed from predictions and kept
        key = "kept_value"
    if key in _ACROSS_STEPS and scene.outer_step and scene.consumer:
        # a second loss over what the first went through, taken by a second network (its
        # weights lie between the loss and the old graph); without one (a second loss over
        # the same output), the page says so (two losses, one forward), the pattern stays
        return "two_networks"
    if key == "module_state" and scene.made_once:
        return "outside_loop"  # computed once, when the object was built: never updated
    if key == "growing_buffer" and scene.looked_up:
        return "kept_value"  # entries read back one by one, by index or key
    if key == "meta_learning" and evidence.latest is not None and \
            not _adapted_weights(scene, evidence.latest.sequence):
        # no weight stepped by the gradient: the gradient only weighed or measured the loss
        # (a norm), and the backward goes again through the loss it was taken of
        return "grad_then_backward"
    return key


def _adapted_weights(scene: Any, after: int) -> bool:
    """Whether the failing graph holds a node made after the gradient call numbered ``after``
    that takes a leaf (a weight) itself: a weight adapted by that gradient (``w - lr * g``)."""
    from ..lens.graph import node_name

    return any(node._sequence_nr() > after and
               any(node_name(kid) == "AccumulateGrad" for kid in scene.kids.get(node, ()))
               for node in scene.order)
