"""The evidence a diagnosis gathers for :func:`~autograd_lens.predict.verdict.decide`, and the
pattern it decides: what the graph shows (a stale root, a running total, an in-place write, a
checkpoint on the frontier, weights shared by the new part and the old one) and the carrier (the
first stale suspect the user named or, when none is named, among the tensors the program holds by
name: :mod:`autograd_lens.predict.frame_suspects`).
"""

from __future__ import annotations

from typing import Any

import torch
from torch.autograd.graph import Node

from ..lens.graph import SavedSlot, breadth_first, children, node_name
from ..lens.history import recorded_calls
from ..lens.sequence_numbers import old_nodes, sequence
from .frame_suspects import named_tensors
from .report import PATTERNS, Pattern, Suspect
from .suspects import judge_suspects
from .verdict import Evidence, Suspected, decide, is_checkpoint, leaves_of, through_weights

_ACCUMULATING = frozenset({"AddBackward0", "AddBackward1", "StackBackward0", "CatBackward0",
                           "SumBackward1", "UnbindBackward0"})


def _carrier(suspects: list[tuple[Suspect, Pattern]], items: list[Any],
             stale: Any, skip: Any = ()) -> tuple[Any, Any, int | None]:
    """The first stale suspect that backward reaches, as a carrier (kind, origin), with its node
    and its place in ``items`` (a suspect whose node is one of ``skip`` and not stale, the loss
    itself, is passed over)."""
    for index, ((suspect, _), (name, tensor, origin)) in enumerate(zip(suspects, items)):
        if suspect.state == "stale" and suspect.reaches_root:
            node = tensor.grad_fn
            old = stale(node)  # an old tensor named as a suspect is reused from before
            if node in skip and not old:
                continue
            carrier = Suspected("old" if old else "carried",
                                {"module": "attribute", "list": "list"}.get(origin, "variable"),
                                outside_loop=old)
            return carrier, node, index
    return None, None, None


def _from_frames(evidence: Evidence, roots: list[torch.Tensor], named: list[Any],
                 slot_count: dict[Node, int], stale_nodes: dict[Node, Any], is_stale: Any) -> Any:
    """The carrier among the tensors the program holds by name, with what the command reads of
    it: where it is kept (on a module, on an object), how the step updates it, whether it is
    assigned only before the loop, and, for an old tensor the step assigns before reading it,
    that it was made in this step (the earlier backward ran in this step too). Returns the
    carrier's node (None when no tensor held by name carries a stale graph)."""
    items = [n.item for n in named]
    judged = judge_suspects(items, slot_count, stale_nodes, is_stale)
    carrier, node, index = _carrier(judged, items, is_stale, {r.grad_fn for r in roots})
    if index is None:
        return None
    owner, entry = named[index].owner, named[index].entry
    evidence.carrier = carrier._replace(update=entry.update,
                                        outside_loop=carrier.outside_loop and entry.outside_loop)
    evidence.on_module = isinstance(owner, torch.nn.Module)
    evidence.on_object = owner is not None
    evidence.same_step = carrier.kind == "old" and entry.how == "assigned_first"
    return node


def pattern_of(roots: list[torch.Tensor], stale_nodes: dict[Node, tuple[SavedSlot, ...]],
             frontier: list[Node], fresh: list[Node], slot_count: dict[Node, int],
             suspects: list[tuple[Suspect, Pattern]], items: list[Any], is_stale: Any,
             frames: list[Any]) -> Pattern:
    """The pattern, decided by :func:`~autograd_lens.predict.verdict.decide` from what the graph and
    the suspects show (no record of earlier calls here: see ``diagnose_on_error``). With no
    suspect that carries a stale graph, the carrier is looked for as the command looks for it,
    among the tensors the program holds by name in ``frames`` (see
    :mod:`autograd_lens.predict.frame_suspects`)."""
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
    # From the root down through nodes that save nothing, an accumulating node with a stale
    # branch: total = total + loss, torch.stack(log_probs).sum().
    slotless = {node for node in fresh if not slot_count[node]}
    region = [node for node in breadth_first([r.grad_fn for r in roots if r.grad_fn in slotless],
                                          stop=lambda n: n not in slotless) if node in slotless]
    evidence.accumulating = any(node_name(n) in _ACCUMULATING for n in region) and any(
        child in stale_nodes for n in region for child in children(n))
    evidence.carrier, node, _ = _carrier(suspects, items, is_stale)
    if evidence.carrier is None and frames and not evidence.accumulating:
        # (a running total is carried by the loss itself, which the graph already shows)
        node = _from_frames(evidence, roots, named_tensors(frames, is_stale), slot_count,
                            stale_nodes, is_stale)
    reaches = _reaching(is_stale)
    if evidence.carrier is not None and evidence.carrier.kind == "carried":
        evidence.through_weights = through_weights(node, reaches, set(stale_nodes))
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
