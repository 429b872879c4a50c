"""Remembering, cheaply, which graphs earlier backward and ``autograd.grad`` calls went through.

A backward that fails has already run (and freed) the part of this step's graph it reached
before the stale node, so the saved tensors' states after the error cannot tell this step's
graph from the old one. Two facts can:

* every node carries a **sequence number**, increasing in the order the forward created them,
  so a node numbered at most the root of an earlier backward existed before that backward;
* an earlier root that is still alive (``loss_reg`` after ``loss_reg.backward()``) shows exactly
  which nodes that backward went through.

:class:`Call` keeps both for each call as numbers: it holds no tensor and no node (not even
by weak reference, which would make freeing each loss measurably slower). An earlier root
still alive is found again, at the failure, by its sequence number; reading a graph against
these records (which of its nodes the calls went through) is
:mod:`~autograd_lens.lens.sequence_numbers`'s.
"""

from __future__ import annotations

import os
import sys
import sysconfig
import threading
import weakref
from collections import deque
from typing import Any, Callable, NamedTuple

import torch
import torch.utils.checkpoint

# torch's folder and this package's (the folder above this one)
LIBRARY_DIRS = (os.path.dirname(torch.__file__) + os.sep,
                os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep)
# A call is recorded at the user's line that made it: past the frames of installed libraries too,
# so that a framework's wrapper (accelerator.backward(loss)) is recorded where the user called it.
_CALLERS_SKIP = LIBRARY_DIRS + tuple(
    {os.path.join(sysconfig.get_paths()[k], "") for k in ("purelib", "platlib")})
PLAIN = (torch.Tensor, torch.nn.Parameter)  # not the fake tensors of a compiler's tracing


ON_PARAMETERS = "grad on parameters"  # the first run's mark of such a grad call
UNKNOWN = ("", 0, 0)  # the place of a call not recorded (the command's first run keeps none)


class Call(NamedTuple):
    """One finished call of ``backward`` or ``autograd.grad``.

    Attributes:
        roots: the sequence numbers of the nodes it started from.
        sequence: the largest sequence number among their nodes.
        retained: True when it kept the graph (``retain_graph`` or ``create_graph``).
        kind: ``"backward"`` or ``"grad"``.
        where: (file, first line of the function, line) of the user's code that called it
            (:data:`UNKNOWN` when not recorded).
        on_parameters: for ``grad``, whether every input was an ``nn.Parameter`` (an inner
            gradient step on the weights, as in meta-learning).
        cell: in a notebook, the number of the cell's run that made the call (a cell run
            twice keeps one file); 0 when not known.
        inputs: for ``grad``, weak references to its inputs (the engine goes through only the
            nodes on a way to them); empty when not recorded.
    """

    roots: tuple[Any, ...]
    sequence: int
    retained: bool
    kind: str
    where: tuple[str, int, int]
    on_parameters: bool = False
    cell: int = 0
    inputs: tuple[Any, ...] = ()


def as_tensors(value: Any) -> tuple[torch.Tensor, ...]:
    """A tensor or a sequence of tensors, as a tuple of tensors."""
    if isinstance(value, torch.Tensor):
        return (value,)
    if isinstance(value, (list, tuple)):
        return tuple(v for v in value if isinstance(v, torch.Tensor))
    return ()


def user_frame(depth: int = 1) -> Any:
    """The innermost frame outside PyTorch and this package."""
    frame = sys._getframe(depth)
    while frame is not None and frame.f_code.co_filename.startswith(LIBRARY_DIRS):
        frame = frame.f_back
    return frame


def make_call(roots: Any, retained: bool, kind: str, inputs: Any = None,
              cells: dict[str, int] | None = None, depth: int = 1) -> tuple | None:
    """The record of a call that just finished, as a plain tuple of a :class:`Call`'s fields
    but its place, which is the code and the offset in it (:func:`as_call` makes it a Call:
    this runs on every call, and a NamedTuple costs a microsecond more to build); None when
    nothing in it had a graph, or when PyTorch made it itself while tracing, as
    ``torch.compile`` does, on tensors of its own.
    ``cells``: in a notebook, the number of each cell's latest run, by the cell's file.
    ``depth``: how far up from here the user's frame can be (the frames between are passed
    over unread: Python builds a frame object only for a frame that is read)."""
    if type(roots) in PLAIN:  # the usual loss.backward(): the short way
        node = roots.grad_fn
        if node is None:
            return None
        number = node._sequence_nr()
        refs = (number,)
    else:
        tensors = [t for t in as_tensors(roots) if t.grad_fn is not None and type(t) in PLAIN]
        if not tensors:
            return None
        refs = tuple(t.grad_fn._sequence_nr() for t in tensors)
        number = max(refs)
    try:  # user_frame(depth + 1), written out: this runs on every call
        frame = sys._getframe(depth)
    except ValueError:  # called from outside any Python frame
        frame = None
    while frame is not None:
        name = frame.f_code.co_filename
        skipped = _SKIPPED.get(name)
        if skipped is None:
            skipped = _SKIPPED[name] = name.startswith(_CALLERS_SKIP)
        if not skipped:
            break
        frame = frame.f_back
    if frame is None:
        where, cell = ("", 0, 0), 0
    else:  # the code and the offset in it: its line is read only when the record is
        code = frame.f_code  # (f_lineno reads the code's line table from its start)
        where = (code, frame.f_lasti)
        cell = cells.get(code.co_filename, 0) if cells is not None else 0
    on_parameters = kind == "grad" and all(
        isinstance(t, torch.nn.Parameter) for t in as_tensors(inputs))
    return refs, number, bool(retained), kind, where, on_parameters, cell, \
        _weak_inputs(inputs) if kind == "grad" else ()


