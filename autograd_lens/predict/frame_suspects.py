"""The tensors the program holds by name where :func:`~autograd_lens.diagnose` is called: its
suspects when it names none, so that the pattern is decided from a carrier as the command
decides it.

The command names the carriers of a failed backward from the user's frames: every tensor with
a graph under a name (:func:`~autograd_lens.source.candidates.find_candidates`), with how the
step's source brings it in (:func:`~autograd_lens.source.entry.entry_of`), and decides the
pattern from the first. :func:`diagnose` is called in those same frames, before the backward,
and reads the same: a name the step reads before assigning it before one it does not read,
and one it assigns first last; an old tensor (its own node stale) before one carried in
(computed in this step from an old graph). They only decide the pattern; the report's
suspects stay the ones the user named.
"""

from __future__ import annotations

import sys
from typing import Any, NamedTuple

import torch

from ..source.candidates import find_candidates
from ..source.user_frames import users_from
from ..source.entry import Entry, Step, entry_of

Frame = Any

# Where a candidate lives, as a suspect's origin (see :mod:`autograd_lens.predict.suspects`).
_ORIGIN = {"attribute": "module", "list": "list", "variable": "plain"}
# How the source brings a name in, most telling first (as the command ranks its carriers).
_HOW = {"read_first": 0, "kept": 0, "unread": 1, "assigned_first": 2}


class Named(NamedTuple):
    """A tensor the program holds by name: as a suspect item, with its holder and its entry."""

    item: tuple[str, torch.Tensor, str]
    owner: Any
    entry: Entry


def caller_frames() -> list[Frame]:
    """The program's frames, innermost first, from the caller of this package outwards."""
    return users_from(sys._getframe(1))


def named_tensors(frames: list[Frame], is_stale: Any) -> list[Named]:
    """Every tensor with a graph under a name of ``frames``, most likely carrier first: by how
    the step brings it in, then old (``is_stale(node)``: its own node is stale) before
    carried, then innermost frame first."""
    steps = [Step(frame, None, index == 0) for index, frame in enumerate(frames)]
    found, seen = [], set()
    for candidate in find_candidates(frames, [step.read for step in steps]):
        if candidate.code is not None or id(candidate.tensor) in seen:
            continue  # a closure's variable: only the command names it (from the source)
        seen.add(id(candidate.tensor))
        old = is_stale(candidate.tensor.grad_fn)
        entry = entry_of(candidate, steps, old)
        item = (candidate.path, candidate.tensor, _ORIGIN.get(candidate.origin, "plain"))
        found.append(((_HOW[entry.how], not old, len(found)), Named(item, candidate.owner, entry)))
    return [named for _, named in sorted(found, key=lambda pair: pair[0])]
