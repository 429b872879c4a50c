"""Finding the user's variables that carry a stale graph into the backward that just failed.

Given this backward's graph and the part of it that earlier calls already went through (the
**old** nodes), a *carrier* is a variable of the user's program that brings old nodes in:

* its tensor is itself old (``fake`` after the discriminator's backward, ``features`` computed
  once before the loop, the loss of a second ``backward()``); or
* its tensor is new but its graph reaches old nodes, and the source *reads it before assigning
  it* in this step (``out, h = rnn(x, h)``; ``total = total + loss``; ``self.center`` in
  ``forward``): the value that came in was last step's.

Tensors are looked for where real code keeps them: the locals of the failing frame and of its
callers, the globals they read, attributes of modules and other objects, lists, tuples, dicts.
"""

from __future__ import annotations

import dataclasses
import inspect
import os
import types
from dataclasses import dataclass
from typing import Any, Iterator

import torch

from .graph import breadth_first
from .history import Call
from .reads import (first_read, function_at, item_path, overlaps, reads_of_attribute,
                    source_tree, step_uses)

_ITEMS_LIMIT = 2000   # entries of one container looked at
_OBJECTS_LIMIT = 20000  # objects looked at in all
_DEPTH = 4


@dataclass(frozen=True)
class Carrier:
    """A variable that brings an old graph into this backward.

    Attributes:
        name: as written in the source: ``h``, ``self.h``, ``outputs["loss"]``, ``buffer[3]``.
        file: the file where it enters this step's computation.
        line: the line there (the line to change).
        function: the function holding that line (``<module>`` for a script's top level).
        why: one sentence.
        kind: ``"old"`` (the tensor itself belongs to an old graph) or ``"carried"`` (read before
            it is assigned, its graph reaches an old one).
        origin: ``"variable"``, ``"attribute"`` (of a module or object) or ``"list"`` (an entry
            of a list or dict).
        update: how the source assigns it in the step: ``"accumulate"`` (``total = total + x``,
            ``+=``), ``"assign"``, or ``""`` (not assigned there).
        outside_loop: True when it is read in a loop but assigned only before the loop.
        form: the value under ``name`` at the failure: ``"tensor"``, ``"tuple"`` (an LSTM's
            ``(h, c)``), ``"nested tuple"`` (tuples in a tuple), ``"list"``, ``"dict"`` or
            ``"object"``.
    """

    name: str
    file: str
    line: int
    function: str
    why: str
    kind: str
    origin: str = "variable"
    update: str = ""
    outside_loop: bool = False
    form: str = "tensor"

    def as_dict(self) -> dict[str, Any]:
        return {"name": self.name, "file": self.file, "line": self.line,
                "function": self.function, "why": self.why}


class _Found:
    """A tensor found under a name in a frame."""

    def __init__(self, frame_index: int, path: str, tensor: torch.Tensor, origin: str,
                 owner: Any, form: str = "tensor") -> None:
        self.frame_index, self.path, self.tensor = frame_index, path, tensor
        self.origin, self.owner, self.form = origin, owner, form


def _explorable(value: Any) -> bool:
    if isinstance(value, (types.ModuleType, type, types.FunctionType, types.BuiltinFunctionType,
                          types.MethodType, str, bytes, int, float, bool, type(None))):
        return False
    if isinstance(value, torch.nn.Module):
        return True
    module = type(value).__module__ or ""
    # The script's own classes live in "__main__": look into them; skip library and private modules.
    library = module != "__main__" and module.startswith(("torch", "numpy", "builtins", "_"))
    return not library and hasattr(value, "__dict__")


