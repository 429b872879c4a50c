"""Candidate edits for the freed-graph error that follow from what the replay recorded: the name
that holds the freed graph and the statement that made its node (``got``), where it enters the
failing step, and the backward call that freed it (``freed_by``).

Each is only a candidate: it is run before it is called the fix (see :mod:`autograd_lens.run.verify`),
and one that fails is printed only as a failed attempt.

* :func:`fresh_name`: the carrier was made by ``name = EXPR`` before the earlier backward, and in
  the pass of the loop where it enters, another name was just assigned the same ``EXPR`` (a
  new graph): the line where it enters reads that name instead.
* :func:`fresh_total`: the carrier is an attribute that a method adds to in place
  (``self.out += f(x)``) and reads: the sum starts again from zero in each call, as a local
  name, so no call's graph reaches the next.
* :func:`without_earlier_backward`: the backward call that freed the graph is a statement of its
  own in another function than the failing call, and the recording shows it started from the
  very roots the failing call starts from (the same loss backwarded twice): without it, the
  failing call is the one backward of that loss.
* :func:`without_earlier_wrapper_call`: the freeing call and the failing call are the one
  backward statement of a thin wrapper (a function that does nothing else), the recording
  shows both started from the same loss, and the wrapper was called first from another line
  than the failing call's: that earlier call of the wrapper is left out.
* :func:`earlier_backward_retained`: the backward call that freed the graph is a statement of
  its own in another function than the failing call, the recording shows it started from
  other roots (another loss made from the same forward), and no optimizer step ran after it:
  it keeps the graph (``retain_graph=True``), so the failing call goes through it too.
* :func:`made_again_in_loop`: the carrier was made by ``name = EXPR`` before the loop in which
  it enters, and nothing ``EXPR`` reads is a name the recording lists as holding the freed
  graph, or each such name has one plain assignment before it there, outside every loop, whose
  names in turn hold none or are so made (``logits``, ``probs``, then ``loss``): the same
  statements run again at the top of that loop, so each pass builds its own
  graph from what it reads then (a static guess could not tell a module or a plain tensor,
  read there, from a kept output that would bring the old graph back). Not when ``name = EXPR``
  is itself in an outer loop and the recording shows an optimizer step between the building
  of the freed node and the failing call: the program makes it once per outer pass and keeps
  it across steps, a snapshot that made again would no longer be old.
* :func:`attribute_made_again`: the carrier is ``self.X`` (or ``obj.X``, ``model.kernel.X``),
  recorded holding the
  freed graph, which one method of its class (for ``obj.X``, the class the recording names as
  its object's) assigns once (``self.X = EXPR``, ``EXPR`` reading nothing but ``self``, and no
  attribute of it that the recording shows holding the freed graph) and another method (or
  code outside the class) reads: the read gets ``EXPR`` in its place, ``self`` read as ``obj``,
  a new graph each time it runs (``EXPR`` may read the file's imported modules: ``torch.exp``);
  the reads of ``self.X`` in the class's other methods get it too (where it enters as ``obj.X``
  through a method's call, they are the only reads), so none goes on reading the value made once.
* :func:`start_again`: the carrier, recorded holding the freed graph, is read where it enters
  with a learned start for the first call (``self.W0 if self.state is None else self.state``,
  ``W0`` a parameter the program makes; a detach would leave it untrained): each call
  starts from that start again, so no call's graph reaches the next (and the state is no
  longer carried from one call to the next, which the text says).
* :func:`inner_call_retained`: the failing call is an ``autograd.grad`` that a custom
  Function's backward runs, and the recording shows the same statement, run the same way by an
  earlier backward, freed the graph; the program keeps the outer graph (a backward with
  ``retain_graph=True`` recorded) and no optimizer step ran since: the inner call keeps its
  graph too, so the outer graph's next pass finds it (not a ``backward()`` there: run again, it
  would add into the ``.grad`` that the Function returns, counting the first pass twice).
* :func:`appended_value_read`: the carrier is an entry of a list, kept by the statement that
  appends a name (``losses.append(loss)``), and the statement where it enters reads the list
  by an index (``losses[i].backward()``) after that append in the same pass of the same loop:
  it reads the name just appended instead, this pass's value with its own graph (the list,
  never emptied, holds earlier passes' entries at that index).
* :func:`taken_in_detached`: a statement of the recorded call chain that made the carrier's
  node (``surrogate(s, a, advantage)``, in the loop that also backwards a critic's loss
  through ``advantage``) reads names that the recording shows holding a graph an earlier
  backward freed (``carrying``), a backward of another statement than the failing one (another
  loss's, not an earlier pass of the same): it reads them detached, so the earlier backward
  alone trains what made them, and the carrier's graph no longer reaches theirs.
* :func:`clear_after_backward`: the carrier is an entry of a list that the program clears, after
  the backward that freed it, only under a condition, beside an optimizer's step (gradient
  accumulation that clears on the optimizer's steps; not a window it empties on purpose): the
  same clearing statement also runs right after that backward.
* :func:`~autograd_lens.explain.spent_value.none_after_backward`: the failing backward statement is the
  one that freed the graph (an earlier pass), its loss reads the carrier, and the program gives
  the carrier None elsewhere: it gets None right after that backward.
* :func:`~autograd_lens.explain.spent_value.memo_cleared_after_backward`: the carrier is a memo
  (``if self.X is None: self.X = ...``) that the failing backward statement freed in an earlier
  pass, listed under a name of the failing call's function: that name gets None after it.
* :func:`memo_stored_detached`: the carrier is such a memo: stored without its graph where the
  recording shows it filled (for a memo computed from a value made once, which the None does
  not make again), after the None.
* :func:`~autograd_lens.fixes.grads_in_turn.grad_retained_in_loop`: the failing ``autograd.grad`` in a
  loop is the call that freed the graph, an earlier pass from the same roots: it keeps the graph.
* :func:`~autograd_lens.fixes.nonreentrant.not_reentrant`: the recording shows the failing backward
  run inside another (a reentrant checkpoint's): the program's reentrant checkpoint calls run
  non-reentrant.
* :func:`~autograd_lens.fixes.cached_block.cached_per_step`: the carrier is a weight a
  parametrization's cache keeps, and the failing backward is in a loop that is the one statement
  of a ``parametrize.cached()`` block: the block goes inside the loop, one cache per step.
"""

