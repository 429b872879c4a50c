"""Which page of the book a finding links: the page of the situation the evidence shows.

A pattern keeps its pages, the first being its own (:mod:`autograd_lens.fixes.patterns`). Several
situations share a pattern, though, and the book has a page for each: :func:`page_for` picks the
page of the situation that the :class:`~autograd_lens.explain.scene.Scene` shows, or None for the
pattern's own page. Each rule names what it sees, never a name of the program.
"""

from __future__ import annotations

from typing import Any

from .scene import Scene

# Patterns that say little of the situation on their own: a shared part of the graph, or none.
_GENERIC = ("shared_trunk", "unknown")
# Patterns named from a carrier that holds an old graph, whatever made it old; and those of
# them a kept fake batch can show (a state carried through a recurrence is not one; a batch
# kept on the trainer object, read by its critic's step, is a module's state).
_OLD_CARRIER = ("shared_trunk", "outside_loop", "hidden_state", "two_networks", "kept_value")
_KEPT = ("shared_trunk", "outside_loop", "two_networks", "module_state")
# Patterns named from what holds the old graph, whatever made it old.
_NAMED_FROM_CARRIER = _GENERIC + ("outside_loop", "hidden_state", "two_networks", "module_state",
                                  "growing_buffer", "kept_value")


def page_for(pattern: str, evidence: Any, scene: Scene) -> str | None:
    """The notebook (or chapter) for the situation, when it is not the pattern's own page."""
    if pattern in _GENERIC and evidence.checkpointed or pattern in _NAMED_FROM_CARRIER and \
            scene.reentrant and scene.inner:
        # freed by a backward a reentrant checkpoint ran inside this one; or a checkpointed
        # region in the old graph, run through twice
        return "18_checkpoint"
    if pattern in _NAMED_FROM_CARRIER and scene.after_inner_step:
        return "20_meta_learning"  # adapted weights gone through by a backward per query
    if pattern in _GENERIC and scene.same_loss:
        return "01_backward_twice"  # the same loss built again from the same tensors
    if pattern in _KEPT and (scene.critic or scene.critic_step):
        # a discriminator scores a fake batch it went through, or its own step went through
        # the fake and the generator
        return "12_gan_discriminator"
    if pattern in _OLD_CARRIER and scene.from_collection:
        return "02_two_losses_one_forward"  # losses of one forward, backpropagated in turn
    if pattern in ("hidden_state", "outside_loop", "kept_value") and scene.outer_step:
        # The earlier call ran earlier in this very step, in a caller: a second loss over what
        # the first went through, taken by a second network or not.
        return "04_two_networks" if scene.consumer else "02_two_losses_one_forward"
    if pattern == "outside_loop" and scene.consumer:
        # computed before the loop and taken by a network of each pass: the pattern's own page,
        # said here so that a recording of losses taken in turn does not change it
        return "13_tensor_outside_loop"
    if pattern in ("hidden_state", "module_state", "kept_value") and scene.self_built:
        return "06_accumulating_loss"  # the loss backpropagated is a running mix of losses
    if pattern == "unknown" and evidence.from_gradient:
        return "20_meta_learning"  # weights stepped by a gradient taken with create_graph=True
    if pattern == "growing_buffer" and scene.memoised:
        return "13_tensor_outside_loop"  # a value memoised once and reused by later steps
    if pattern in ("unknown", "growing_buffer") and scene.kept_on_module and scene.consumer:
        return "16_module_state_with_history"  # state a module keeps and its layers read
    return None
