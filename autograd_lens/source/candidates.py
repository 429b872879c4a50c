"""Every tensor with a graph that the user's program can reach by name at the moment of failure.

A *candidate* is such a tensor with the path that reaches it from a frame: a local (arguments
and closure variables included), a global that the frame's code reads, an attribute of an
object to some depth (nested state objects, a module's buffers and submodules), a distribution
(named as the program holds it, for the ``logits`` it caches lazily), an entry of a list, deque, tuple or dict (an ``OrderedDict``,
a ``defaultdict`` and a namedtuple among them), a variable that a function held in
a local closes over, or a module's weight cached by a parametrization. Nothing is left out by a
rule about names: :mod:`autograd_lens.explain.carriers` ranks them all.
"""

from __future__ import annotations

import collections
import re
import sys
import sysconfig
import types
from dataclasses import dataclass
from typing import Any, Iterator

import torch

from ..lens.history import LIBRARY_DIRS
from .library_objects import library_state, made_state
from .paths import item_path

# Files that are not the user's: the standard library, installed packages, PyTorch, this package.
NOT_USERS = tuple({sysconfig.get_paths()[k] for k in ("stdlib", "purelib", "platlib")}) + LIBRARY_DIRS
# Names a notebook's shell adds to its namespace (its output history holds tensors).
_SHELL_NAMES = re.compile(r"^(In|Out|_oh|_ih|_dh|exit|quit|get_ipython|_+|_\d+|_i+\d*)$")

ITEMS_LIMIT = 2000  # entries of one container looked at
OBJECTS_LIMIT = 20000  # objects looked at in all
DEPTH = 5
_MODULE_INTERNALS = frozenset(vars(torch.nn.Module()))


@dataclass(frozen=True)
class Candidate:
    """A tensor with a graph, found under ``path`` in the frame ``frame_index`` (innermost 0).

    Attributes:
        origin: ``"variable"``, ``"attribute"`` (of an object) or ``"list"`` (an entry of a list
            or dict).
        owner: the object whose attribute (or whose list's entry) it is, else None.
        form: what the path's name holds: ``"tensor"``, ``"namedtuple"``, ``"tuple"``,
            ``"nested tuple"``,
            ``"list"``, ``"dict"`` or ``"object"`` (see :func:`form_of`).
        code: for a variable a closure holds, the code of the function that closes over it.
        container: for an entry of a list or dict, that list or dict.
    """

    frame_index: int
    path: str
    tensor: torch.Tensor
    origin: str
    owner: Any
    form: str
    code: Any = None
    container: Any = None


PARAMETRIZED = "parametrized"  # a weight a parametrization computes: the program cannot assign it


def form_of(value: Any) -> str:
    """``"tensor"``, ``"namedtuple"``, ``"tuple"``, ``"nested tuple"`` (a tuple holding tuples,
    as a stacked LSTM's per-layer ``(h, c)``), ``"list"``, ``"dict"`` or ``"object"``."""
    if isinstance(value, torch.Tensor):
        return "tensor"
    if isinstance(value, tuple) and hasattr(value, "_fields") and hasattr(value, "_make"):
        return "namedtuple"  # a state with named fields: ``State(h, c)``
    if isinstance(value, tuple) and any(isinstance(item, tuple) for item in value):
        return "nested tuple"
    for kind, name in ((tuple, "tuple"), (list, "list"), (dict, "dict")):
        if isinstance(value, kind):
            return name
    return "object"


def _explorable(value: Any) -> bool:
    if isinstance(value, (types.ModuleType, type, types.BuiltinFunctionType, types.MethodType,
                          str, bytes, int, float, complex, bool, type(None))):
        return False
    if isinstance(value, torch.nn.Module):
        return True
    if not hasattr(value, "__dict__"):
        return False
    name = type(value).__module__ or ""
    # The program's own classes (the script, its package, a notebook's cells), and a library's
    # state object they reach (a cache of past keys and values).
    filename = getattr(sys.modules.get(name), "__file__", None) or ""
    return not filename.startswith(NOT_USERS) or library_state(value)


def _attributes(value: Any) -> dict[str, Any]:
    """An object's attributes, with a module's buffers and submodules (not its parameters,
    which are leaves, nor its hooks), and a weight a parametrization holds in its cache."""
    attrs = {k: v for k, v in vars(value).items() if not k.startswith("__")}
    if isinstance(value, torch.nn.Module):
        attrs = {k: v for k, v in attrs.items() if k not in _MODULE_INTERNALS}
        attrs.update(value._buffers)
        attrs.update(value._modules)
        attrs.update(_cached_parametrizations(value))
    return attrs


def _cached_parametrizations(module: torch.nn.Module) -> dict[str, Any]:
    cache = getattr(getattr(torch.nn.utils, "parametrize", None), "_cache", None)
    names = getattr(module, "parametrizations", None)
    if not cache or names is None:
        return {}
    return {name: cache[(id(module), name)] for name in names if (id(module), name) in cache}


