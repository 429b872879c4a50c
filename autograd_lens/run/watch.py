"""Watching a program's backward calls, so that a failing one can be explained.

:class:`Watch` replaces the function through which ``torch.autograd.backward`` (which
``Tensor.backward`` calls) and ``torch.autograd.grad`` run the engine with a thin wrapper while
it is active. In the command's first run (``recording=False``) a call that works (not a
compiler's tracing: see :func:`~autograd_lens.run.counting.traced`) is counted and kept only as
one small tuple (the sequence number its thread had reached, whether it kept its
graph, its kind, its thread): no place, since reading the caller's frame costs more than the
rest; where earlier calls were made, the optimizer steps and the writes are recorded by the
replay (see :mod:`autograd_lens.run.record`), after a failure. Elsewhere (the tests, a program's own
``Watch()``) each call is also recorded with its place (see :mod:`autograd_lens.lens.history`:
nothing that keeps a tensor alive). A call that raises the freed-graph or in-place error is
explained at that moment, while the program's frames still hold its variables, and handed to
``on_failure`` (see :mod:`autograd_lens.run.failing_call`); the error itself goes on unchanged,
re-raised without the wrapper's entry in its traceback (as every error that passes through it: a
hook's, a custom Function's, a Ctrl-C during the diagnosis). The same error again at the same
call of the program's (a loop that catches it and skips the batch) is not explained again:
``on_repeat`` is told, in a few microseconds. Each thread has its own count of the backward
calls running in it (see :mod:`autograd_lens.run.thread_state`).
"""

from __future__ import annotations

import functools
import os
import sys
import threading
from typing import Any, Callable

import torch

from ..lens.history import (PLAIN, History, as_call, grad_on_parameters, make_call,
                            start_recording, stop_recording)
from ..explain.finding import Finding
from .counting import traced
from .failing_call import explain_failure, finding_of, or_inner
from .thread_state import OtherThreads, State
from .unseen import without_ours
from ..source.user_frames import user_frames


_OMITTED = object()  # an argument of the engine's that the caller did not give
_ENGINE_ARGUMENTS = ("grad_tensors", "keep_graph", "create_graph", "inputs", "allow_unreachable",
                     "accumulate_grad")  # run_backward's, after ``tensors``, in order


