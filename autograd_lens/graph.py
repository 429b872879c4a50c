"""Walking an autograd graph and reading the state of every saved tensor in it.

Vocabulary (the same as PyTorch's autograd notes):

* a **node** is a backward function such as ``MulBackward0``, reached from a tensor's ``grad_fn``
  and, from there, through ``next_functions``;
* a **saved tensor** is a tensor a node kept during the forward pass because its backward needs it;
* backward **frees** the saved tensors of every node it executes, unless asked to retain the graph.
  The nodes and their edges stay; only the saved tensors go.

Reading a slot's state never unpacks a saved tensor that has a pack/unpack hook (such as
``torch.utils.checkpoint`` or ``save_on_cpu``), so looking changes nothing that backward does later.
"""

from __future__ import annotations

import functools
import gc
from typing import Any, Iterator, Literal, NamedTuple

import torch

from ._inputs import graph_roots
from .errors import is_freed_graph_error, is_inplace_error

State = Literal["alive", "freed", "modified"]


def without_gc(function):
    """Run ``function`` with Python's cyclic garbage collector paused (restored afterwards).

    Reading a big graph creates one Python object per node and per saved tensor; the collector
    would otherwise scan all of them again and again while they are being created. Nothing is
    leaked: collection resumes, as before, when the function returns.
    """
    @functools.wraps(function)
    def paused(*args, **kwargs):
        if not gc.isenabled():
            return function(*args, **kwargs)
        gc.disable()
        try:
            return function(*args, **kwargs)
        finally:
            gc.enable()
    return paused

_RAW_PREFIX = "_raw_saved_"
_SAVED_PREFIX = "_saved_"
_CUSTOM_FUNCTION_SLOTS = "saved_tensors"
_MISSING = object()
_ALIVE: Any = object()  # marker for an alive slot when no SavedSlot object is wanted
_raw_names_by_type: dict[type, tuple[str, ...]] = {}


class SavedSlot(NamedTuple):
    """One saved-tensor slot of one node (an immutable record; cheap to build by the thousand).

    Attributes:
        node_name: the node's class name, such as ``"MulBackward0"``.
        name: the slot's name: ``"self"``, ``"other"``, ``"result"``, ``"mat2"``; ``"tensors[1]"``
            for a list; ``"0"``, ``"1"`` for a custom Function's ``ctx.saved_tensors``
            (``"saved_tensors"`` once they are freed, when their number is no longer known).
        state: ``"alive"``, ``"freed"`` (released by a backward pass) or ``"modified"``
            (changed in place since it was saved; backward through it fails too).
        nbytes: bytes of the saved tensor (elements times element size), or ``None`` when it
            cannot be known (freed, or packed by a hook into something that is not a tensor).
        shape: the saved tensor's shape, or ``None`` when unknown.
        dtype: the saved tensor's dtype (a ``torch.dtype``), or ``None`` when unknown.
        node: the node itself (holding a slot keeps that node alive).
        hooked: True when a saved-tensor hook packed it (checkpoint, ``save_on_cpu``, a meter).
    """

    node_name: str
    name: str
    state: State
    nbytes: int | None
    shape: tuple[int, ...] | None
    dtype: Any  # a torch.dtype, or None
    node: Any
    hooked: bool = False

    @property
    def stale(self) -> bool:
        """True when backward through this slot would fail (freed or modified)."""
        return self.state != "alive"


def node_name(node: Any) -> str:
    """The class name of a node, such as ``"MulBackward0"``.

    >>> import torch
    >>> x = torch.ones(2, requires_grad=True)
    >>> node_name((x * x).grad_fn)
    'MulBackward0'
    """
    return type(node).__name__


def children(node: Any) -> list[Any]:
    """The nodes that ``node`` sends gradients to, in order, without ``None`` entries."""
    return [child for child, _ in getattr(node, "next_functions", ()) if child is not None]


def children_cached(node: Any, kids: dict[Any, list[Any]]) -> list[Any]:
    """:func:`children`, read once per node and kept in ``kids``."""
    below = kids.get(node)
    if below is None:
        below = kids[node] = children(node)
    return below


def reachable(starts: list[Any], kids: dict[Any, list[Any]] | None = None
              ) -> tuple[list[Any], dict[Any, list[Any]]]:
    """Nodes reachable from ``starts``, each once, breadth-first from one start after the other,
    and each node's children.

    ``kids`` (children already read) is reused and extended: each node's edges are read once.
    """
    kids = {} if kids is None else kids
    order: list[Any] = []
    seen: set[Any] = set()
    for start in starts:
        if start in seen:
            continue
        seen.add(start)
        order.append(start)
        index = len(order) - 1
        while index < len(order):
            for child in children_cached(order[index], kids):
                if child not in seen:
                    seen.add(child)
                    order.append(child)
            index += 1
    return order, kids


