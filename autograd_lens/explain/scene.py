"""What the situation of a failed backward looks like, beyond the pattern: the facts that pick
the book's page (see :mod:`autograd_lens.explain.pages`).

A pattern says what kind of mistake it is and how to fix it; several situations share one
pattern, and the book has a page per situation: the same loss backpropagated twice, two losses
of one forward, a discriminator scoring a fake batch it already went through, a checkpointed
region run through twice, a value computed once and reused, state a module keeps. The facts
come from the graph (which nodes take weights, which part reaches the old graph), from the
frames (where the earlier call ran, which object holds the old graph) and from the lines of the
two calls.
"""

from __future__ import annotations

from functools import cached_property
from typing import Any

from ..lens.graph import breadth_first, node_name
from ..lens.history import Call
from ..lens.sequence_numbers import alive_roots
from ..predict.verdict import through_weights
from .scene_graph import (_earlier_in, _run_by_checkpoint, after_inner_step, critic, critic_step,
                          kept_on_module)
from .scene_lines import (backwarded, from_collection, looked_up, made_once, memoised,
                          same_loss_again, self_fed)


class Scene:
    """Facts about one failed backward that tell its situation apart, each found when first
    asked (the page's rules ask only for those of the pattern they refine).

    Attributes:
        outer_step: the earlier call ran earlier in a function that is still running (the
            caller of the failing call's function), in the same step.
        same_loss: the failing call's loss is the earlier call's loss built again from the same
            values (``o1.sum().backward()`` twice, ``criterion(output, y)`` twice).
        from_collection: the failing call's loss comes from a collection built before its loop
            (``for loss in losses: loss.backward()``): the losses of one forward, in turn.
        critic: in the new part of the graph, one network takes both the old tensor and inputs
            that carry no old graph (a discriminator scoring a kept fake batch and real data),
            and the old part was made by other weights (the generator).
        critic_step: the earlier backward was such a critic's own step: weights that its graph
            took on inputs of its own (a discriminator on real data) were taken in the shared
            part too, on what other weights made (the generator's fake batch, not detached),
            and no optimizer the program holds updates both.
        consumer: between the root and the old graph, a node takes weights (a second network
            takes the old tensor), not only sums and functions without weights.
        reentrant: the graph holds a reentrant checkpoint, and the error came from the backward
            that the checkpoint ran inside this one.
        made_once: the carrier is an attribute that its object's class assigns only when it is
            built (in ``__init__``), never when it runs: computed once, reused every step.
        kept_on_module: a module's attribute (a tensor, or a list or dict of tensors) holds the
            old graph.
        self_built: the failing call starts from the carrier itself, built in the step from its
            own earlier value (``smooth = 0.9 * smooth + 0.1 * loss; smooth.backward()``).
        after_inner_step: the function that failed took a gradient with ``create_graph=True``
            before the earlier backward, and the old graph holds nodes made after it (weights
            adapted by an inner step, as in second-order meta-learning).
        self_fed: the function holding the carrier's line assigns it from its own value
            (``z, s = cell(x, s)``): a state that evolves from step to step.
        looked_up: the carrier is an entry of a container that the step reads entry by entry, by
            a key it computes (``cache[i]``), never as a whole: a store of values read back.
        memoised: the carrier is an entry of a container that the program fills only for a key
            it does not hold yet (``if key not in cache: cache[key] = ...``): made once, reused.
    """

    def __init__(self, order: list[Any], kids: dict[Any, list[Any]], old: set[Any],
                 roots: list[Any], reaches: Any, calls: list[Call], frames: list[Any],
                 owner: Any, carrier: Any, nested: bool, inside: Any = (),
                 history: Any = (), known: Any = None) -> None:
        """``order`` the graph's nodes, ``kids`` their children, ``old`` the nodes earlier
        calls went through, ``roots`` the nodes it started from, ``reaches(node)`` whether a
        node's graph reaches an old one, ``calls`` the earlier calls newest first, ``frames``
        the user's frames innermost first, ``owner`` the object holding the top carrier (if
        any), ``carrier`` the top carrier (if any), ``nested``: the error came from a backward
        another backward ran; ``inside``: the calls that the failing backward's outermost call
        ran inside itself; ``history``: every earlier call, oldest first; ``known``: the
        alive nodes by sequence number, where the earlier call's roots are looked up."""
        self.order, self.kids, self.old, self.roots = order, kids, old, roots
        self.history, self.known = history, known or {}
        self.reaches, self.frames, self.owner, self.carrier = reaches, frames, owner, carrier
        self.latest, self.nested = (calls[0] if calls else None), nested
        # the earlier call that made the graph old was run inside the failing one's outermost call
        self.inner = self.latest is not None and any(self.latest is call for call in inside)

    @cached_property
    def outer_step(self) -> bool:
        return self.latest is not None and any(_earlier_in(self.latest, f) for f in self.frames[1:])

    @cached_property
    def same_loss(self) -> bool:
        latest, frames = self.latest, self.frames
        return latest is not None and bool(frames) and _earlier_in(latest, frames[0]) and \
            same_loss_again(latest.where[0], latest.where[2], frames[0].f_lineno)

    @cached_property
    def from_collection(self) -> bool:
        if not self.frames:
            return False
        code = self.frames[0].f_code
        return from_collection(code.co_filename, code.co_firstlineno, code.co_name,
                               self.frames[0].f_lineno)

    @cached_property
    def critic(self) -> bool:
        return critic(self.order, self.kids, self.old, self.reaches)

    @cached_property
    def critic_step(self) -> bool:
        alive = alive_roots(self.latest, self.known) if self.latest is not None else []
        return bool(alive) and critic_step(breadth_first(alive), self.old, self.frames)

    @cached_property
    def consumer(self) -> bool:
        return bool(self.roots) and through_weights(self.roots[0], self.reaches, self.old)

    @cached_property
    def reentrant(self) -> bool:
        return self.nested and (any(node_name(n).startswith("CheckpointFunction")
                                    for n in self.order) or _run_by_checkpoint())

    @cached_property
    def made_once(self) -> bool:
        carrier = self.carrier
        return carrier is not None and carrier.origin == "attribute" and \
            self.owner is not None and made_once(self.owner, carrier.name.rsplit(".", 1)[-1])

    @cached_property
    def kept_on_module(self) -> bool:
        return kept_on_module(self.frames, self.old)

    @cached_property
    def self_built(self) -> bool:
        carrier = self.carrier
        return carrier is not None and bool(self.frames) and carrier.kind == "carried" and \
            carrier.entry == "read_first" and backwarded(self.frames[0]) == carrier.name

    @cached_property
    def after_inner_step(self) -> bool:
        return bool(self.frames) and self.latest is not None and \
            after_inner_step(self.history, self.latest, self.frames[0], self.old)

    @cached_property
    def memoised(self) -> bool:
        carrier = self.carrier
        return carrier is not None and carrier.origin == "list" and \
            memoised(carrier.file, carrier.line, carrier.name)

    @cached_property
    def self_fed(self) -> bool:
        carrier = self.carrier
        return carrier is not None and self_fed(carrier.file, carrier.line, carrier.name)

    @cached_property
    def looked_up(self) -> bool:
        carrier = self.carrier
        return carrier is not None and carrier.origin == "list" and \
            looked_up(carrier.file, carrier.line, carrier.name)

