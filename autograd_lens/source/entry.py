"""How the source brings a candidate tensor into the step that failed (or, for
:func:`~autograd_lens.diagnose`, the step about to call backward).

For each :class:`~autograd_lens.source.candidates.Candidate`, :func:`entry_of` reads the step's source
(see :mod:`autograd_lens.source.reads`) and says how its name enters:

* ``"read_first"``: the step reads it before assigning it, so the value that comes in was made
  before this step (``out, h = rnn(x, h)``; ``g_loss = bce(D(fake), ...)`` after ``d_loss.backward()``);
* ``"kept"``: an attribute that a method reads before assigning it (``self.center`` in ``forward``);
* ``"assigned_first"``: the step assigns it before reading it: made in this step;
* ``"unread"``: the step's source neither reads nor assigns it.
"""

from __future__ import annotations

import ast
import collections
import inspect
import re
from dataclasses import dataclass
from typing import Any

import torch

from .candidates import NOT_USERS, Candidate
from ..lens.history import Call
from .library_objects import library_class
from .reads import (Use, first_read, function_at, innermost_loop, reads_of_attribute,
                    source_tree, step_uses, uses_of)
from .paths import overlaps


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
        # The step starts after the newest earlier call when this frame's function made it:
        # the innermost one, or a caller that ran a backward and then called the function
        # that failed (a loss function handed the features the first backward went through).
        if latest is not None and latest.where[:2] == (code.co_filename, code.co_firstlineno) \
                and (innermost or latest.where[2] < frame.f_lineno):
            previous = latest.where[2]
        self.uses: list[Use] = [] if scope is None else step_uses(scope, frame.f_lineno, previous)
        loop = None if scope is None else innermost_loop(scope, frame.f_lineno)
        # Every path the loop's body assigns (after the failing line too): not "outside".
        self.assigned = {u.path for u in uses_of(loop) if u.store} if loop is not None else None
        self.read = {u.path.split(".")[0].split("[")[0] for u in self.uses if not u.store}
        count = code.co_argcount + code.co_kwonlyargcount
        self.parameters = set() if code.co_name == "<module>" else set(code.co_varnames[:count])


def _update(uses: list[Use], path: str) -> str:
    """How the step assigns ``path``: "accumulate" (``total = total + x``), "assign" or ""."""
    stores = [u for u in uses if u.store and u.path == path]
    if not stores:
        return ""
    return "accumulate" if any(u.adds for u in stores) else "assign"


def _read_in_methods(candidate: Candidate, files: list[str],
                     old: bool) -> tuple[str, str, int, str] | None:
    """For an attribute (``model.center``), a function of the user's files that reads it
    before assigning it (or, for an old tensor, reads it at all): (name as written there,
    file, line, function)."""
    parts = candidate.path.split(".")
    if len(parts) < 2:
        return None
    if candidate.owner is not None:
        try:
            files = [inspect.getsourcefile(type(candidate.owner)) or ""] + files
        except TypeError:
            pass
    owned = _methods(candidate.owner)
    for depth in range(len(parts) - 1, 0, -1):  # self.prior.scale, then self.prior
        attr = parts[depth].split("[")[0]
        # The tensor attribute, never its module: reached through ``self.recurrent``, the name
        # keeps the rest of the path (``self.recurrent.h``).
        suffix = parts[depth][len(attr):] + "".join("." + p for p in parts[depth + 1:])
        # The owner's own methods first (another class of the file may keep an attribute of
        # the same name), then any function of the user's files.
        found = (_reading(attr, suffix, files, old, owned) if depth == len(parts) - 1 and owned
                 else None) or _reading(attr, suffix, files, old)
        if found is not None:
            return found
    return None


def _methods(owner: Any) -> set[tuple[str, int]]:
    """(file, first line) of each method of the owner's class and its bases."""
    found = set()
    for cls in type(owner).__mro__ if owner is not None else ():
        for value in vars(cls).values():
            code = getattr(value, "__code__", None)
            if code is not None:
                found.add((code.co_filename, code.co_firstlineno))
    return found