def walk(root: Any) -> list[Any]:
    """Every node reachable from ``root``, each once, in a stable breadth-first order.

    ``root`` is a tensor or a list of tensors produced by autograd operations. The walk is
    iterative and linear in the number of nodes and edges.

    >>> import torch
    >>> x = torch.ones(2, requires_grad=True)
    >>> [node_name(n) for n in walk((x * 2).sum())]
    ['SumBackward0', 'MulBackward0', 'AccumulateGrad']
    """
    return reachable([tensor.grad_fn for tensor in graph_roots(root)])[0]


def _raw_names(node: Any) -> tuple[str, ...]:
    kind = type(node)
    names = _raw_names_by_type.get(kind)
    if names is None:
        names = tuple(a[len(_RAW_PREFIX):] for a in dir(node) if a.startswith(_RAW_PREFIX))
        _raw_names_by_type[kind] = names
    return names


def is_custom_function(node: Any) -> bool:
    """True for the node of a custom ``torch.autograd.Function`` (checkpoint's reentrant mode too)."""
    return isinstance(node, torch.autograd.function.BackwardCFunction)


def _tensors_in(packed: Any) -> list[torch.Tensor]:
    if isinstance(packed, torch.Tensor):
        return [packed]
    if isinstance(packed, (tuple, list)):
        return [t for item in packed for t in _tensors_in(item)]
    inner = getattr(packed, "tensor", None)
    return [inner] if isinstance(inner, torch.Tensor) else []


def _slot(node: Any, name: str, state: State, data: Any = None, hooked: bool = False) -> SavedSlot:
    if isinstance(data, torch.Tensor):  # the common case, kept fast
        return SavedSlot(type(node).__name__, name, state, data.nbytes, tuple(data.shape),
                         data.dtype, node, hooked)
    tensors = _tensors_in(data) if data is not None else []
    if len(tensors) == 1:
        t = tensors[0]
        return SavedSlot(node_name(node), name, state, t.numel() * t.element_size(),
                         tuple(t.shape), t.dtype, node, hooked)
    nbytes = sum(t.numel() * t.element_size() for t in tensors) if tensors else None
    return SavedSlot(node_name(node), name, state, nbytes, None, None, node, hooked)


def _failed_state(error: RuntimeError) -> State:
    if is_freed_graph_error(error):
        return "freed"
    if is_inplace_error(error):
        return "modified"
    raise error


def _probe(unpack) -> State | None:
    """Unpack once and say what happened: alive, freed, modified, or None for 'nothing saved'."""
    try:
        value = unpack()
    except RuntimeError as error:
        if is_freed_graph_error(error):
            return "freed"
        if is_inplace_error(error):
            return "modified"
        raise
    return None if value is None else "alive"


def _checkpoint_frame(hook: Any, depth: int = 0) -> Any:
    """The checkpoint frame an unpack hook closes over (torch.utils.checkpoint), or None."""
    for cell in getattr(hook, "__closure__", None) or ():
        try:
            value = cell.cell_contents
        except ValueError:
            continue
        if hasattr(value, "saved_args") and hasattr(value, "recompute_fn"):
            return value
        if depth < 2 and callable(value) and getattr(value, "__closure__", None):
            frame = _checkpoint_frame(value, depth + 1)
            if frame is not None:
                return frame
    return None


def _checkpoint_inputs_modified(hook: Any) -> bool:
    frame = _checkpoint_frame(hook) if hook is not None else None
    for saved in getattr(frame, "saved_args", None) or ():
        unpack = getattr(saved, "unpack", None)
        if unpack is None or getattr(saved, "unpack_hook", None) is not None:
            continue
        if _probe(unpack) == "modified":
            return True
    return False


def _read(node: Any, name: str, raw: Any, unpack, build: bool = True) -> SavedSlot | None:
    """The slot for one SavedTensor ``raw``, or None when the slot holds no tensor.

    With ``build=False`` an alive slot is returned as the marker ``_ALIVE`` (no object built).
    """
    hook = getattr(raw, "unpack_hook", None)
    if hook is None:
        # No hook: unpacking has no side effect, and the value it returns gives the size.
        try:
            value = unpack()
        except RuntimeError as error:
            return _slot(node, name, _failed_state(error))
        if value is None:
            return None  # a slot that never held a tensor (an optional input that was None)
        return _slot(node, name, "alive", value) if build else _ALIVE
    # Packed by a hook. Unpacking would run the hook (a checkpoint would recompute its
    # forward, save_on_cpu would copy back): don't. Read what the hook packed instead.
    data = getattr(raw, "data", None)
    if data is None:
        return None
    # A holder that remembers the version it saved (the saved-memory meter's) can still
    # say whether the tensor was changed in place since.
    held, version = getattr(data, "tensor", None), getattr(data, "version", None)
    if isinstance(held, torch.Tensor) and isinstance(version, int) and held._version != version:
        return _slot(node, name, "modified", data, hooked=True)
    # A non-reentrant checkpoint recomputes from the inputs it saved: if one of them was
    # changed in place, the recomputation fails with the in-place error.
    if _checkpoint_inputs_modified(hook):
        return _slot(node, name, "modified", data, hooked=True)
    return _slot(node, name, "alive", data, hooked=True)