from __future__ import annotations


from ..fixes.rules import Fix
from .second_loss import detached_at_join, retained_first
from ..fixes.grads_in_turn import grad_retained_in_loop
from ..fixes.nonreentrant import not_reentrant
from ..fixes.cached_block import cached_per_step
from .spent_value import memo_cleared_after_backward, none_after_backward
from .made_again import (attribute_made_again, fresh_name, fresh_total, made_again_in_loop,
                         start_again)
from .earlier_call_edits import (earlier_backward_retained, inner_call_retained,
                                 without_earlier_backward, without_earlier_wrapper_call)
from .kept_state_edits import (appended_value_read, clear_after_backward, memo_stored_detached,
                               state_detached_by_the_loop, state_detached_where_kept,
                               taken_in_detached)


def candidates(carriers: list, evidence: dict | None, failed: tuple[str, int] | None) \
        -> list[Fix]:
    """Every candidate of this module for the finding's carriers and recorded evidence."""
    fixes: list[Fix] = []
    top = next((c for c in carriers if not c.held), None)
    freed = ((evidence or {}).get("node") or {}).get("freed_by")
    if top is not None:
        fixes += fresh_name(top) + fresh_total(top) + clear_after_backward(top, freed)
        fixes += made_again_in_loop(top, evidence) + attribute_made_again(top, evidence)
        fixes += start_again(top, evidence) + state_detached_where_kept(top, failed)
        fixes += state_detached_by_the_loop(top, evidence, failed)
        fixes += appended_value_read(top) + taken_in_detached(top, evidence)
        fixes += none_after_backward(top, freed, failed) + cached_per_step(top, failed)
        fixes += memo_cleared_after_backward(top, evidence, freed, failed)
        fixes += memo_stored_detached(top, carriers, failed)
    fixes += without_earlier_backward(freed, failed) + without_earlier_wrapper_call(evidence)
    at = (evidence or {}).get("at") or {}
    inner = (at["file"], at["line"]) if (evidence or {}).get("nested") and at.get("line") \
        else failed  # a call that another backward ran fails at its own statement
    fixes += earlier_backward_retained(freed, inner, (evidence or {}).get("steps", []))
    fixes += inner_call_retained(evidence) + grad_retained_in_loop(evidence)
    fixes += [r for r in retained_first(evidence) if all(r.edits != f.edits for f in fixes)]
    files = [where[0] for where in (failed, inner) if where] + [c.file for c in carriers]
    return fixes + detached_at_join(carriers, evidence) + not_reentrant(evidence, files)

