"""What autograd lets Python see of a saved tensor, in every torch release the library supports.

This module is the one place that knows how the releases differ; the rest of the library reads
saved tensors only through :func:`read_one` and :func:`read_each`.

A node keeps each saved tensor in a ``torch._C._autograd.SavedTensor`` (a node's
``_raw_saved_<name>``, a custom Function's ``_raw_saved_tensors``). Unpacking one that a
saved-tensor hook packed (``torch.utils.checkpoint``, ``save_on_cpu``, ``saved_memory``) runs
that hook's unpack function: a checkpoint would recompute its block. So the library must know,
before unpacking, whether a hook packed the tensor, and then read what the hook packed instead.

* torch 2.12 to 2.15: ``SavedTensor`` has ``unpack_hook``, ``data`` (what the hook packed)
  and ``unpack()`` (one tensor of a list or of a custom Function).
* torch 2.4 to 2.11: ``SavedTensor`` has none of them (only ``register_hooks``). A saved tensor
  is unpacked only through its node (``node._saved_<name>``, ``node.saved_tensors``), a list or a
  custom Function's tensors all at once. Whether a hook packed it shows only while unpacking:
  a plain saved tensor unpacks without calling any Python function, a packed one calls its
  Python unpack hook. So the library unpacks under a tracer (``sys.settrace``) that stops that
  call before the hook's first line runs, and reads from the stopped call what the hook was
  given (what it packed) and what it closes over (a checkpoint's frame). What this cannot give
  is the packed data of each tensor of a list or of a custom Function with more than one,
  when a hook packed them: their sizes are then unknown (:data:`UNKNOWN`), and so is an
  in-place change that only the hook checks (``saved_memory``'s).
"""

from __future__ import annotations

import functools
import sys
from typing import Any, Callable, NamedTuple, Optional

import torch

SAVED_TENSOR_ATTRIBUTES: bool = all(
    hasattr(torch._C._autograd.SavedTensor, name) for name in ("unpack", "unpack_hook", "data"))
"""True from torch 2.12 on: a saved tensor tells whether a hook packed it, and what it holds."""

class Packed(NamedTuple):
    """A saved tensor that a hook packed, read without running the hook.

    Attributes:
        data: what the pack hook returned (a tensor, a holder, a tuple), or :data:`UNKNOWN`
            when this torch release cannot give it (see :func:`read_each`).
        closure: the values the unpack hook closes over (a checkpoint's frame is one of them).
    """

    data: Any
    closure: tuple[Any, ...]


def closure_values(function: Any) -> tuple[Any, ...]:
    """The values a Python function closes over (empty for anything else)."""
    values = []
    for cell in getattr(function, "__closure__", None) or ():
        try:
            values.append(cell.cell_contents)
        except ValueError:  # a cell not filled yet
            continue
    return tuple(values)


class _HookReached(Exception):
    """Raised by the tracer at the first Python call of an unpack: the hook never runs."""

    def __init__(self, packed: Packed):
        super().__init__("a saved-tensor hook's unpack was stopped before it ran")
        self.packed = packed


def _stop_at_hook(frame: Any, event: str, arg: Any) -> None:
    if event != "call":
        return None
    code = frame.f_code
    names = code.co_varnames
    # The hook is called with one argument, what it packed (after self, for a method).
    data = frame.f_locals.get(names[code.co_argcount - 1]) if code.co_argcount else None
    closure = tuple(frame.f_locals[name] for name in code.co_freevars if name in frame.f_locals)
    raise _HookReached(Packed(data, closure))


def _unpack_or_stop(unpack: Callable[..., Any], *args: Any) -> tuple[Any, Packed | None]:
    """``(unpack(*args), None)``, or ``(None, packed)`` when unpacking reaches a Python hook,
    which is stopped before it runs. Autograd's own errors (freed, modified) propagate."""
    previous = sys.gettrace()
    sys.settrace(_stop_at_hook)
    try:
        return unpack(*args), None
    except _HookReached as reached:
        return None, reached.packed
    finally:
        sys.settrace(previous)