def _walk_value(frame_index: int, path: str, value: Any, seen: set[int], depth: int,
                origin: str, owner: Any, form: str = "tensor") -> Iterator[_Found]:
    if len(seen) > _OBJECTS_LIMIT or id(value) in seen:
        return
    seen.add(id(value))
    if isinstance(value, torch.Tensor):
        if value.grad_fn is not None:
            yield _Found(frame_index, path, value, origin, owner, form)
        return
    if depth >= _DEPTH:
        return
    if isinstance(value, tuple):  # an LSTM's (h, c) is named as a whole
        nested = form == "nested tuple" or any(isinstance(item, tuple) for item in value)
        for item in value[:_ITEMS_LIMIT]:
            yield from _walk_value(frame_index, path, item, seen, depth + 1, origin, owner,
                                   "nested tuple" if nested else "tuple")
    elif isinstance(value, list):
        for i, item in enumerate(value[:_ITEMS_LIMIT]):
            yield from _walk_value(frame_index, item_path(path, i), item, seen, depth + 1,
                                   "list", owner)
    elif isinstance(value, dict):
        for key, item in list(value.items())[:_ITEMS_LIMIT]:
            if isinstance(key, (str, int)):
                yield from _walk_value(frame_index, item_path(path, key), item, seen,
                                       depth + 1, "list", owner)
    elif _explorable(value):
        attrs = dict(vars(value))
        if isinstance(value, torch.nn.Module):
            attrs.update(value._buffers)
            attrs.update(value._modules)
        for name, item in attrs.items():
            if not name.startswith("_"):
                yield from _walk_value(frame_index, f"{path}.{name}", item, seen, depth + 1,
                                       "attribute", value)


def _found_in(frames: list[Any], steps: list[list]) -> Iterator[_Found]:
    """Tensors with a graph under the names of each frame, innermost frame first."""
    seen: set[int] = set()
    for index, frame in enumerate(frames):
        names = dict(frame.f_locals)
        if frame.f_code.co_name != "<module>":
            read = {u.path.split(".")[0].split("[")[0] for u in steps[index]}
            names.update({k: v for k, v in frame.f_globals.items() if k in read and k not in names})
        for name, value in names.items():
            if not name.startswith("__"):
                yield from _walk_value(index, name, value, seen, 0, "variable", None)


def _reaching(order: list[Any], kids: dict[Any, list[Any]], old: set[Any]) -> set[Any]:
    """Nodes of this graph from which an old node can be reached (the old ones included)."""
    parents: dict[Any, list[Any]] = {}
    for node in order:
        for child in kids.get(node, ()):
            parents.setdefault(child, []).append(node)
    return set(breadth_first(old, follow=lambda node: parents.get(node, ())))


class _Reach:
    """Whether a node's graph reaches an old node: known for this backward's graph, walked (and
    remembered) for a node outside it, such as a new hidden state that the loss does not use."""

    def __init__(self, order: list[Any], reaching: set[Any], budget: int = 50000) -> None:
        self.known = {node: node in reaching for node in order}
        self.budget = budget

    def __call__(self, start: Any) -> bool:
        if start in self.known:
            return self.known[start]

        def stop(node: Any) -> bool:  # below a node of this graph the answer is known
            self.budget -= 1
            return node in self.known or self.budget <= 0

        reached = breadth_first([start], stop=stop)
        hit = any(self.known.get(node, False) for node in reached)
        for node in reached:
            self.known.setdefault(node, hit)
        return hit


def _parameters(frame: Any) -> set[str]:
    code = frame.f_code
    if code.co_name == "<module>":
        return set()
    count = code.co_argcount + code.co_kwonlyargcount
    return set(code.co_varnames[:count]) - {"self"}


def _update(uses: list, path: str) -> str:
    """How the step assigns ``path``: "accumulate" (``total = total + x``), "assign" or ""."""
    stores = [u for u in uses if u.store and u.path == path]
    if not stores:
        return ""
    return "accumulate" if any(u.adds for u in stores) else "assign"


def _where(call: Call | None) -> str:
    if call is None:
        return "an earlier backward"
    what = "autograd.grad" if call.kind == "grad" else "backward"
    return f"the {what} at {os.path.basename(call.where[0])}:{call.where[2]}"


