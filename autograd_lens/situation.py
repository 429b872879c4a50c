"""What went wrong when a backward failed: the carriers, the pattern, its fix and its page.

:func:`explain` is called at the moment of the failure (while the user's frames are still
alive) and returns a :class:`Finding`: printed after the traceback by ``python -m autograd_lens``,
written as JSON by ``--report``, and appended to the error by :class:`diagnose_on_error`.
"""

from __future__ import annotations

import ast
import os
import re
from dataclasses import dataclass, field
from typing import Any

import torch

from .carriers import Carrier, find_carriers
from .diagnose import diagnose
from .errors import is_inplace_error
from .graph import breadth_first, children, is_custom_function, node_name
from .history import Call, alive_roots, as_tensors, old_nodes, sequence
from .reads import source_tree
from .suspects import is_state_name
from .report import PATTERNS, Pattern


@dataclass
class Finding:
    """The diagnosis of one failed backward (see ``chapters/api.md`` for its JSON form)."""

    error: str
    carriers: list[Carrier]
    frontier: list[str]
    pattern: Pattern | None
    hidden: tuple[str, ...] = ()
    notes: list[str] = field(default_factory=list)

    @property
    def page(self) -> str:
        return self.pattern.links()[0] if self.pattern else ""

    def as_dict(self) -> dict[str, Any]:
        return {"error": self.error, "carriers": [c.as_dict() for c in self.carriers],
                "frontier": self.frontier, "pattern": self.pattern.key if self.pattern else "",
                "title": self.pattern.title if self.pattern else "",
                "fix": self.pattern.fix if self.pattern else "", "page": self.page,
                "hidden": list(self.hidden)}

    def carrier_lines(self) -> list[str]:
        """"Carried in by", then one line per carrier (none when no carrier was found)."""
        if not self.carriers:
            return []
        lines = ["Carried in by (most likely first):"]
        for carrier in self.carriers[:5]:
            lines.append(f"  {carrier.name}  {_where(carrier.file)}:{carrier.line} in "
                         f"{carrier.function}: {carrier.why}.")
        return lines

    def __str__(self) -> str:
        lines = ["autograd_lens: this backward reaches a graph that an earlier call already "
                 "went through."]
        if self.hidden:
            lines.append("It runs through a compiled region (" + ", ".join(self.hidden) + "): "
                         "autograd_lens cannot see inside a compiled region, so what follows "
                         "is a best guess.")
        lines += self.carrier_lines() or [
            "No variable of your program holds the old graph by name (it may sit inside a "
            "function's result or a closure)."]
        if self.frontier:
            lines.append("Where the graphs meet: " + ", ".join(self.frontier[:5])
                         + (" ..." if len(self.frontier) > 5 else ""))
        lines += self.notes
        if self.pattern is not None:
            lines.append(f"Likely pattern: {self.pattern.title}.")
            lines.append(f"Fix: {self.pattern.fix}.")
            lines.append(f"See: {self.page}")
        return "\n".join(lines)


def _where(filename: str) -> str:
    """A file's name without its folder; "cell" for a notebook cell."""
    if re.search(r"ipykernel_\d+|<ipython-input", filename):
        return "cell"
    return os.path.basename(filename)


def _frontier(order: list[Any], kids: dict[Any, list[Any]], old: set[Any],
              roots: list[Any]) -> list[Any]:
    """Old nodes entered from a new one (or old roots): where this step meets an old graph."""
    first = [r for r in roots if r in old]
    for node in order:
        if node not in old:
            first += [c for c in kids[node] if c in old and c not in first]
    return first


def _leaves(nodes: list[Any]) -> set[int]:
    return {id(n.variable) for n in nodes if hasattr(n, "variable")}


def _calls_checkpoint(frames: list[Any]) -> bool:
    """Whether the user's source calls ``checkpoint`` (a non-reentrant checkpoint leaves no trace
    on the nodes once its saved tensors are freed, so the source is read instead)."""
    for filename in {f.f_code.co_filename for f in frames}:
        tree = source_tree(filename)
        for node in ([] if tree is None else ast.walk(tree)):
            if isinstance(node, ast.Call):
                name = getattr(node.func, "attr", getattr(node.func, "id", ""))
                if name in ("checkpoint", "checkpoint_sequential"):
                    return True
    return False


