"""How the source brings a candidate tensor into the step that failed.

For each :class:`~autograd_lens.candidates.Candidate`, :func:`entry_of` reads the step's source
(see :mod:`autograd_lens.reads`) and says how its name enters:

* ``"read_first"``: the step reads it before assigning it, so the value that comes in was made
  before this step (``out, h = rnn(x, h)``; ``g_loss = bce(D(fake), ...)`` after ``d_loss.backward()``);
* ``"kept"``: an attribute that a method reads before assigning it (``self.center`` in ``forward``);
* ``"assigned_first"``: the step assigns it before reading it: made in this step;
* ``"unread"``: the step's source neither reads nor assigns it.
"""

from __future__ import annotations

import inspect
from dataclasses import dataclass
from typing import Any

from .candidates import Candidate
from .history import Call
from .reads import (Use, first_read, function_at, overlaps, reads_of_attribute, source_tree,
                    step_uses, uses_of)


@dataclass(frozen=True)
class Entry:
    """Where and how a candidate enters the step: ``how`` (see the module's docstring), the name
    and place to show, how the step assigns it (``update``), whether it is assigned only before
    the loop (``outside_loop``), and whether it is an argument of its function."""

    how: str
    name: str
    file: str
    line: int
    function: str
    update: str = ""
    outside_loop: bool = False
    argument: bool = False


class Step:
    """The source of one frame's step: its uses from the start of the step to the failing line."""

    def __init__(self, frame: Any, latest: Call | None, innermost: bool) -> None:
        self.frame = frame
        code = frame.f_code
        tree = source_tree(code.co_filename)
        scope = None if tree is None else function_at(tree, code.co_firstlineno, code.co_name)
        previous = None
        if innermost and latest is not None and latest.where[:2] == (
                code.co_filename, code.co_firstlineno):
            previous = latest.where[2]
        self.uses: list[Use] = [] if scope is None else step_uses(scope, frame.f_lineno, previous)
        self.read = {u.path.split(".")[0].split("[")[0] for u in self.uses if not u.store}
        count = code.co_argcount + code.co_kwonlyargcount
        self.parameters = set() if code.co_name == "<module>" else set(code.co_varnames[:count])


def _update(uses: list[Use], path: str) -> str:
    """How the step assigns ``path``: "accumulate" (``total = total + x``), "assign" or ""."""
    stores = [u for u in uses if u.store and u.path == path]
    if not stores:
        return ""
    return "accumulate" if any(u.adds for u in stores) else "assign"


def _read_in_methods(candidate: Candidate, files: list[str]) -> tuple[str, str, int, str] | None:
    """For an attribute (``model.center``), a function that reads it before assigning it:
    (name as written there, file, line, function)."""
    parts = candidate.path.split(".", 1)
    if len(parts) < 2:
        return None
    attr = parts[1].split(".")[-1].split("[")[0]
    suffix = candidate.path[candidate.path.rindex(attr) + len(attr):]
    if candidate.owner is not None:
        try:
            files = [inspect.getsourcefile(type(candidate.owner)) or ""] + files
        except TypeError:
            pass
    for filename in dict.fromkeys(f for f in files if f):
        tree = source_tree(filename)
        for function, use, before in ([] if tree is None else reads_of_attribute(tree, attr)):
            if before:
                return use.path + suffix, filename, use.line, function
    return None


def _in_closure(candidate: Candidate) -> Entry:
    code = candidate.code
    tree = source_tree(code.co_filename)
    scope = None if tree is None else function_at(tree, code.co_firstlineno, code.co_name)
    use, before = first_read([] if scope is None else uses_of(scope), candidate.path)
    line = use.line if use is not None else code.co_firstlineno
    return Entry("read_first" if before else "unread", candidate.path, code.co_filename, line,
                 code.co_name)


def entry_of(candidate: Candidate, steps: list[Step]) -> Entry:
    """How ``candidate`` enters the step (``steps``: one per frame, innermost first)."""
    if candidate.code is not None:
        return _in_closure(candidate)
    step = steps[candidate.frame_index]
    code, path, uses = step.frame.f_code, candidate.path, step.uses
    root = path.split(".")[0].split("[")[0]
    argument = root in step.parameters and root != "self"
    use, before = first_read(uses, path)
    deeper = use is not None and "." in path[len(use.path):]
    assigned = any(u.store and overlaps(u.path, path) for u in uses)
    outside = not any(u.store and overlaps(u.path, root) for u in uses)
    update = _update(uses, path)
    if before and not deeper:
        return Entry("read_first", path, code.co_filename, use.line, code.co_name, update,
                     outside, argument)
    if "." in path:
        other = _read_in_methods(candidate, [f.frame.f_code.co_filename for f in steps])
        if other is not None:
            return Entry("kept", other[0], other[1], other[2], other[3], update, False, argument)
    if before:  # read through an object the step reads (``agent`` handed to a loss function)
        return Entry("read_first", path, code.co_filename, use.line, code.co_name, update,
                     outside, argument)
    if assigned:
        line = next(u.line for u in uses if u.store and overlaps(u.path, path))
        return Entry("assigned_first", path, code.co_filename, line, code.co_name, update,
                     False, argument)
    return Entry("unread", path, code.co_filename, step.frame.f_lineno, code.co_name, update,
                 False, argument)
