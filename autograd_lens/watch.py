"""Watching a program's backward calls, so that a failing one can be explained.

:class:`Watch` replaces ``torch.autograd.backward`` (which ``Tensor.backward`` calls) and
``torch.autograd.grad`` with thin wrappers while it is active. A call that works is recorded in
a few microseconds (see :mod:`autograd_lens.history`: weak references and a sequence number,
nothing that keeps a tensor alive). A call that raises the freed-graph or in-place error is
explained at that moment, while the program's frames still hold its variables; the error
itself goes on unchanged.
"""

from __future__ import annotations

import functools
from typing import Any, Callable

import torch

from .errors import error_kind
from .candidates import NOT_USERS
from .history import History, make_call, start_recording, stop_recording, user_frame
from .situation import Finding, explain



def user_frames() -> list[Any]:
    """The user's frames, innermost first, from the caller of backward outwards."""
    frames = []
    frame = user_frame(2)
    while frame is not None:
        name = frame.f_code.co_filename
        if not name.startswith(NOT_USERS) and not name.startswith("<frozen"):
            frames.append(frame)
        frame = frame.f_back
    return frames


def _argument(args: tuple, kwargs: dict, index: int, name: str, default: Any = None) -> Any:
    return args[index] if len(args) > index else kwargs.get(name, default)


class Watch:
    """Record backward and ``autograd.grad`` calls; explain the one that fails.

    After the error, :attr:`finding` holds the :class:`~autograd_lens.situation.Finding` and
    :attr:`error` the exception it explains.
    """

    def __init__(self) -> None:
        self.history = History()
        self.finding: Finding | None = None
        self.error: tuple[int, str] | None = None  # (id, message) of the explained error
        self._saved: list[tuple[Any, str, Any]] = []
        self.depth = 0  # backward calls running: more than one, a backward inside a backward
        self.inner: Any = None  # a nested backward failed: its finding (False: none)

    def failed(self, error: RuntimeError, roots: Any) -> None:
        """Explain ``error`` (raised by a backward from ``roots``); never raises.

        A backward run by another backward (a custom Function's backward calling
        ``autograd.grad``, a reentrant checkpoint's) is explained from its own graph, and
        again by the outer backward when the error reaches it: the outer explanation is kept
        when it names a carrier, else the inner one.
        """
        if self._explained(error) or error_kind(error) is None:
            return  # (the same error, passing through an outer wrapper)
        nested = self.depth > 1
        frames = user_frames()
        try:
            finding = explain(error, roots, list(self.history.calls), frames,
                              nested=nested or self.inner is not None,
                              regions=list(self.history.regions))
        except Exception:  # noqa: BLE001 - explaining must never add an error of its own
            finding = None
        finally:
            del frames
        if nested:
            if finding is not None and finding.carriers:
                self.inner = finding
            elif self.inner is None:
                self.inner = False  # nested, but nothing named from inside
            return
        if self.inner and (finding is None or not finding.carriers):
            finding = self.inner
        self.inner = None
        self.finding = finding
        # Not the error itself: its traceback holds the program's frames and their tensors.
        self.error = None if finding is None else (id(error), str(error))

    def _wrap(self, original: Callable, kind: str) -> Callable:
        history, watch = self.history, self
        retain_at = 2 if kind == "backward" else 3

        @functools.wraps(original)
        def wrapper(*args, **kwargs):
            watch.depth += 1
            try:
                result = original(*args, **kwargs)
            except RuntimeError as error:
                watch.failed(error, _argument(args, kwargs, 0, "tensors" if kind == "backward"
                                              else "outputs"))
                raise
            finally:
                watch.depth -= 1
            if watch.depth:  # run by another backward (a custom Function's, a checkpoint's)
                return result
            watch.inner = None
            retained = _argument(args, kwargs, retain_at, "retain_graph") or \
                _argument(args, kwargs, retain_at + 1, "create_graph", False)
            history.add(make_call(args[0] if args else kwargs.get(
                "tensors" if kind == "backward" else "outputs"), retained, kind,
                _argument(args, kwargs, 1, "inputs") if kind == "grad" else None))
            return result
        return wrapper

    def __enter__(self) -> "Watch":
        for name, kind in (("backward", "backward"), ("grad", "grad")):
            original = getattr(torch.autograd, name)
            self._saved.append((torch.autograd, name, original))
            setattr(torch.autograd, name, self._wrap(original, kind))
        self._saved += start_recording(self.history)
        return self

    def __exit__(self, *exc_info: Any) -> None:
        stop_recording(self.history)
        while self._saved:
            owner, name, original = self._saved.pop()
            setattr(owner, name, original)

    def _explained(self, error: BaseException) -> bool:
        return self.error == (id(error), str(error))

    def explains(self, error: BaseException | None) -> bool:
        """Whether ``error`` is (or was raised while handling, or from) the explained error."""
        seen = set()
        while error is not None and id(error) not in seen:
            if self._explained(error):
                return True
            seen.add(id(error))
            error = error.__cause__ or error.__context__
        return False