def _reading(attr: str, suffix: str, files: list[str], old: bool,
             owned: set[tuple[str, int]] | None = None) -> tuple[str, str, int, str] | None:
    found = None
    for filename in dict.fromkeys(f for f in files if f and not f.startswith(NOT_USERS)):
        tree = source_tree(filename)
        for function, use, before, first in ([] if tree is None else
                                             reads_of_attribute(tree, attr)):
            if owned is not None and (filename, first) not in owned:
                continue
            if before:
                return use.path + suffix, filename, use.line, function
            if old and found is None:
                found = use.path + suffix, filename, use.line, function
    return found


def _read_in_functions(name: str, filename: str,
                       running: frozenset[int] = frozenset()) -> tuple[str, int, str] | None:
    """A function of ``filename`` that reads the global ``name`` before assigning it:
    (file, line, function); ``running``: the first lines of the step's running functions."""
    from .bound_names import binds

    tree = source_tree(filename)
    for node in ([] if tree is None else ast.walk(tree)):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and \
                (min([node.lineno, *(d.lineno for d in node.decorator_list)]) in running or
                 not binds(node, name)):
            # (a function's argument or local of that name is not the global, unless the
            # function runs in the step, handed the value)
            use, before = first_read(uses_of(node), name)
            if before:
                return filename, use.line, node.name
    return None


def _in_closure(candidate: Candidate) -> Entry:
    code = candidate.code
    tree = source_tree(code.co_filename)
    scope = None if tree is None else function_at(tree, code.co_firstlineno, code.co_name)
    use, before = first_read([] if scope is None else uses_of(scope), candidate.path)
    line = use.line if use is not None else code.co_firstlineno
    return Entry("read_first" if before else "unread", candidate.path, code.co_filename, line,
                 code.co_name)


def _made_again(uses: list[Use], path: str, read: Use) -> bool:
    """Whether the value ``path`` holds now was assigned in the step after ``read``, from
    values that do not come from the one read (``output = netD(fake)`` after
    ``print(output)``), unlike ``out, h = rnn(x, h)`` or ``first = cell(x, state[0])`` then
    ``state = (first, ...)``, whose new value is made from the one read (directly, or through
    names assigned from it on the way)."""
    last = uses[-1].line if uses else 0  # an assignment under an ``if`` that ended may not run
    later = [u for u in uses if u.store and u.path == path and u.line >= read.line
             and not (u.branch_end and u.branch_end < last)]
    if not later:
        return False
    made_from = {path}  # the paths whose values come from the one read, line by line
    for line in sorted({u.line for u in uses if read.line <= u.line <= later[-1].line}):
        here = [u for u in uses if u.line == line]
        if any(not u.store and any(overlaps(u.path, p) for p in made_from) for u in here):
            if line == later[-1].line:
                return False
            made_from |= {u.path for u in here if u.store}
        elif line == later[-1].line:
            return True
    return True


def _written_into(uses: list[Use], path: str) -> list[Use]:
    """The uses, with each write into part of the tensor ``path`` holds (``x[i] = v``, ``x``
    named) taken as the read it is: the write extends that tensor's history, it binds no new
    value to the name."""
    return [u._replace(store=False, part=False) if u.store and u.part and u.path == path else u
            for u in uses]


def _read_by_library(candidate: Candidate) -> bool:
    """Whether the candidate is an attribute of a library's module (a parametrized
    ``lin.weight``): the library's own methods read it when the step calls the module, so it
    enters where the step reads the module, never in a function of the program's that reads an
    attribute of the same name."""
    owner = candidate.owner
    return isinstance(owner, torch.nn.Module) and library_class(owner.__class__)


def _as_read_from_end(candidate: Candidate, uses: list[Use]) -> str:
    """An entry of a list or deque that the step never reads by its own index, while it reads
    the sequence from its end before assigning there (``h = cell(x, states[-1])``, then
    ``states.append(h)``): named as the step reads it, ``states[-1]``. The entries move as the
    step appends, so the index an entry has at the failure is not the one it was read by."""
    path = candidate.path
    found = re.fullmatch(r"(.+)\[(\d+)\]", path)
    if candidate.origin != "list" or found is None or first_read(uses, path)[1] or \
            not isinstance(candidate.container, (list, collections.deque)):
        return path
    ends = [u.path for u in uses if not u.store and not u.mutator and
            re.fullmatch(re.escape(found.group(1)) + r"\[-\d+\]", u.path)]
    return next((end for end in ends if first_read(uses, end)[1]), path)


