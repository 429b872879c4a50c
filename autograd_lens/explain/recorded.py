"""The diagnosis said from the replay's recorded evidence (see :mod:`autograd_lens.run.record`).

The first run's :class:`~autograd_lens.explain.finding.Finding` names the carriers from the live graph
and the source at the failure. :func:`amend` makes every statement about what *happened* from
what the replay recorded instead:

* the in-place error: the write (the first write of the saved tensor after the node saved it,
  during the forward), its line in the user's code and the library line under it, the tensor's
  name at that write, the node that saved it and the line that built it, and whether an optimizer
  step or a backward call lay between the save and the write; the pattern follows the write (a
  step's write: a weight changed by ``optimizer.step()``; the program's own: a tensor written in
  place);
* the freed-graph error: the node whose saved tensors were freed, the line and the step that
  built it, the backward call that freed it, and the user's names that still hold it; whether an
  optimizer step ran since that backward (the fix said across a step only then); each carrier
  given where it got the graph; the page of losses of one forward backpropagated in turn when
  the recording shows it (both in :mod:`autograd_lens.explain.carrier_origin`), and the pattern's own
  page, not a discriminator's, for a tensor it shows made once up front (and for a container
  of such tensors, the pattern of a tensor computed outside the loop, not a growing buffer's); a name that holds a freed node itself named first when the source's carriers hold only nodes the freeing call
  did not go through (:func:`~autograd_lens.explain.recorded_freed.holding_itself`); the carriers ordered by what the recording shows
  each holds, a list's entry named by the list (:mod:`autograd_lens.explain.held_names`); for a failing
  loss built before the call that freed its graph ran, the name through which the first loss
  took in the shared part, on the page of two losses of one forward
  (:mod:`autograd_lens.explain.second_loss`).

Without evidence (no replay, a replay that did not fail the same way, a notebook), :func:`amend`
marks the finding as read from the failure alone: the lines about a write, a step, a loop or an
earlier call then say they are a guess.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from ..fixes.nonreentrant import ran_inside
from ..predict.report import PATTERNS
from .across_step import stale_carriers
from .carrier_origin import got, in_turn
from .held_names import as_container, by_recording, recorded_names
from .old_graph import said
from .recorded_freed import (_accumulated_in_this_step, _earlier_said, _entering_first,
                             _first_run_of_the_failing_call, _kept_before_loop, _made_after,
                             _made_before_training, _made_from_itself, _made_in_an_earlier_pass,
                             _once, _rewhy, _unlooped, holding_itself)
from .recorded_write import _blank, _built_after_the_step, _unstepped, _write_of
from .second_loss import is_second_loss, joining_carrier

GUESS = " (a guess from the source: not recorded)"


def _freed_here_before(evidence: dict) -> bool:
    """Whether the recording shows the failing call's own statement freeing the node, as an
    earlier call (the same line run again by a loop)."""
    freed = ((evidence.get("node") or {}).get("freed_by") or {}).get("user") or {}
    at = evidence.get("at") or {}
    return bool(freed) and (freed.get("file"), freed.get("line")) == (at.get("file"),
                                                                     at.get("line"))


def amend(finding: Any, evidence: dict | None, why_not: str = "") -> Any:
    """``finding`` with its statements made from ``evidence`` (None: marked as a guess, with
    ``why_not`` said: why there is no recording)."""
    if evidence is None:
        return dataclasses.replace(finding, recorded=False, why_not=why_not)
    changes: dict[str, Any] = {"recorded": True, "evidence": evidence}
    if evidence["kind"] == "modified":
        write = _write_of(finding.write, evidence)
        changes["write"] = write
        carriers = list(finding.carriers)
        if finding.write is not None:
            carriers = [c for c in carriers if not (
                c.kind == "written" and (write is None or (c.name, c.line) !=
                                         (write.name or write.by, write.line)))]
            old_said, new_said = said([], True, finding.write), said([], True, write)
            carriers = [_rewhy(c, old_said, new_said) for c in carriers]
        if write is not None and write.how == "op" and (write.name or write.by) and \
                not any(c.kind == "written" for c in carriers):
            carriers.insert(0, dataclasses.replace(
                carriers[0] if carriers else _blank(), name=write.name or write.by, file=write.file,
                line=write.line, function=write.function, kind="written",
                why=(f"runs here and writes in place what {write.saver()} saved"
                     if write.module and not write.name else f"is written in place here after {write.saver()} saved it"), write=write,
                origin="attribute" if "." in write.name and "(" not in write.name and
                not write.module else "variable",
                entry="written"))
        if write is not None:  # the first run's written carrier kept: with what was recorded
            carriers = [_rewhy(dataclasses.replace(c, write=write),
                               f"after {c.write.saver()} saved it", f"after {write.saver()} saved it")
                        if c.kind == "written" and c.write is not None and c.line == write.line
                        else c for c in carriers]
        if write is not None and write.how == "step":  # the step's line, as recorded
            carriers = [dataclasses.replace(c, write=write) if c.write is not None and
                        c.write.how == "step" else c for c in carriers]
            carriers = stale_carriers(carriers, evidence, got)  # made before it, as recorded
        carriers = [_unlooped(_built_after_the_step(c, evidence)) for c in carriers]
        unstepped = (write is not None and write.how == "op") or \
            (write is None and not evidence.get("steps_before"))  # no step wrote it
        if unstepped:
            carriers = [_unstepped(c, write, (evidence.get("node") or {}).get("name", ""))
                        for c in carriers]
        changes["carriers"] = carriers
        key = finding.pattern.key if finding.pattern else ""
        if unstepped and key == "modified_in_place":
            changes["pattern"] = PATTERNS["written_in_place"]
        elif write is not None and write.how == "step" and key == "written_in_place":
            changes["pattern"] = PATTERNS["modified_in_place"]
    else:
        freed = (evidence.get("node") or {}).get("freed_by")
        if freed is not None:
            number = freed["number"]
            changes["across_step"] = any(s["after_backward_calls"] >= number
                                         for s in evidence.get("steps", []))
            changes["carriers"] = [_earlier_said(c, freed) for c in finding.carriers]
        holders = recorded_names(evidence)
        carriers = changes.get("carriers", finding.carriers)
        changes["carriers"] = _once([as_container(got(c, holders), holders) for c in by_recording(
            holding_itself(carriers, evidence, freed) + list(carriers), evidence)])
        if freed is not None:
            changes["carriers"] = [_made_after(c, evidence, freed) for c in changes["carriers"]]
            changes["carriers"] = _entering_first(changes["carriers"], evidence, freed)
        key = finding.pattern.key if finding.pattern else ""
        if key == "accumulated_loss" and _accumulated_in_this_step(finding, changes["carriers"]):
            # the total the first run named was computed in this step, from a state an object
            # keeps from the step before: that state, not a total kept across steps
            changes["pattern"], key = PATTERNS["module_state"], "module_state"
        if ran_inside(evidence) and (evidence.get("node") or {}).get("name", "").startswith(
                "CheckpointFunction"):  # freed by the backward a reentrant checkpoint ran inside
            changes["situation"] = "18_checkpoint"  # the failing one
            return dataclasses.replace(finding, **changes)
        if is_second_loss(evidence) and changes["carriers"] and key != "gan_discriminator" \
                and finding.situation != "12_gan_discriminator":  # a GAN's own page stands
            changes["carriers"] = joining_carrier(changes["carriers"], evidence, got)
            changes["situation"] = "02_two_losses_one_forward"
            if key != "shared_trunk":  # (not two networks: the loss was made before the call)
                changes["pattern"] = PATTERNS["shared_trunk"]
            changes["across_step"] = bool(evidence["root"].get("stepped"))
            return dataclasses.replace(finding, **changes)
        if key == "outside_loop" and not finding.situation and \
                in_turn(changes["carriers"], evidence, freed):
            changes["situation"] = "02_two_losses_one_forward"
        if finding.situation == "12_gan_discriminator" and changes["carriers"] and \
                _made_before_training(changes["carriers"][0], evidence):
            changes["situation"] = ""  # the pattern's own page: a tensor made once, up front
        elif key == "shared_trunk" and not finding.situation and changes["carriers"] and \
                _made_before_training(changes["carriers"][0], evidence):
            changes["situation"] = "13_tensor_outside_loop"
        elif key in ("kept_value", "hidden_state", "growing_buffer") and changes["carriers"] \
                and _first_run_of_the_failing_call(changes["carriers"][0], evidence):
            # nothing was kept from an earlier step (no list grew across updates either):
            # another loss of this forward went first
            changes["pattern"] = PATTERNS["shared_trunk"]
            changes["situation"] = "02_two_losses_one_forward"
        elif key in ("shared_trunk", "two_networks", "kept_value", "hidden_state") and \
                changes["carriers"] and _kept_before_loop(changes["carriers"][0], evidence):
            changes["pattern"], changes["situation"] = PATTERNS["outside_loop"], ""
        elif key == "shared_trunk" and not finding.situation and changes["carriers"] and \
                _made_from_itself(changes["carriers"][0]):
            changes["pattern"] = PATTERNS["module_state" if changes["carriers"][0].origin ==
                                          "attribute" else "hidden_state"]
        elif key == "growing_buffer" and not finding.situation and changes["carriers"] and \
                _made_before_training(changes["carriers"][0], evidence):
            changes["pattern"] = PATTERNS["outside_loop"]  # made once, up front: no buffer grew
        elif key == "higher_order" and changes["carriers"] and _freed_here_before(evidence):
            # the failing statement itself freed it, in an earlier pass: a value kept from that
            # pass (a cache), not a loss taken through a gradient's graph
            changes["pattern"] = PATTERNS["module_state" if changes["carriers"][0].origin ==
                                          "attribute" else "kept_value"]
            changes["situation"] = ""
        elif key == "outside_loop" and changes["carriers"] and \
                _made_in_an_earlier_pass(changes["carriers"][0], evidence):
            # made by the loop itself, not before it: a value one pass kept for the next
            changes["pattern"] = PATTERNS["module_state" if changes["carriers"][0].origin ==
                                          "attribute" else "kept_value"]
            changes["situation"] = ""
    return dataclasses.replace(finding, **changes)