def _weak_inputs(inputs: Any) -> tuple[Any, ...]:
    """Weak references to a ``grad`` call's inputs (none when one of them is not a tensor: a
    gradient edge, which is not followed)."""
    given = tuple(inputs) if isinstance(inputs, (list, tuple)) else (inputs,)
    tensors = as_tensors(given)
    return tuple(weakref.ref(t) for t in tensors) if len(tensors) == len(given) else ()


def grad_on_parameters(inputs: Any) -> Any:
    """For the first run's record of an ``autograd.grad`` call: :data:`ON_PARAMETERS` when
    every input is an ``nn.Parameter`` (an inner step of meta-learning), else False."""
    try:
        tensors = as_tensors(inputs)
        if tensors and all(isinstance(t, torch.nn.Parameter) for t in tensors):
            return ON_PARAMETERS
    except Exception:  # noqa: BLE001 - reading the inputs must never add an error
        pass
    return False


def as_call(record: tuple) -> Call:
    """A record that :func:`make_call` made, as a :class:`Call`."""
    where = record[4]
    if len(where) == 2:
        code, offset = where
        where = (code.co_filename, code.co_firstlineno, _line(code, offset))
    return Call._make(record[:4] + (where,) + record[5:])


def _line(code: Any, offset: int) -> int:
    """The line of the instruction at ``offset`` in ``code`` (what a frame's f_lineno says)."""
    for start, end, line in code.co_lines():
        if start <= offset < end and line is not None:
            return line
    return code.co_firstlineno


_SKIPPED: dict[str, bool] = {}  # by file: whether a call is recorded past its frames


class History:
    """The last few calls, newest last, and the last few checkpointed regions the program ran
    (each as the range of sequence numbers its nodes got: ``(after, up to)``)."""

    def __init__(self, size: int = 8) -> None:
        self.records: deque[tuple] = deque(maxlen=size)  # as make_call gives them
        self.regions: deque[tuple[int, int]] = deque(maxlen=64)
        # The command's first run keeps less, and faster (see Watch(recording=False)): each
        # call as (the sequence number its thread had reached, keep_graph, create_graph,
        # accumulate_grad, or for ``autograd.grad`` what grad_on_parameters gives, its thread,
        # the type of its first root, the count of calls so far), every thread's; the calls
        # are the main thread's on plain tensors (not a compiler's tracing, on its own).
        self.counted: deque[tuple] = deque(maxlen=4 * size)
        self.thread = threading.main_thread().ident

    @property
    def calls(self) -> list[Call]:
        """The calls, oldest first (the first run's counted ones before any recorded since)."""
        counted = [((), number - 1, bool(keep or create),
                    "grad" if accumulate is False or accumulate is ON_PARAMETERS else "backward",
                    UNKNOWN, accumulate is ON_PARAMETERS, 0, ())
                   for number, keep, create, accumulate, thread, root, _ in self.counted
                   if thread == self.thread and root in PLAIN]
        return [as_call(record) for record in [*counted[-self.records.maxlen:], *self.records]]

    def add(self, call: tuple | None) -> None:
        if call is not None:
            self.records.append(call)

    def clear(self) -> None:
        self.records.clear()
        self.counted.clear()
        self.regions.clear()


ACTIVE: list[History] = []
"""The histories being recorded now (by the command's watch or ``diagnose_on_error``), newest
last: :func:`~autograd_lens.diagnose` reads the calls recorded there."""


def recorded_calls() -> list[Call]:
    """The calls recorded by the newest active history, oldest first (empty when none)."""
    return ACTIVE[-1].calls if ACTIVE else []


_PROBE = torch.zeros((), requires_grad=True)


def current_sequence() -> int | None:
    """The sequence number the next node would get, about (None when grad mode is off)."""
    if not torch.is_grad_enabled():
        return None
    return _PROBE.view_as(_PROBE).grad_fn._sequence_nr()


def recording_regions(original: Any, history: History | Callable[[], History]) -> Any:
    """``original`` (``torch.utils.checkpoint.checkpoint`` or ``checkpoint_sequential``), also
    remembering which sequence numbers the nodes it made got (in ``history``, or in the one
    ``history()`` gives for the thread that runs it)."""
    def checkpointed(*args: Any, **kwargs: Any) -> Any:
        low = current_sequence()
        result = original(*args, **kwargs)
        high = current_sequence()
        if low is not None and high is not None:
            (history() if callable(history) else history).regions.append((low, high))
        return result
    checkpointed.__wrapped__ = original
    checkpointed.__doc__, checkpointed.__name__ = original.__doc__, original.__name__
    return checkpointed


def start_recording(history: History,
                    current: Callable[[], History] | None = None) -> list[tuple[Any, str, Any]]:
    """Record into ``history`` from now on: its calls are the ones :func:`recorded_calls` gives,
    and torch's checkpoint functions also remember the regions they make (in the history
    ``current()`` gives for the running thread, when given; sequence numbers are a thread's
    own). Returns each
    (owner, name, original) replaced, for the caller to put back with its own wrappers."""
    saved = []
    for name in ("checkpoint", "checkpoint_sequential"):
        original = getattr(torch.utils.checkpoint, name)
        saved.append((torch.utils.checkpoint, name, original))
        setattr(torch.utils.checkpoint, name, recording_regions(original, current or history))
    ACTIVE.append(history)
    return saved


def stop_recording(history: History) -> None:
    """The end of :func:`start_recording` (the caller puts back what it replaced)."""
    if history in ACTIVE:
        ACTIVE.remove(history)