def _pattern_key(carriers: list[Carrier], order: list[Any], kids: dict[Any, list[Any]],
                 old: set[Any], roots: list[Any], calls: list[Call], inplace: bool,
                 frames: list[Any], known: dict[int, Any]) -> str:
    frame = frames[0] if frames else None
    if any("Checkpoint" in node_name(n) for n in old):
        return "checkpoint"
    if any(is_custom_function(n) and not any(k in node_name(n) for k in ("Checkpoint", "Compiled"))
           for n in old):
        return "custom_function"
    latest = calls[0] if calls else None
    if inplace and (latest is None or latest.retained):
        return "modified_in_place"
    if any(r in old for r in roots):
        if _calls_checkpoint(frames):
            return "checkpoint"
        return "grad_then_backward" if latest is not None and latest.kind == "grad" \
            else "backward_twice"
    if latest is not None and latest.kind == "grad":
        return "meta_learning" if latest.on_parameters else "higher_order"
    same_step = latest is not None and frame is not None and latest.where[:2] == (
        frame.f_code.co_filename, frame.f_code.co_firstlineno) and latest.where[2] < frame.f_lineno
    new_leaves = _leaves([c for n in order if n not in old for c in kids[n]])
    if same_step:
        alive = alive_roots(latest, known)
        before = breadth_first(alive) if alive else list(old)
        if new_leaves & _leaves(before):
            return "gan_discriminator"
        return "two_networks" if carriers and carriers[0].kind == "old" else "shared_trunk"
    if carriers:
        top = carriers[0]
        if top.origin == "list":
            return "accumulated_loss" if top.update == "accumulate" else "growing_buffer"
        if top.origin == "attribute":
            # An RNN's state kept on the model (out, self.h = self.rnn(x, self.h)) is hidden state;
            # a running statistic or a memory updated with history is module state.
            recurrent = top.update != "accumulate" and is_state_name(top.name)
            return "hidden_state" if recurrent else "module_state"
        if top.kind == "carried" or top.update:  # read, then assigned again in the step
            return "accumulated_loss" if top.update == "accumulate" else "hidden_state"
        if top.outside_loop:
            return "outside_loop"
    old_leaves = _leaves([c for n in old for c in kids[n]])
    return "hidden_state" if new_leaves & old_leaves else "shared_trunk"


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
        return tuple(getattr(diagnose(roots), "hidden", ()))
    except Exception:  # noqa: BLE001 - the diagnosis must not add an error of its own
        return ()


def explain(error: BaseException, roots: Any, calls: list[Call], frames: list[Any],
            old: set[Any] | None = None) -> Finding:
    """The diagnosis of ``error``, raised by a backward (or ``autograd.grad``) from ``roots``.

    Args:
        error: the freed-graph or in-place error.
        roots: the tensors that backward started from.
        calls: earlier calls, oldest first (see :mod:`autograd_lens.history`).
        frames: the user's frames at the moment of failure, innermost first.
        old: the nodes of this graph that earlier calls went through, when known (from a
            prediction made before the call); else found from ``calls``.
    """
    tensors = [t for t in as_tensors(roots) if t.grad_fn is not None]
    root_nodes = [t.grad_fn for t in tensors]
    order = breadth_first(root_nodes)
    kids = {node: children(node) for node in order}
    inplace = is_inplace_error(error)
    known = _known(order, frames)
    if old is None:
        old, used = old_nodes(order, list(calls), inplace, known)
    else:
        old, used = old & set(order), list(reversed(calls))
    carriers = find_carriers(order, kids, old, frames, used, inplace)
    key = _pattern_key(carriers, order, kids, old, root_nodes, used, inplace, frames, known)
    frontier = [node_name(n) for n in _frontier(order, kids, old, root_nodes)]
    return Finding(str(error).split("\n")[0], carriers, frontier, PATTERNS.get(key),
                   _hidden(tensors) if tensors else ())

