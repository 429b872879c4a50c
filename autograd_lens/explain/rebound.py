"""A carrier bound again before backward: the old tensor found by the graph.

A framework calls backward after the program's own function returned: a ``Trainer``'s
``compute_loss`` adds a term against logits kept on ``self`` at the previous step, then keeps
this step's logits there, and the Trainer runs backward afterwards. By then ``self.prev_logits``
holds this step's tensor, and no name holds the old one: the carrier search over names finds
nothing. The graph still shows it. Where the graphs meet sits a node of the old step; an
attribute of the program's object that holds this step's node of the same kind, at the same
place (the same operation on inputs of the same kinds), and that the class's source reads and
then assigns again in one function, is the attribute that held the old tensor when it was read.
It is named at that read, and the "why" says so plainly.
"""

from __future__ import annotations

import ast
import inspect
import sys
import textwrap
from typing import Any

import torch

from ..source.candidates import Candidate
from ..lens.graph import node_name
from ..source.library_objects import LIBRARIES, library_class

_SCORE = 10.0  # an old tensor read first: as the carrier search scores it


def _objects(outer: Any) -> list[Any]:
    """The program's own objects (of its classes) that are ``self`` of the frames inside
    ``outer`` (the library's frames, as a Trainer's training step) or held by ``outer``."""
    found, frame = {}, sys._getframe()
    while frame is not None:
        values = [frame.f_locals.get("self")] if frame is not outer else list(
            frame.f_locals.values())
        for value in values:
            if value is not None and hasattr(value, "__dict__") and \
                    not isinstance(value, type) and not library_class(type(value)):
                found.setdefault(id(value), value)
        if frame is outer:
            break
        frame = frame.f_back
    return list(found.values())


def _shape(node: Any) -> tuple:
    return type(node), tuple(type(n).__name__ if n is not None else None
                             for n, _ in node.next_functions)


def _twin(node: Any, view: Any) -> Any:
    """The old node where the graphs meet that ``node`` (of this backward's graph, new) stands
    for: the same operation on inputs of the same kinds. None if there is none."""
    if node is None or node in view.old or node not in view.known:
        return None
    return next((old for old in view.frontier if _shape(old) == _shape(node)), None)


def _read_then_bound(kind: type, name: str) -> tuple[str, str, int, int] | None:
    """Where a method of ``kind`` reads ``self.<name>`` and later in it assigns it again:
    (file, function, line of the read, line of the assignment)."""
    try:
        file = inspect.getsourcefile(kind)
        lines, start = inspect.getsourcelines(kind)
    except (OSError, TypeError):
        return None
    if file is None or file.startswith(LIBRARIES):
        return None
    tree = ast.parse(textwrap.dedent("".join(lines)))
    for function in ast.walk(tree):
        if not isinstance(function, (ast.FunctionDef, ast.AsyncFunctionDef)):
            continue
        reads, stores = [], []
        for node in ast.walk(function):
            if isinstance(node, ast.Attribute) and node.attr == name and \
                    isinstance(node.value, ast.Name) and node.value.id == "self":
                (stores if isinstance(node.ctx, ast.Store) else reads).append(node.lineno)
        if reads and stores and min(reads) < max(stores):
            bound = min(s for s in stores if s > min(reads))
            read = max(r for r in reads if r < bound)  # the last read: where it is used
            return file, function.name, read + start - 1, bound + start - 1
    return None


def rebound_carriers(view: Any, frames: list[Any], make: Any) -> list[tuple]:
    """(score, candidate, carrier) for each attribute of the program's objects that held the
    old tensor where the graphs meet and was bound again before this backward, named where it
    was read; ``make``: the class of the carriers."""
    if not view.frontier or not frames:
        return []
    ranked = []
    for owner in _objects(frames[0]):
        for name, value in list(vars(owner).items()):
            if not isinstance(value, torch.Tensor):
                continue
            old = _twin(value.grad_fn, view)
            place = _read_then_bound(type(owner), name) if old is not None else None
            if place is None:
                continue
            file, function, read, bound = place
            why = (f"held the previous step's tensor (the {node_name(old)} where the graphs "
                   f"meet) when it was read here; line {bound} bound it again, to this step's "
                   "tensor, before the backward ran, so no name holds the old one now: it was "
                   "found by the graph")
            found = Candidate(0, f"self.{name}", value, "attribute", owner, "tensor")
            ranked.append((_SCORE, found, make(f"self.{name}", file, read, function, why, "old",
                                               "attribute", "assign", False, "tensor",
                                               "read_first")))
    return ranked