def entry_of(candidate: Candidate, steps: list[Step], old: bool = False) -> Entry:
    """How ``candidate`` enters the step (``steps``: one per frame, innermost first; ``old``:
    its tensor belongs to an old graph)."""
    if candidate.code is not None:
        return _in_closure(candidate)
    step = steps[candidate.frame_index]
    code, uses = step.frame.f_code, step.uses
    path = _as_read_from_end(candidate, uses)
    if candidate.form == "tensor" and candidate.origin != "list":
        uses = _written_into(uses, path)
    root = path.split(".")[0].split("[")[0]
    # An entry picked out here from a sequence handed in is this step's own read, not the
    # caller's: the caller's name for the sequence does not say which entry comes in.
    argument = root in step.parameters and root != "self" and path == candidate.path
    use, before = first_read(uses, path)
    if use is None and "." in path:  # a method of the object is called: ``prior.log_prob(a)``
        use, before = first_read(uses, root)
    if before and _made_again(uses, path, use):
        before = False
    deeper = use is not None and "." in path[len(use.path):]
    assigned = any(u.store and overlaps(u.path, path) for u in uses)
    # Invariant across iterations: read in a loop that never assigns it, or, in a function,
    # a global or closure variable the function only reads (a closure LBFGS calls again).
    unassigned = not any(u.store and overlaps(u.path, root) for u in uses)
    if step.assigned is not None:
        outside = unassigned and not any(overlaps(p, root) for p in step.assigned)
    else:
        outside = unassigned and code.co_name != "<module>" and root not in code.co_varnames
    update = _update(uses, path)
    held, _ = first_read(uses, root) if "." in path else (None, None)
    if before and held is not None and use is not None and held.line < use.line:
        # The object was used before the attribute is read (``attn(x)``, then
        # ``attn.cache_k``): its own method may bring the attribute in, as the step's graph is
        # built, before this later read. A library's module reads it in its own methods,
        # when the step calls the module.
        if _read_by_library(candidate):
            return Entry("read_first", path, code.co_filename, held.line, code.co_name, update,
                         outside, argument)
        other = _read_in_methods(candidate, [f.frame.f_code.co_filename for f in steps], old)
        if other is not None:
            return Entry("kept", other[0], other[1], other[2], other[3], update, outside,
                         False)  # named by the method's own read, not the argument
    if before and (not deeper or _read_by_library(candidate)):
        return Entry("read_first", path, code.co_filename, use.line, code.co_name, update,
                     outside, argument)
    if "." in path:
        other = _read_in_methods(candidate, [f.frame.f_code.co_filename for f in steps], old)
        if other is not None:
            return Entry("kept", other[0], other[1], other[2], other[3], update, outside,
                         False)  # named by the method's own read, not the argument
    if before:  # read through an object the step reads (``agent`` handed to a loss function)
        return Entry("read_first", path, code.co_filename, use.line, code.co_name, update,
                     outside, argument)
    if assigned:
        stores = [u for u in uses if u.store and overlaps(u.path, path)]
        store = stores[-1] if before is False and use is not None else stores[0]
        if store.alias and store.path == path:  # ``value = value_next``: the value came in
            source, came_in = first_read(uses[:uses.index(store)], store.alias)
            if came_in:
                return Entry("read_first", store.alias, code.co_filename, store.line,
                             code.co_name, update, False, argument)
        later = next((u.line for u in uses[uses.index(store):]
                      if not u.store and not u.mutator and overlaps(u.path, path)), store.line)
        return Entry("assigned_first", path, code.co_filename, later if old else store.line,
                     code.co_name, update, False, argument)
    running = frozenset(f.frame.f_code.co_firstlineno for f in steps
                        if f.frame.f_code.co_filename == code.co_filename)
    elsewhere = _read_in_functions(path, code.co_filename, running) if path == root else None
    if elsewhere is not None:  # a global that a function of the step reads
        return Entry("read_first", path, *elsewhere, update, True, False)
    return Entry("unread", path, code.co_filename, step.frame.f_lineno, code.co_name, update,
                 outside, argument)
