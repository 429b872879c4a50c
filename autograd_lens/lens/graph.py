"""Walking an autograd graph and reading the state of every saved tensor in it.

In the words of PyTorch's autograd notes: a **node** is a backward function such as
``MulBackward0``, reached from a tensor's ``grad_fn`` and then through ``next_functions``; a
**saved tensor** is one a node kept during the forward pass because its backward needs it;
backward **frees** the saved tensors of every node it executes, unless asked to retain the graph
(the nodes and their edges stay). Reading a slot never unpacks a saved tensor that a hook packed
(``torch.utils.checkpoint``, ``save_on_cpu``), so looking changes nothing that backward does later.
"""

from __future__ import annotations

import contextlib
import functools
import gc
from typing import Any, Callable, Iterable, Iterator, Literal, NamedTuple

import torch
from torch.autograd.graph import Node

from . import compat
from ._inputs import graph_roots
from .errors import error_kind

State = Literal["alive", "freed", "modified"]


@contextlib.contextmanager
def gc_paused() -> Iterator[None]:
    """Python's cyclic garbage collector paused within (restored afterwards), so that it does
    not scan the many objects a big graph's reading creates again and again."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


def without_gc(function):
    """Run ``function`` with the garbage collector paused (see :func:`gc_paused`)."""
    @functools.wraps(function)
    def paused(*args, **kwargs):
        with gc_paused():
            return function(*args, **kwargs)
    return paused


_RAW_PREFIX = "_raw_saved_"
_SAVED_PREFIX = "_saved_"


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
    node: Node
    hooked: bool = False

    @property
    def stale(self) -> bool:
        """True when backward through this slot would fail (freed or modified)."""
        return self.state != "alive"


def node_name(node: Node) -> str:
    """The class name of a node, such as ``"MulBackward0"``.

    >>> import torch
    >>> x = torch.ones(2, requires_grad=True)
    >>> node_name((x * x).grad_fn)
    'MulBackward0'
    """
    return type(node).__name__


def children(node: Node) -> list[Node]:
    """The nodes that ``node`` sends gradients to, in order, without ``None`` entries."""
    return [child for child, _ in node.next_functions if child is not None]


def breadth_first(starts: Iterable[Node], *, stop: Callable[[Node], bool] | None = None,
                  follow: Callable[[Node], Iterable[Node]] = children) -> list[Node]:
    """Every node reachable from ``starts``, each once, breadth-first from one start after the other.

    The one walk of the library, as PyTorch's ``torch.autograd.graph`` walks a graph.
    ``stop(node)`` true: the node is listed, but the walk does not go on below it.
    ``follow(node)``: the nodes to visit next (default: its children; a caller that walks
    towards the root passes the parents instead, one that walks twice can cache them).
    """
    order: list[Node] = []
    seen: set[Node] = set()
    for start in starts:
        if start in seen:
            continue
        seen.add(start)
        order.append(start)
        index = len(order) - 1
        while index < len(order):
            node = order[index]
            index += 1
            if stop is not None and stop(node):
                continue
            for child in follow(node):
                if child not in seen:
                    seen.add(child)
                    order.append(child)
    return order


def walk(root: Any) -> list[Node]:
    """Every node reachable from ``root``, each once, in a stable breadth-first order.

    ``root`` is a tensor or a list of tensors produced by autograd operations. The walk is
    iterative and linear in the number of nodes and edges.

    >>> import torch
    >>> x = torch.ones(2, requires_grad=True)
    >>> [node_name(n) for n in walk((x * 2).sum())]
    ['SumBackward0', 'MulBackward0', 'AccumulateGrad']
    """
    return breadth_first(tensor.grad_fn for tensor in graph_roots(root))


def is_custom_function(node: Node) -> bool:
    """True for the node of a custom ``torch.autograd.Function`` (checkpoint's reentrant mode too)."""
    return isinstance(node, torch.autograd.function.BackwardCFunction)


def _tensors_in(packed: Any) -> list[torch.Tensor]:
    if isinstance(packed, torch.Tensor):
        return [packed]
    if isinstance(packed, (tuple, list)):
        return [t for item in packed for t in _tensors_in(item)]
    inner = getattr(packed, "tensor", None)
    return [inner] if isinstance(inner, torch.Tensor) else []


def _slot(node: Node, name: str, state: State, data: Any, hooked: bool) -> SavedSlot:
    tensors = _tensors_in(data)
    if len(tensors) == 1:
        t = tensors[0]
        return SavedSlot(type(node).__name__, name, state, t.nbytes, tuple(t.shape), t.dtype,
                         node, hooked)
    nbytes = sum(t.nbytes for t in tensors) if tensors else None
    return SavedSlot(node_name(node), name, state, nbytes, None, None, node, hooked)


def _probe(unpack: Callable[..., Any], *args: Any) -> tuple[State, Any]:
    """Unpack once: ``("alive", unpack(*args))``, or ``("freed" | "modified", None)`` when
    unpacking fails the way backward would. Any other error propagates."""
    try:
        return "alive", unpack(*args)
    except RuntimeError as error:
        kind = error_kind(error)
        if kind is None:
            raise
        return kind, None


def _checkpoint_inputs_modified(closure: tuple[Any, ...]) -> bool:
    """Whether an input that a non-reentrant checkpoint saved to recompute its block (found
    through its unpack hook's closure) was changed in place since: the recomputation fails."""
    state, readers = _probe(compat.checkpoint_inputs, closure)
    if state != "alive":
        return state == "modified"
    return any(_probe(reader)[0] == "modified" for reader in readers)


# A slot as read: name, state, what it holds (a tensor, what a hook packed, or None once freed),
# and whether a hook packed it. _slot turns it into a SavedSlot.
Entry = tuple[str, State, Any, bool]


def _packed_entry(name: str, packed: compat.Packed) -> Entry | None:
    """A slot that a hook packed, read from what the hook packed: its unpack hook never runs
    (a checkpoint would recompute its forward, save_on_cpu would copy back)."""
    data = packed.data
    if data is None:
        return None
    # A holder that remembers the version it saved (the saved-memory meter's) can still
    # say whether the tensor was changed in place since; a non-reentrant checkpoint
    # recomputes from the inputs it saved, so one changed in place fails the recomputation.
    held, version = getattr(data, "tensor", None), getattr(data, "version", None)
    if (isinstance(held, torch.Tensor) and isinstance(version, int) and held._version != version
            or _checkpoint_inputs_modified(packed.closure)):
        return name, "modified", data, True
    return name, "alive", data, True


def _read(name: str, reader: Callable[..., tuple[Any, compat.Packed | None]],
          *args: Any) -> Entry | None:
    """One saved tensor, read by ``reader(*args)`` (from :mod:`.compat`), or None when the slot
    holds no tensor (an optional input that was None)."""
    state, result = _probe(reader, *args)
    if state != "alive":
        return name, state, None, False
    value, packed = result
    if packed is not None:
        return _packed_entry(name, packed)
    return None if value is None else (name, "alive", value, False)


def _custom_function_entries(node: Node) -> list[Entry | None]:
    state, raws = _probe(getattr, node, "_raw_saved_tensors")
    if state == "alive":
        state, readers = _probe(compat.read_each, raws, getattr, node, "saved_tensors")
    if state != "alive":
        return [("saved_tensors", state, None, False)]
    return [_read(str(index), reader) for index, reader in enumerate(readers)]


@functools.cache
def _slot_names(kind: type) -> tuple[tuple[str, str, str], ...]:
    """(name, raw attribute, unpacking attribute) of each saved slot of a node type."""
    return tuple((a[len(_RAW_PREFIX):], a, _SAVED_PREFIX + a[len(_RAW_PREFIX):])
                 for a in dir(kind) if a.startswith(_RAW_PREFIX))


def _builtin_entries(node: Node) -> list[Entry | None]:
    entries: list[Entry | None] = []
    for name, raw_attr, saved_attr in _slot_names(type(node)):
        state, raw = _probe(getattr, node, raw_attr)
        if state != "alive":
            entries.append((name, state, None, False))
        elif not isinstance(raw, (list, tuple)):
            entries.append(_read(name, compat.read_one, raw, getattr, node, saved_attr))
        elif raw:
            state, readers = _probe(compat.read_each, raw, getattr, node, saved_attr)
            if state != "alive":
                entries.append((name, state, None, False))
            else:
                entries += [_read(f"{name}[{i}]", reader) for i, reader in enumerate(readers)]
        else:  # a list of saved tensors is emptied when freed
            state, _ = _probe(getattr, node, saved_attr)
            entries.append((name, state, None, False) if state != "alive" else None)
    return entries


def _entries(node: Node) -> list[Entry | None]:
    """Every slot of ``node`` as read (None for a slot that holds no tensor)."""
    if is_custom_function(node):
        return _custom_function_entries(node)
    return _builtin_entries(node)


def node_slots(node: Node) -> list[SavedSlot]:
    """The saved-tensor slots of one node (built-in or custom Function), in a stable order.

    >>> import torch
    >>> x = torch.ones(2, requires_grad=True)
    >>> [(s.name, s.state, s.nbytes) for s in node_slots((x * x).grad_fn)]
    [('other', 'alive', 8), ('self', 'alive', 8)]
    """
    return [_slot(node, *entry) for entry in _entries(node) if entry is not None]


_READ: list[dict[Node, tuple[int, list[SavedSlot]]]] = []  # see read_once


@contextlib.contextmanager
def read_once() -> Iterator[None]:
    """Within it, :func:`stale_slots` reads each node's slots once and gives the same answer
    after (the replay's evidence and its finding read the same failed graph, which stands still
    meanwhile: nothing there runs a backward or writes a tensor), and the cyclic garbage
    collector is paused (:func:`gc_paused`: it would scan the slots kept)."""
    _READ.append({})
    try:
        with gc_paused():
            yield
    finally:
        _READ.pop()


def stale_slots(node: Node) -> tuple[int, list[SavedSlot]]:
    """How many saved-tensor slots ``node`` has, and those that are freed or modified."""
    read = _READ[-1] if _READ else None
    if read is not None and node in read:
        return read[node]
    entries = [entry for entry in _entries(node) if entry is not None]
    found = len(entries), [_slot(node, *entry) for entry in entries if entry[1] != "alive"]
    if read is not None:
        read[node] = found
    return found


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
    return [slot for node in walk(root) for slot in node_slots(node)]