class _Walker:
    """Walks values; an object is entered once (again only when reached nearer to a name, so
    that the depth limit counts its shortest path: a bank list of a block that one object
    reaches through a controller, and the model itself through its submodules), a tensor or
    container under up to ``NAMES`` names (an alias, ``saved = self.saved_actions``, names the
    same list twice)."""

    NAMES = 3

    def __init__(self) -> None:
        self.seen: dict[int, int] = {}
        self.depth: dict[int, int] = {}  # the least depth an object was entered at

    def _visit(self, value: Any, depth: int = 0) -> bool:
        count = self.seen.get(id(value), 0)
        plain = isinstance(value, (torch.Tensor, list, tuple, dict, collections.deque))
        if len(self.seen) > OBJECTS_LIMIT:
            return False
        if count >= (self.NAMES if plain else 1) and (
                plain or depth >= self.depth.get(id(value), depth)):
            return False
        self.seen[id(value)] = count + 1
        self.depth[id(value)] = min(depth, self.depth.get(id(value), depth))
        return True

    def value(self, index: int, path: str, value: Any, depth: int, origin: str, owner: Any,
              form: str, code: Any = None, container: Any = None) -> Iterator[Candidate]:
        if not self._visit(value, depth):
            return
        if isinstance(value, torch.Tensor):
            if value.grad_fn is not None:
                yield Candidate(index, path, value, origin, owner, form, code, container)
            return
        if depth >= DEPTH:
            return
        if isinstance(value, tuple):  # an LSTM's (h, c) is named as a whole
            for item in value[:ITEMS_LIMIT]:
                yield from self.value(index, path, item, depth + 1, origin, owner, form, code,
                                      container)
        elif isinstance(value, (list, collections.deque)):
            for i, item in enumerate(list(value)[:ITEMS_LIMIT]):
                yield from self.value(index, item_path(path, i), item, depth + 1, "list",
                                      owner, form_of(item), code, value)
        elif isinstance(value, dict):
            for key, item in list(value.items())[:ITEMS_LIMIT]:
                if isinstance(key, (str, int)):
                    yield from self.value(index, item_path(path, key), item, depth + 1, "list",
                                          owner, form_of(item), code, value)
        elif isinstance(value, types.FunctionType):
            yield from self.closure(index, value, depth)
        elif made_state(value):
            # A distribution's lazily cached ``logits``: no line of the program assigns them; the
            # program holds the graph through the object it made, and names that object first,
            # then the cached tensor itself (where the graph sits)
            for item in _attributes(value).values():
                yield from self.value(index, path, item, depth + 1, origin, owner, "object",
                                      code, container)
            for name, item in _attributes(value).items():
                yield from self.value(index, f"{path}.{name}", item, depth + 1, "attribute",
                                      value, form_of(item), code)
        elif _explorable(value):
            computed = _cached_parametrizations(value) if isinstance(value, torch.nn.Module) else {}
            for name, item in _attributes(value).items():
                yield from self.value(index, f"{path}.{name}", item, depth + 1, "attribute",
                                      value, PARAMETRIZED if name in computed else form_of(item),
                                      code)

    def closure(self, index: int, function: types.FunctionType, depth: int) -> Iterator[Candidate]:
        """The variables a function closes over, named as its code names them."""
        cells = function.__closure__ or ()
        for name, cell in zip(function.__code__.co_freevars, cells):
            try:
                item = cell.cell_contents
            except ValueError:  # an empty cell
                continue
            yield from self.value(index, name, item, depth + 1, "variable", None, form_of(item),
                                  function.__code__)


def frame_names(frame: Any, read: set[str]) -> dict[str, Any]:
    """A frame's locals, and the globals its code reads (``read``: the names it reads)."""
    names = dict(frame.f_locals)
    if frame.f_code.co_name != "<module>":
        names.update({k: v for k, v in frame.f_globals.items() if k in read and k not in names})
    return {k: v for k, v in names.items()
            if not k.startswith("__") and not _SHELL_NAMES.match(k)}


def find_candidates(frames: list[Any], reads: list[set[str]]) -> Iterator[Candidate]:
    """Every tensor with a graph under a name of the frames, innermost frame first; a tensor
    reached under several names (an alias, an argument and the caller's variable) comes once
    under each, up to a few.

    Args:
        frames: the user's frames, innermost first.
        reads: for each frame, the names its code reads (to find the globals it uses).
    """
    walker = _Walker()
    later: list[tuple[int, str, Any]] = []
    for index, frame in enumerate(frames):
        for name, value in frame_names(frame, reads[index]).items():
            if isinstance(value, types.FunctionType):
                later.append((index, name, value))  # closures after every plain name
                continue
            yield from walker.value(index, name, value, 0, "variable", None, form_of(value))
    for index, name, function in later:
        if walker._visit(function):
            yield from walker.closure(index, function, 0)