def read_one(raw: Any, unpack: Callable[..., Any], *args: Any) -> tuple[Any, Packed | None]:
    """One saved tensor: ``(tensor, None)`` when no hook packed it (``unpack(*args)``, which then
    has no side effect, gives the tensor), or ``(None, packed)``, without running the hook.

    ``raw`` is the ``SavedTensor``; ``unpack(*args)`` unpacks it through its node, such as
    ``getattr(node, "_saved_self")``. A freed or modified saved tensor raises autograd's error.

    >>> import torch
    >>> x = torch.ones(2, requires_grad=True)
    >>> node = x.exp().grad_fn
    >>> tensor, packed = read_one(node._raw_saved_result, getattr, node, "_saved_result")
    >>> tensor.tolist(), packed
    ([2.7182817459106445, 2.7182817459106445], None)
    """
    if not SAVED_TENSOR_ATTRIBUTES:
        return _unpack_or_stop(unpack, *args)
    hook = raw.unpack_hook
    if hook is None:
        return unpack(*args), None
    return None, Packed(raw.data, closure_values(hook))


Reader = Callable[[], tuple[Any, Optional[Packed]]]
"""Reads one saved tensor when called, as :func:`read_one` does."""

UNKNOWN = type("Unknown", (), {"__repr__": lambda self: "UNKNOWN", "__slots__": ()})()
"""The packed data of a tensor that this torch release cannot read alone."""


def read_each(raws: Any, unpack_all: Callable[..., Any], *args: Any) -> list[Reader]:
    """A reader for each saved tensor of a list slot or of a custom Function.

    ``raws`` are their ``SavedTensor`` objects; ``unpack_all(*args)`` unpacks them all through
    their node (such as ``getattr(node, "saved_tensors")``). From 2.12 on, each is read alone
    when its reader is called. On 2.4 to 2.11 they are unpacked here, all at once, so a freed or
    modified one raises autograd's error here for all of them. The tensors of one node are
    saved at once, under the same hooks: when a hook packed them, only a single one's packed
    data is known; for more, each one's is :data:`UNKNOWN`.
    """
    raws = list(raws or ())
    if SAVED_TENSOR_ATTRIBUTES:
        return [functools.partial(read_one, raw, raw.unpack) for raw in raws]
    values, packed = _unpack_or_stop(unpack_all, *args)
    if packed is None:
        results = [(value, None) for value in values]
    else:
        data = packed.data if len(raws) == 1 else UNKNOWN
        results = [(None, Packed(data, packed.closure)) for _ in raws]
    return [functools.partial(_given, result) for result in results]


def _given(result: tuple[Any, Packed | None]) -> tuple[Any, Packed | None]:
    return result


def _checkpoint_frame(values: tuple[Any, ...], depth: int = 0) -> Any:
    """The frame of a non-reentrant ``torch.utils.checkpoint`` among the values an unpack hook
    closes over (or those of the functions among them), or None."""
    for value in values:
        if hasattr(value, "recompute_fn") and (hasattr(value, "saved_args")
                                               or hasattr(value, "input_saver")):
            return value
        if depth < 2 and callable(value):
            frame = _checkpoint_frame(closure_values(value), depth + 1)
            if frame is not None:
                return frame
    return None


def checkpoint_inputs(closure: tuple[Any, ...]) -> list[Reader]:
    """Readers of the inputs a non-reentrant checkpoint saved to recompute its block, found
    through the closure of its unpack hook (none when the hook is not a checkpoint's).

    torch 2.12 on keep them in the checkpoint frame's ``saved_args`` (``SavedTensor`` objects);
    older releases in a custom Function node, ``frame.input_saver.grad_fn``.
    """
    frame = _checkpoint_frame(closure)
    if frame is None:
        return []
    saved_args = getattr(frame, "saved_args", None)
    if saved_args:
        return [functools.partial(read_one, saved, saved.unpack) for saved in saved_args
                if isinstance(saved, torch._C._autograd.SavedTensor) and hasattr(saved, "unpack")]
    node = getattr(getattr(frame, "input_saver", None), "grad_fn", None)
    if node is None:
        return []
    return read_each(node._raw_saved_tensors, getattr, node, "saved_tensors")