class Watch:
    """Record backward and ``autograd.grad`` calls; explain the one that fails.

    After the error, :attr:`finding` holds the :class:`~autograd_lens.explain.finding.Finding` and
    :attr:`error` the exception it explains; ``on_failure(finding, frame)`` (if given) is called
    at that moment, with the frame of the call that failed (the innermost of the program's).
    """

    def __init__(self, on_failure: Callable[[Finding, Any], None] | None = None,
                 on_repeat: Callable[[str, int, int], None] | None = None,
                 on_outputs: Callable[[Any], None] | None = None,
                 recording: bool = True) -> None:
        self.history = History()
        # False (the command's first run): calls are counted and kept without their place (see
        # _wrap_light); the replay records them in full (see autograd_lens.run.record).
        self.recording = recording
        self._code: Any = None  # the light wrapper's code: its frames on the stack are the
        # backward calls running (counted only when one fails)
        self.on_outputs = on_outputs  # given the failing call's outputs, before the explaining
        self.on_repeat = on_repeat
        # The places of the program's calls that failed, (file, line, kind of error): how many
        # times each failed again after the first (only counted when ``on_repeat`` is given).
        self.places: dict[tuple[str, int, str], int] = {}
        self.finding: Finding | None = None
        self.error: tuple[int, str] | None = None  # (id, message) of the explained error
        self.on_failure = on_failure
        self._saved: list[tuple[Any, str, Any]] = []
        # The main thread's history is the one diagnose() reads (see history.ACTIVE).
        self._main, self._others = State(self.history), OtherThreads()
        self._main_id = threading.main_thread().ident
        self._recorded = 0  # the calls that returned, counted by the recording wrapper
        self._light = lambda: 0  # the light wrapper's count so far (read from its closure)

    @property
    def count(self) -> int:
        """The calls that returned (every thread's, nested ones too; not a compiler's tracing)."""
        return self._recorded + self._light()

    def _state(self) -> State:
        """This thread's state."""
        return self._main if threading.get_ident() == self._main_id else self._others.state

    def failed(self, error: RuntimeError, roots: Any) -> None:
        """Explain ``error`` (raised by a backward from ``roots``); never raises.

        A backward run by another backward (a custom Function's backward calling
        ``autograd.grad``, a reentrant checkpoint's) is explained from its own graph, and
        again by the outer backward when the error reaches it: the outer explanation is kept
        when it names a carrier, else the inner one.
        """
        explain_failure(self, error, roots)

    def explained_here(self, error: RuntimeError, roots: Any) -> Finding | None:
        """The finding of ``error``, raised by the backward from ``roots`` that is failing now
        (the replay's: its recording stops the program there, before this watch's wrapper sees
        the error)."""
        thread = self._state()
        nested = thread.depth > 1
        finding = finding_of(error, roots, user_frames(), thread, nested)
        return finding if nested else or_inner(finding, thread)

    def _running(self) -> int:
        """The backward calls running in this thread, from its stack (the light wrapper keeps
        no count: this is read only when one fails)."""
        frame, running = sys._getframe(1), 0
        while frame is not None:
            running += frame.f_code is self._code
            frame = frame.f_back
        return running

    def _wrap_light(self, original: Callable) -> Callable:
        """The wrapper of the command's first run: the call, counted, and kept as the sequence
        number its thread had reached (every node made before the call has a smaller one),
        whether it kept its graph, its kind (for ``autograd.grad``, whether its inputs are all
        parameters), its thread, the type of its first root and the count so far, as one tuple
        (see ``History.counted``); not where it was made (the replay records it). A failure is
        explained.

        Its parameters are the engine's own (``run_backward``'s), so that torch's calls reach
        it without packing their arguments into a tuple and a dictionary (that alone cost a
        microsecond a call); an argument not given is not passed on (the engine's defaults)."""
        watch, counted, calls = self, self.history.counted, self._light()
        get_ident, reached = threading.get_ident, torch._C._autograd._get_sequence_nr
        omitted, on_parameters, plain = _OMITTED, grad_on_parameters, PLAIN

        @functools.wraps(original)
        def counting(tensors, grad_tensors=omitted, keep_graph=omitted, create_graph=omitted,
                     inputs=omitted, allow_unreachable=omitted, accumulate_grad=omitted):
            nonlocal calls
            number = reached()
            try:
                if accumulate_grad is omitted or allow_unreachable is omitted or \
                        inputs is omitted or create_graph is omitted or keep_graph is omitted or \
                        grad_tensors is omitted:  # not one of torch's own calls: as given
                    given = zip(_ENGINE_ARGUMENTS, (grad_tensors, keep_graph, create_graph,
                                                    inputs, allow_unreachable, accumulate_grad))
                    result = original(tensors, **{name: value for name, value in given
                                                  if value is not omitted})
                    keep_graph, create_graph = (value is not omitted and value
                                                for value in (keep_graph, create_graph))
                else:
                    result = original(tensors, grad_tensors, keep_graph, create_graph, inputs,
                                      allow_unreachable, accumulate_grad=accumulate_grad)
            except BaseException as error:  # as in the recording wrapper, below
                error.__traceback__ = without_ours(error.__traceback__)
                if isinstance(error, RuntimeError):
                    try:
                        watch.failed(error, tensors)
                    except BaseException as stopped:
                        stopped.__traceback__ = None
                        raise
                raise
            root = type(tensors[0]) if tensors else None
            if root in plain or not traced(tensors):  # not a compiler's tracing
                # (an int of the closure, not itertools.count: no call; nothing between its
                # read and its write lets another thread run, so no count is lost)
                calls += 1
                counted.append((number, keep_graph, create_graph,
                                accumulate_grad or on_parameters(inputs), get_ident(), root,
                                calls))
            return result
        self._code = counting.__code__
        self._light = lambda: calls
        return counting

    def _wrap(self, original: Callable) -> Callable:
        if not self.recording:
            return self._wrap_light(original)
        watch, main, others, main_id = self, self._main, self._others, self._main_id
        get_ident = threading.get_ident

        @functools.wraps(original)
        def wrapper(outputs, *args, **kwargs):
            # torch's own call: (outputs, gradients, retain_graph, create_graph, inputs, ...,
            # accumulate_grad=True for backward, False for autograd.grad)
            state = main if get_ident() == main_id else others.state
            depth = state.depth
            state.depth = depth + 1
            if not depth and state.nested:
                state.nested = []
            try:
                result = original(outputs, *args, **kwargs)
            except BaseException as error:
                # Re-raised as it came, without this wrapper's entry in its traceback: a bare
                # ``raise`` adds none, so the program sees the traceback it would see unwatched
                # (a hook's KeyError, a custom Function's ValueError as well).
                error.__traceback__ = without_ours(error.__traceback__)
                if isinstance(error, RuntimeError):
                    try:
                        watch.failed(error, outputs)
                    except BaseException as stopped:  # Ctrl-C during the diagnosis
                        stopped.__traceback__ = None  # raised at the program's call, as if
                        raise  # backward itself had been interrupted; its context: the error
                raise
            finally:
                state.depth = depth
            if traced(outputs):  # a compiler's tracing: neither counted nor recorded
                return result
            watch._recorded += 1
            if not depth:
                state.inner = None
            grad = kwargs.get("accumulate_grad", True) is False
            call = make_call(outputs[0] if len(outputs) == 1 else outputs,
                             args[1] or args[2] if len(args) > 2 else False,
                             "grad" if grad else "backward",
                             args[3] if grad and len(args) > 3 else None,
                             None, 3)  # the user is above this wrapper and torch's backward
            if call is not None:  # run by another backward: for the rest of that one only
                if depth:
                    state.nested.append(as_call(call))
                else:
                    state.history.records.append(call)
            return result
        return wrapper

    def __enter__(self) -> "Watch":
        original = torch.autograd._engine_run_backward
        self._saved.append((torch.autograd, "_engine_run_backward", original))
        torch.autograd._engine_run_backward = self._wrap(original)
        # The checkpointed regions, in both modes (a cost at each checkpoint call only).
        self._saved += start_recording(self.history, lambda: self._state().history)
        if not self.recording:
            self._active = True
            if not self._forks_watched:  # (a handler cannot be removed: one per watch)
                self._forks_watched = True
                os.register_at_fork(after_in_child=self._record_in_child)
        return self

    _active = _forks_watched = False

    def _record_in_child(self) -> None:
        """In a child the program forks (which is not replayed), every call from now on is
        recorded, as a program's own ``Watch()`` records it."""
        if not self._active or self.recording or \
                torch.autograd._engine_run_backward.__code__ is not self._code:
            return
        self.recording = True
        original = self._saved[0][2]
        torch.autograd._engine_run_backward = self._wrap(original)

    def __exit__(self, *exc_info: Any) -> None:
        self._active = False
        stop_recording(self.history)
        while self._saved:
            owner, name, original = self._saved.pop()
            setattr(owner, name, original)

    def _explained(self, error: BaseException) -> bool:
        """The explained error, even if a wrapper of the program's own (``diagnose_on_error``)
        has added to its message since."""
        return self.error is not None and self.error[0] == id(error) and \
            str(error).startswith(self.error[1])

    def explains(self, error: BaseException | None) -> bool:
        """Whether ``error`` is (or was raised while handling, or from) the explained error."""
        seen = set()
        while error is not None and id(error) not in seen:
            if self._explained(error):
                return True
            seen.add(id(error))
            error = error.__cause__ or error.__context__
        return False