def _elsewhere(found: _Found, frames: list[Any]) -> tuple[str, str, int, str, bool] | None:
    """For an attribute (``model.center``), the method or function that reads it: (name,
    file, line, function, read before assigned there)."""
    attr_part = found.path.split(".", 1)[1] if "." in found.path else ""
    if not attr_part:
        return None
    attr = attr_part.split(".")[-1].split("[")[0]
    suffix = found.path[found.path.rindex(attr) + len(attr):]
    files = [f.f_code.co_filename for f in frames]
    if found.owner is not None:
        try:
            files.insert(0, inspect.getsourcefile(type(found.owner)) or "")
        except TypeError:
            pass
    best = None
    for filename in dict.fromkeys(files):
        tree = source_tree(filename) if filename else None
        for function, use, before in ([] if tree is None else reads_of_attribute(tree, attr)):
            candidate = (use.path + suffix, filename, use.line, function, before)
            if best is None or (before and not best[4]):
                best = candidate
    return best


def find_carriers(order: list[Any], kids: dict[Any, list[Any]], old: set[Any],
                  frames: list[Any], calls: list[Call], inplace: bool = False) -> list[Carrier]:
    """The carriers, most likely first (see the module's docstring).

    Args:
        order, kids: this backward's graph (from :func:`~autograd_lens.graph.breadth_first`).
        old: its nodes that earlier calls already went through.
        frames: the user's frames at the moment of failure, innermost first.
        calls: the earlier calls that explain ``old``, newest first.
        inplace: the error is the in-place one (saved tensors modified since saved).
    """
    if not old or not frames:
        return []
    reaches = _Reach(order, _reaching(order, kids, old))
    latest = calls[0] if calls else None
    steps = []
    for index, frame in enumerate(frames):
        tree = source_tree(frame.f_code.co_filename)
        scope = None if tree is None else function_at(tree, frame.f_code.co_firstlineno,
                                                       frame.f_code.co_name)
        previous = None
        if index == 0 and latest is not None and latest.where[:2] == (
                frame.f_code.co_filename, frame.f_code.co_firstlineno):
            previous = latest.where[2]
        steps.append([] if scope is None else step_uses(scope, frame.f_lineno, previous))
    earlier = _where(latest)
    since = " (its saved tensors were modified in place since)" if inplace else ""
    ranked: list[tuple[tuple[int, int, int], Carrier]] = []
    for count, found in enumerate(_found_in(frames, steps)):
        node = found.tensor.grad_fn
        if not reaches(node):
            continue
        is_old = node in old
        frame, uses = frames[found.frame_index], steps[found.frame_index]
        use, before = first_read(uses, found.path)
        deeper = use is not None and "." in found.path[len(use.path):]
        where = (frame.f_code.co_filename, found.path, use.line if use else 0, frame.f_code.co_name)
        if use is None or deeper or not (is_old or before):
            other = _elsewhere(found, frames) if "." in found.path else None
            if other is not None and (is_old or other[4]):
                where = other[1], other[0], other[2], other[3]
            elif use is None or not (is_old or (before and not deeper)):
                continue
        if not is_old and found.path in _parameters(frame):
            continue  # a value handed in by the caller: the caller's frame names it
        root = found.path.split(".")[0].split("[")[0]
        outside = is_old and not any(u.store and overlaps(u.path, root) for u in uses)
        if is_old:
            why = (f"holds a graph that {earlier} already went through{since}; "
                   f"it enters this step's computation here")
        else:
            why = (f"is read here before it is assigned, so it brings in a graph that "
                   f"{earlier} already went through{since}")
        carrier = Carrier(where[1], where[0], where[2], where[3], why,
                          "old" if is_old else "carried", found.origin,
                          _update(uses, found.path), outside, found.form)
        rank = (0 if is_old and use is not None else 1 if not is_old else 2, found.frame_index,
                count)
        ranked.append((rank, carrier))
    return _collapse([c for _, c in sorted(ranked, key=lambda item: item[0])])


def _collapse(carriers: list[Carrier]) -> list[Carrier]:
    """One carrier per line and container: ``buffer[0]`` stands for ``buffer[0..9]``."""
    groups: dict[tuple[str, str, int], list[Carrier]] = {}
    for carrier in carriers:
        groups.setdefault((carrier.name.split("[")[0], carrier.file, carrier.line), []).append(carrier)
    result = []
    for first, *more in groups.values():
        if more and "[" in first.name:
            first = dataclasses.replace(first, why=f"{first.why} (and {len(more)} more entries of it)")
        result.append(first)
    return result
