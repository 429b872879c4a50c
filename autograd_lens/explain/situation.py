"""What went wrong when a backward failed: the carriers, the pattern, its fix and its page.

:func:`explain` is called at the moment of the failure (while the user's frames are still
alive) and returns a :class:`Finding`: printed after the traceback by ``python -m autograd_lens``,
written as JSON by ``--report``, and appended to the error by :class:`diagnose_on_error`.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
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
from ..lens.history import Call, alive_roots, as_tensors, old_nodes, sequence
from .in_turn import in_turn, went_in_turn
from ..source.places import place
from .recorded import GUESS
from .recorded_lines import recorded_lines
from .recorded_write import write_entry
from .pages import page_for
from ..fixes.patterns import link
from ..predict.report import PATTERNS, Pattern
from .scene import Scene
from ..predict.verdict import (Evidence, decide, first_saved, in_regions, is_checkpoint, leaves_of,
                               through_weights)
from ..source.source_writes import built_before, steps_between
from .writes import Write, find_write, reached_from, written_nodes


# The page on a weight written in place while a graph still needs its old value.
_WEIGHT_PAGE = "08_retain_step_backward"


@dataclass
class Finding:
    """The diagnosis of one failed backward (see ``chapters/api.md`` for its JSON form)."""

    error: str
    carriers: list[Carrier]
    frontier: list[str]
    pattern: Pattern | None
    hidden: tuple[str, ...] = ()
    notes: list[str] = field(default_factory=list)
    write: Write | None = None
    inplace: bool = False
    across_step: bool = False  # an optimizer's step() runs between the earlier call and this one
    situation: str = ""  # the page of the situation the evidence shows, when not the pattern's
    # What the replay recorded (see autograd_lens.explain.recorded): True once its evidence made the
    # statements; False when it was tried and gave none (``why_not`` says why); None: no replay.
    recorded: bool | None = None
    why_not: str = ""
    evidence: dict | None = None

    @property
    def fix(self) -> str:
        """The pattern's fix, said without keeping the graph when a step runs in between."""
        if self.pattern is None:
            return ""
        if self.on_weight and self.pattern.on_weight:
            return self.pattern.on_weight
        return self.pattern.across_step if self.across_step and self.pattern.across_step \
            else self.pattern.fix

    @property
    def on_weight(self) -> bool:
        """Whether the program itself wrote in place a weight a node saved."""
        return self.inplace and self.write is not None and self.write.weight and \
            self.write.how == "op"

    @property
    def page(self) -> str:
        """The page of the situation the evidence shows (see :mod:`autograd_lens.explain.pages`); else
        the pattern's page on state kept on an object when the tensor written in place is an
        attribute (a module's buffer), else its first."""
        if not self.pattern:
            return ""
        if self.situation:
            return link(self.situation)
        if self.on_weight and self.pattern.on_weight:
            return link(_WEIGHT_PAGE)
        links = self.pattern.links()
        kept = self.inplace and self.carriers and self.carriers[0].kind == "written" and \
            self.carriers[0].origin == "attribute"
        return next((link for link in links if "16_module_state" in link), links[0]) if kept \
            else links[0]

    def as_dict(self) -> dict[str, Any]:
        carriers = [c.as_dict() for c in self.carriers]
        write = self.write if self.recorded else None
        if write is not None and write.line and not (carriers and (
                carriers[0]["file"], carriers[0]["line"]) == (write.file, write.line)):
            carriers.insert(0, write_entry(write))  # the recorded write first
        return {"error": self.error, "carriers": carriers,
                "frontier": self.frontier, "pattern": self.pattern.key if self.pattern else "",
                "title": self.pattern.title if self.pattern else "",
                "fix": self.fix, "page": self.page,
                "hidden": list(self.hidden), "recorded": self.evidence}

    def carrier_lines(self) -> list[str]:
        """"Carried in by", then one line per carrier (none when no carrier was found)."""
        if not self.carriers:
            return []
        lines = ["Carried in by (most likely first):"]
        for carrier in self.carriers[:5]:
            guess = GUESS if not self.recorded and "assigned only before" in carrier.why else ""
            name, got = carrier.given()
            lines.append(f"  {name}  {place(got['file'], got['line'])} in "
                         f"{got['function']}: {carrier.said()}{guess}.")
        return lines

    def __str__(self) -> str:
        lines = written_lines(self.write, self.recorded is True) if self.inplace else [
            "autograd_lens: this backward reaches a graph that an earlier call already went "
            "through."]
        lines += recorded_lines(self)
        if self.recorded is False:
            lines.append(f"Not recorded: {self.why_not or 'the replay did not fail the same way'}"
                         "; what follows is read from the failure and the source, and what it "
                         "says about a write, a step or a loop is a guess.")
        if self.hidden:
            lines.append("It runs through a compiled region (" + ", ".join(self.hidden) + "): "
                         "autograd_lens cannot see inside a compiled region, so what follows "
                         "is a best guess.")
        named = self.inplace and self.write is not None and bool(self.write.name)
        none = [] if named else [  # the line above named the tensor written: no "no variable"
            "No variable of your program holds the old graph by name (it may sit inside a "
            "function's result or a closure)." if not self.inplace else
            "No variable of your program holds that graph by name."]
        lines += self.carrier_lines() or none
        if self.frontier:
            lines.append("Where the graphs meet: " + ", ".join(self.frontier[:5])
                         + (" ..." if len(self.frontier) > 5 else ""))
        lines += self.notes
        return "\n".join(lines + self.pattern_lines())

    def pattern_lines(self, every_page: bool = False) -> list[str]:
        """The likely pattern, its fix and its page (``every_page``: all its pages), or: no
        pattern, and the debugging page."""
        if self.pattern is None:
            return []
        pages = [self.page] + [p for p in self.pattern.links() if p != self.page]
        see = "See: " + (", ".join(pages) if every_page else self.page)
        if self.pattern.key == "unknown" and self.situation:
            return ["Likely pattern: none that the evidence shows for certain" +
                    ("" if self.carriers else " (no carrier named)") + "; the page on the "
                    "situation the graph shows, then the debugging page, say how to look.",
                    "See: " + ", ".join(pages)]
        if self.pattern.key == "unknown":
            return ["Likely pattern: none that the evidence shows (no carrier, no telling "
                    "graph); the debugging page says how to look.", see]
        guess = GUESS if self.pattern.key == "modified_in_place" and not self.recorded else ""
        return [f"Likely pattern: {self.pattern.title}{guess}.", f"Fix: {self.fix}.", see]


