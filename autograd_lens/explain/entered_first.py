"""Among old carriers scored alike, the one an earlier backward entered through comes first.

Two tensors of an old graph can both be read by the failing step: a VAE's ``mu`` and the
reconstruction ``recon`` decoded from it, when a discriminator's backward went through
``recon``. The earlier backward reached ``mu``'s node only through ``recon``'s, so ``recon``
is where the old graph was entered; keeping that backward out of ``recon`` (``D(recon.detach())``)
keeps it out of ``mu`` too, while detaching ``mu`` leaves ``recon``'s path (and ``logvar``'s)
open. So an old carrier whose node lies in the graph of another old carrier goes after it.

Only when the earlier backward's loss is still alive (a candidate) and shows it: every way from
it down to the upper carrier's node passes the lower one's. Two cached values both read by the
earlier loss (``self.kvectors`` and ``self.influence`` computed from them) keep their order; an
earlier backward's own loss (``l1.backward()``, then ``l2 = g(logits) + l1``) is never moved up:
the loss that was backwarded is not where its graph was entered.
"""

from __future__ import annotations

from typing import Any

from ..lens.graph import breadth_first

_CLOSE = 1.0  # scored alike (as :mod:`autograd_lens.explain.carriers` reads it)
_LOOK = 6  # the first candidates only: the order of the ones shown is what matters


def entered_first(ranked: list[tuple[float, Any, Any]], calls: list[Any],
                  least: float) -> list[tuple[float, Any, Any]]:
    """``ranked`` (score, candidate, carrier) with every old carrier that another old carrier
    (scored alike, at least ``least``, not an earlier call's root) was computed from moved after
    that one."""
    roots = {number for call in calls for number in call.roots}
    losses = [found.tensor.grad_fn for _, found, _ in ranked if found.tensor.grad_fn is not None
              and found.tensor.grad_fn._sequence_nr() in roots]
    if not losses:
        return ranked  # the earlier loss is gone: nothing shows where its backward entered
    ranked = list(ranked)
    for i in range(min(len(ranked), _LOOK) - 1):
        for j in range(i + 1, min(len(ranked), _LOOK)):
            upper, lower = ranked[i], ranked[j]
            if _both_old(upper, lower) and upper[0] - lower[0] <= _CLOSE and lower[0] >= least \
                    and lower[1].tensor.grad_fn._sequence_nr() not in roots \
                    and _computed_from(lower[1].tensor.grad_fn, upper[1].tensor.grad_fn) \
                    and _only_through(losses, lower[1].tensor.grad_fn, upper[1].tensor.grad_fn):
                ranked[i], ranked[j] = lower, upper
    return ranked


def _both_old(upper: tuple[float, Any, Any], lower: tuple[float, Any, Any]) -> bool:
    return upper[2].kind == "old" and lower[2].kind == "old" and \
        upper[1].tensor.grad_fn is not None and lower[1].tensor.grad_fn is not None and \
        upper[1].tensor.grad_fn is not lower[1].tensor.grad_fn


def _computed_from(node: Any, earlier: Any) -> bool:
    """Whether ``earlier`` lies in ``node``'s graph. A node is made after the nodes it sends
    gradients to, so the walk goes no further down than ``earlier``'s sequence number."""
    mark = earlier._sequence_nr()
    return earlier in breadth_first([node], stop=lambda n: n is earlier or
                                    n._sequence_nr() <= mark)


def _only_through(losses: list[Any], through: Any, node: Any) -> bool:
    """Whether every way from the earlier losses down to ``node`` passes ``through``."""
    mark = node._sequence_nr()
    return node not in breadth_first(losses, stop=lambda n: n is through or n is node or
                                     n._sequence_nr() <= mark)
