"""What went wrong when a backward failed: the carriers, the pattern, its fix and its page.

:func:`explain` is called at the moment of the failure (while the user's frames are still
alive) and returns a :class:`~autograd_lens.explain.finding.Finding`: printed after the
traceback by ``python -m autograd_lens``, written as JSON by ``--report``, and appended to the
error by :class:`diagnose_on_error`. It reads the carriers, the graph between the two calls and
the recorded calls as evidence, and from it the pattern and the page of the situation.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import torch

from ..source.candidates import Candidate
from .carrier import Carrier
from .carriers import rank_candidates, shown, shown_in_turn
from .graph_view import GraphView
from ..predict.diagnose import diagnose_graph
from ..lens.errors import is_inplace_error
from ..lens.graph import breadth_first, children, node_name
from .refine import refined
from ..lens.history import Call, as_tensors
from ..lens.sequence_numbers import alive_roots, old_nodes, sequence
from .in_turn import in_turn, went_in_turn
from .pages import page_for
from ..predict.report import PATTERNS
from .scene import Scene
from ..predict.verdict import (Evidence, decide, first_saved, in_regions, is_checkpoint, leaves_of,
                               through_weights)
from ..source.source_writes import built_before, steps_between
from .writes import Write, find_write, reached_from
from .written_nodes import written_nodes
from .finding import Finding


def _evidence(carriers: list[tuple[Carrier, Candidate]], view: Any, order: list[Any], kids: dict[Any, list[Any]],
              old: set[Any], roots: list[Any], calls: list[Call], inplace: bool,
              frames: list[Any], known: dict[int, Any], nested: bool,
              regions: list[tuple[int, int]], turn: bool = False) -> Evidence:
    """What the carriers, the graph between the two calls and the recorded calls show
    (``turn``: the earlier call was an earlier pass of the failing call's loop over losses)."""
    latest = calls[0] if calls else None
    frame = frames[0] if frames else None
    saved_first = first_saved(view.frontier, old)
    evidence = Evidence(
        root_old=any(r in old for r in roots), first_saved=saved_first,
        checkpointed=any(is_checkpoint(n) for n in old) or in_regions(old, regions),
        inplace=inplace and (latest is None or latest.retained), nested=nested, latest=latest,
        carrier=carriers[0][0] if carriers else None)
    evidence.same_step = latest is not None and frame is not None and latest.where[:2] == (
        frame.f_code.co_filename, frame.f_code.co_firstlineno) and (
        latest.where[2] < frame.f_lineno or turn)
    if evidence.same_step:
        alive = alive_roots(latest, known)
        before = breadth_first(alive) if alive else list(old)
        new_leaves = leaves_of([c for n in order if n not in old for c in kids[n]])
        evidence.same_critic = bool(new_leaves & leaves_of(before))
        evidence.new_weights = bool(new_leaves)
    evidence.recurrence = through_weights(roots[0], view.reaches, old, shared=True)
    evidence.disjoint = not (leaves_of([c for n in order if n not in old for c in kids[n]])
                             & leaves_of([c for n in old for c in kids.get(n, ())]))
    if carriers:
        carrier, candidate = carriers[0]
        evidence.on_module = isinstance(candidate.owner, torch.nn.Module)
        evidence.on_object = candidate.owner is not None
        evidence.grows = _grows(candidate.container, old, calls)
        number = sequence(candidate.tensor.grad_fn)
        if carrier.kind == "old":
            evidence.again = next((c for c in calls if number in c.roots), None)
        if carrier.kind == "carried":
            evidence.through_weights = through_weights(candidate.tensor.grad_fn, view.reaches, old)
        if not evidence.recurrence and not evidence.through_weights:
            evidence.from_gradient = _from_gradient(candidate.tensor.grad_fn)
    return evidence


def _from_gradient(node: Any) -> bool:
    """Whether a gradient's own nodes (``TanhBackwardBackward0``: made by autograd.grad with
    ``create_graph=True``) lie in the graph below ``node``: weights stepped by a gradient."""
    return node is not None and any("BackwardBackward" in node_name(n)
                                    for n in breadth_first([node]))


def _at_build(carrier: Carrier, frames: list[Any]) -> Carrier:
    """A carrier of a graph a step changed, named where it was built before that step."""
    write = carrier.write
    if write.how != "step" or not write.line or carrier.file != write.file or not frames:
        return carrier
    line = built_before(carrier.file, carrier.name, write.line)
    if carrier.line <= write.line and line != carrier.line:
        return carrier  # read later in a loop that steps after: named where it enters
    return dataclasses.replace(carrier, line=line, why=f"is built here, before "
                               f"`{write.text}` at {write.where()} changed in place a weight "
                               "its graph saved") if line else carrier


def _written_first(write: Write | None, carriers: list[Carrier]) -> list[Carrier]:
    """For a tensor the program wrote in place, that tensor at its write comes first."""
    if write is None or write.how != "op" or not write.name or not write.line or write.module:
        return carriers  # a module's call wrote it: its line does not name the tensor
    first = Carrier(write.name, write.file, write.line, write.function,
                    f"is written in place here after {write.saver()} saved it", "written",
                    "attribute" if "." in write.name else "variable", entry="written",
                    write=write)
    return [first] + [c for c in carriers if c.name != write.name]


def _grows(container: Any, old: set[Any], calls: list[Call]) -> bool:
    """Whether a list or dict holds tensors of several steps: old entries and new ones, or old
    entries from before different earlier calls (a buffer that grows)."""
    if container is None:
        return False
    items = container.values() if isinstance(container, dict) else container
    nodes = [getattr(t, "grad_fn", None) for item in list(items)[:2000]
             for t in (item if isinstance(item, tuple) else (item,))]
    nodes = [n for n in nodes if n is not None]
    bounds = sorted(c.sequence for c in calls)
    steps = {sum(sequence(n) > b for b in bounds) for n in nodes if n in old}
    return len(steps) > 1 or (bool(steps) and any(n not in old for n in nodes))


def _known(order: list[Any], frames: list[Any]) -> dict[int, Any]:
    """Alive nodes by sequence number: this graph's, and those of the tensors the frames'
    variables hold (directly, or in a tuple, list or dict), where an earlier root would be."""
    known = {sequence(n): n for n in order}
    for frame in frames:
        for value in list(frame.f_locals.values()):
            items = value.values() if isinstance(value, dict) else \
                value if isinstance(value, (list, tuple)) else (value,)
            for item in list(items)[:100]:
                node = getattr(item, "grad_fn", None) if isinstance(item, torch.Tensor) else None
                if node is not None:
                    known.setdefault(sequence(node), node)
    return known


def _hidden(roots: list[torch.Tensor]) -> tuple[str, ...]:
    try:
        return tuple(getattr(diagnose_graph(roots), "hidden", ()))
    except Exception:  # noqa: BLE001 - the diagnosis must not add an error of its own
        return ()


def explain(error: BaseException, roots: Any, calls: list[Call], frames: list[Any],
            old: set[Any] | None = None, nested: bool = False,
            regions: list[tuple[int, int]] = (), steps: Any = None,
            inside: Any = ()) -> Finding:
    """The diagnosis of ``error``, raised by a backward (or ``autograd.grad``) from ``roots``.

    Args:
        error: the freed-graph or in-place error.
        roots: the tensors that backward started from.
        calls: earlier calls, oldest first (see :mod:`autograd_lens.lens.history`).
        frames: the user's frames at the moment of failure, innermost first.
        old: the nodes of this graph that earlier calls went through, when known (from a
            prediction made before the call); else found from ``calls``.
        nested: the error came from a backward that another backward ran (a custom
            Function's backward, a reentrant checkpoint).
        regions: checkpointed regions the program ran, as sequence-number ranges.
        steps: the optimizer steps recorded while it ran (None: not recorded; see
            :mod:`autograd_lens.explain.optimizer_steps`).
        inside: those of ``calls`` that the failing backward's outermost call ran inside itself.
    """
    tensors = [t for t in as_tensors(roots) if t.grad_fn is not None]
    root_nodes = [t.grad_fn for t in tensors]
    order = breadth_first(root_nodes)
    kids = {node: children(node) for node in order}
    inplace = is_inplace_error(error)
    known = _known(order, frames)
    # losses of one forward backpropagated in turn: the nodes the loop's earlier passes went
    # through, known from its collection (see autograd_lens.explain.in_turn)
    went = went_in_turn(frames[0], order) if in_turn(calls[-1] if calls else None, frames) \
        else set()
    written = written_nodes(order) if inplace else []
    write = find_write(error, written, frames, order, steps) if written else None
    if write is not None:  # the nodes that saved what was written: where the graphs meet
        old, used = {node for node, _ in written}, old_nodes(order, list(calls), True, known)[1]
    elif old is None and went:
        old, used = went, [calls[-1]]
    elif old is None:
        old, used = old_nodes(order, list(calls), inplace, known)
        if not old and nested:  # a nested backward freed what the outer one retained
            old, used = old_nodes(order, list(calls), True, known)
    else:  # known from a prediction: with the nodes above it that the calls went through
        found, used = old_nodes(order, list(calls), inplace, known)
        old = (old | found) & set(order)
        used = used or list(reversed(calls))
    view = GraphView(order, kids, old, root_nodes)
    ranked = rank_candidates(view, frames, used, inplace, write, inside)
    if write is not None:  # every name whose graph reaches the node: what the edit builds again
        write = dataclasses.replace(write, carrying=tuple(c.name for _, _, c in ranked),
                                    reached=reached_from(write, frames))
        ranked = [(s, found, dataclasses.replace(c, write=write) if found.tensor.grad_fn in
                   root_nodes else _at_build(dataclasses.replace(c, write=write), frames))
                  for s, found, c in ranked]  # the loss backwarded: named where it is
    carriers = shown(ranked, set(root_nodes)) or (
        shown_in_turn(ranked, set(root_nodes)) if went and write is None else [])
    evidence = _evidence(carriers, view, order, kids, old, root_nodes, used, inplace, frames,
                         known, nested, list(regions), bool(went))
    evidence.write = write
    frontier = [node_name(n) for n in view.frontier]
    named = _written_first(write, [c for c, _ in carriers])
    scene = Scene(order, kids, old, root_nodes, view.reaches, used, frames,
                  carriers[0][1].owner if carriers else None,
                  carriers[0][0] if carriers else None, nested, inside=inside, history=calls,
                  known=known)
    key = refined(decide(evidence), evidence, scene)
    return Finding(str(error).split("\n")[0], named, frontier,
                   PATTERNS.get(key), _hidden(tensors) if tensors else (),
                   write=write, inplace=inplace, across_step=_across_step(used, frames),
                   situation=_situation(key, evidence, scene))


def _situation(key: str, evidence: Evidence, scene: Scene) -> str:
    """The page of the situation, when not the pattern's own ("" when the scene cannot be
    read: a source or an object it does not understand)."""
    try:
        return page_for(key, evidence, scene) or ""
    except Exception:  # noqa: BLE001 - the diagnosis must not add an error of its own
        return ""


def _across_step(calls: list[Call], frames: list[Any]) -> bool:
    """Whether the source steps an optimizer between the newest earlier call and this one."""
    if not calls or not frames:
        return False
    file, first, line = calls[0].where
    code = frames[0].f_code
    return (file, first) == (code.co_filename, code.co_firstlineno) and \
        steps_between(file, line, frames[0].f_lineno)