def _custom_function_slots(node: Any, build: bool = True) -> list[SavedSlot]:
    try:
        raws = node._raw_saved_tensors
    except RuntimeError as error:
        if is_freed_graph_error(error):
            return [_slot(node, _CUSTOM_FUNCTION_SLOTS, "freed")]
        raise
    slots = []
    for index, raw in enumerate(raws or ()):
        slot = _read(node, str(index), raw, raw.unpack, build)
        if slot is not None:
            slots.append(slot)
    return slots


_attrs_by_type: dict[type, tuple[tuple[str, str, str], ...]] = {}


def _slot_attrs(node: Any) -> tuple[tuple[str, str, str], ...]:
    """(name, raw attribute, unpacking attribute) of each saved slot of this node type."""
    kind = type(node)
    attrs = _attrs_by_type.get(kind)
    if attrs is None:
        attrs = tuple((name, _RAW_PREFIX + name, _SAVED_PREFIX + name) for name in _raw_names(node))
        _attrs_by_type[kind] = attrs
    return attrs


def _builtin_slots(node: Any, build: bool = True) -> list[SavedSlot]:
    slots = []
    for name, raw_attr, saved_attr in _slot_attrs(node):
        try:
            raw = getattr(node, raw_attr)
        except RuntimeError as error:
            if not is_freed_graph_error(error):
                raise
            slots.append(_slot(node, name, "freed"))
            continue
        if isinstance(raw, (list, tuple)):
            unpack = lambda attr=saved_attr: getattr(node, attr)  # noqa: E731
            if not raw:  # a list of saved tensors is emptied when freed
                state = _probe(unpack)
                if state is not None and state != "alive":
                    slots.append(_slot(node, name, state))
                continue
            for index, item in enumerate(raw):
                slot = _read(node, f"{name}[{index}]", item, item.unpack, build)
                if slot is not None:
                    slots.append(slot)
            continue
        if raw.unpack_hook is None:
            # The common case, inlined: no hook, so unpacking has no side effect.
            try:
                value = getattr(node, saved_attr)
            except RuntimeError as error:
                slots.append(_slot(node, name, _failed_state(error)))
                continue
            if value is not None:
                slots.append(_slot(node, name, "alive", value) if build else _ALIVE)
            continue
        slot = _read(node, name, raw, lambda: getattr(node, saved_attr), build)
        if slot is not None:
            slots.append(slot)
    return slots


def node_slots(node: Any) -> list[SavedSlot]:
    """The saved-tensor slots of one node (built-in or custom Function), in a stable order.

    >>> import torch
    >>> x = torch.ones(2, requires_grad=True)
    >>> [(s.name, s.state, s.nbytes) for s in node_slots((x * x).grad_fn)]
    [('other', 'alive', 8), ('self', 'alive', 8)]
    """
    if is_custom_function(node):
        return _custom_function_slots(node)
    return _builtin_slots(node)


def stale_slots(node: Any) -> tuple[int, list[SavedSlot]]:
    """How many saved-tensor slots ``node`` has, and those that are freed or modified.

    Cheaper than :func:`node_slots` when most slots are alive: no object is built for them.
    """
    scan = _custom_function_slots if is_custom_function(node) else _builtin_slots
    found = scan(node, False)
    return len(found), [slot for slot in found if slot is not _ALIVE and slot.state != "alive"]


def iter_saved_tensors(root: Any) -> Iterator[SavedSlot]:
    """Like :func:`saved_tensors`, one slot at a time."""
    for node in walk(root):
        yield from node_slots(node)


@without_gc
def saved_tensors(root: Any) -> list[SavedSlot]:
    """Every saved-tensor slot reachable from ``root``, with its state and size.

    ``root`` is a tensor produced by autograd operations (or a list of them). Looking changes
    nothing: a later ``backward()`` behaves exactly as it would have.

    >>> import torch
    >>> x = torch.ones(3, requires_grad=True)
    >>> loss = (x * x).sin().sum()
    >>> [(s.node_name, s.name, s.state) for s in saved_tensors(loss)]
    [('SinBackward0', 'self', 'alive'), ('MulBackward0', 'other', 'alive'), ('MulBackward0', 'self', 'alive')]
    >>> loss.backward()
    >>> sorted({s.state for s in saved_tensors(loss)})
    ['freed']
    """
    slots: list[SavedSlot] = []
    custom = torch.autograd.function.BackwardCFunction
    for node in walk(root):
        slots += _custom_function_slots(node) if isinstance(node, custom) else _builtin_slots(node)
    return slots
