"""A library's state object held by the program's variable: a transformers cache of past keys and
values carried from one segment into the next, a framework's state object.

The carrier search looks into such an object (see :func:`~autograd_lens.source.library_objects.
library_state`) and finds the tensors inside it (``past.layers[0].keys`` and the others). They
are named as the program's variable that holds the object, since that is the line a person can
change, with the tensors it holds said in the "why"; the pattern is then the state carried from
one batch into the next, as for a hidden state. The edit detaches every tensor of the object
where the variable enters the step, on the paths the search found (one loop over a list of
layers), and leaves a None alone (the first segment has no cache yet).
"""

from __future__ import annotations

import dataclasses
import re
from typing import Any

from ..source.edits import Plan
from ..source.source_file import Source
from ..source.library_objects import library_state
from .rules import Fix, one_fix

# (file, line, variable) -> the paths of the tensors found inside the object, for the edit.
_FOUND: dict[tuple[str, int, str], list[str]] = {}
_ENTRY = re.compile(r"^(?P<list>[\w.]+)\[(?P<index>\d+)\](?P<rest>(\.\w+)+)$")


def _root(path: str) -> str:
    return re.split(r"[.\[]", path, maxsplit=1)[0]


def inside_state(candidate: Any) -> bool:
    """Whether the candidate is a tensor found inside a library's state object (not a custom
    Function's ``ctx``, whose attributes the program's own Function set: ``ctx.shared``)."""
    import torch

    return candidate.owner is not None and library_state(candidate.owner) and \
        not isinstance(candidate.owner, torch.autograd.function.FunctionCtx) and \
        _root(candidate.path) != candidate.path


def held_by_variable(ranked: list[tuple]) -> list[tuple]:
    """``ranked`` (score, candidate, carrier) with the tensors inside one library state object
    named once, as the variable that holds it (at the best-ranked one's place)."""
    _FOUND.clear()
    result, groups = [], {}
    for score, found, carrier in ranked:
        if not inside_state(found):
            result.append((score, found, carrier))
            continue
        key = (found.frame_index, _root(found.path))
        if key in groups:
            groups[key].append(found.path)
            continue
        groups[key] = [found.path]
        result.append((score, found, carrier))
    named = []
    for score, found, carrier in result:
        key = (found.frame_index, _root(found.path))
        if not inside_state(found) or key not in groups:
            named.append((score, found, carrier))
            continue
        paths = groups[key]
        _FOUND[(carrier.file, carrier.line, key[1])] = paths
        more = f" and {len(paths) - 1} more" if len(paths) > 1 else ""
        kind = type(found.owner).__module__.split(".")[0]
        why = (f"{carrier.why}; it is a {kind} object whose tensors ({paths[0]}{more}) hold "
               "the old graph")
        named.append((score, found, dataclasses.replace(
            carrier, name=key[1], why=why, origin="variable", form="object")))
    return named


def _detach_lines(paths: list[str], indent: str) -> list[str] | None:
    """Lines that detach every tensor on ``paths``: a loop over a list of entries when each
    path is an entry's attribute (``past.layers[3].keys``), else one line each."""
    entries = [_ENTRY.match(p) for p in paths]
    if all(entries) and len({m["list"] for m in entries}) == 1:
        inner = indent + "    "
        body = [f"{inner}_entry{rest} = _entry{rest}.detach()"
                for rest in dict.fromkeys(m["rest"] for m in entries)]
        return [f"{indent}for _entry in {entries[0]['list']}:", *body]
    return [f"{indent}{p} = {p}.detach()" for p in paths]


def state_fix(carriers: list[Any]) -> list[Fix]:
    """The edit for the top carrier when it is a variable holding a library's state object:
    its tensors detached where it enters the step (not when it is None)."""
    if not carriers:
        return []
    top = carriers[0]
    paths = _FOUND.get((top.file, top.line, top.name))
    source = Source.read(top.file) if paths else None
    if source is None:
        return []
    indent = source.indent(top.line)
    guarded = source.may_be_none(top.name)
    lines = _detach_lines(paths, indent + ("    " if guarded else ""))
    if guarded:
        lines = [f"{indent}if {top.name} is not None:", *lines]
    plan = Plan(source).before(top.line, *lines)
    return one_fix("truncated backpropagation: each segment's backward stops at the state it "
                   "was handed, whose values still flow forward", plan)