def written_lines(write: Write | None, recorded: bool = False) -> list[str]:
    """The in-place error said as what it is: the node, the tensor it saved, and the write
    (``recorded``: the write as the replay recorded it; else a guess from the source)."""
    lead = ("autograd_lens: this backward meets a saved tensor that was changed in place after "
            "a node saved it (its version counter moved).")
    if write is None:
        return [lead]
    saved, now = write.versions
    what = f"a weight, `{write.name}`" if write.weight and write.how == "op" and write.name \
        else f"a weight of `{write.name}`" if write.weight and write.name else \
        "a weight" if write.weight else f"`{write.name}`" if write.name else "a tensor"
    if write.shares and write.name and not write.weight:  # which view was saved is not known
        what += " or a view of the same storage (" + ", ".join(f"`{n}`" for n in write.shares) + ")"
    saver = f"{write.node} saved {what} (slot {write.slot})" if write.node else \
        f"A node saved {what}"
    lines = [lead, f"{saver} at version {saved}; it is at version {now} now."]
    if write.line:
        verb = "steps the optimizer that holds it" if write.how == "step" else \
            f"runs `{write.by}` (a {write.maker}), whose forward wrote it in place" \
            if write.module and write.by and write.maker else \
            "makes a module (or calls a function) with inplace=True, whose call wrote it in " \
            "place" if write.module else "writes it in place"
        label = "Changed by" if recorded else f"Changed by{GUESS}"
        lines.append(f"{label}: {write.text}  ({place(write.file, write.line)} in "
                     f"{write.function}), which {verb}.")
    return lines


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
