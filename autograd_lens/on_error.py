"""Adding the diagnosis to the freed-graph (or in-place) error at the moment backward fails.

:class:`diagnose_on_error` wraps ``Tensor.backward``, ``torch.autograd.backward`` and
``torch.autograd.grad`` while it is active; ``%load_ext autograd_lens`` does it for every cell of a
notebook.
"""

from __future__ import annotations

import contextlib
import functools
import sys
import threading
from typing import Any, Callable

import torch

from .diagnose import diagnose
from .errors import error_kind
from .graph import breadth_first
from .history import Call, History, make_call, start_recording, stop_recording
from .places import cell_number, is_cell
from .situation import explain
from .telling import edit_text
from .unseen import leave_unseen
from .watch import user_frames


_state = threading.local()


class diagnose_on_error(contextlib.ContextDecorator):
    """Add the diagnosis to the freed-graph (or in-place) error when backward fails.

    While active, every call to ``Tensor.backward``, ``torch.autograd.backward`` and
    ``torch.autograd.grad`` is diagnosed first (a walk of the graph, cheaper than the backward
    itself; the report is kept only until the call returns). If the call then raises the
    freed-graph or the in-place error, the diagnosis is appended to the error's message, with the
    variables of your code that carry the old graph in (ranked as ``autograd_lens.carriers``
    says). Nothing else changes, and everything is
    restored on exit. Use it as a context manager around a
    training step or as a decorator on the step function.

    Args:
        suspects: as in :func:`diagnose`; or a function of no arguments that returns them, called
            when the error happens (so it sees the current values).

    >>> import torch
    >>> w = torch.ones(2, requires_grad=True)
    >>> loss = (w * w).sum()
    >>> loss.backward()
    >>> try:
    ...     with diagnose_on_error():
    ...         loss.backward()
    ... except RuntimeError as err:
    ...     print(str(err).splitlines()[2])
    autograd_lens.diagnose: backward will FAIL. It reaches 2 saved tensors freed by an earlier backward.
    """

    def __init__(self, suspects: Any = None):
        self.suspects = suspects
        self.history = History()
        self._saved: list[tuple[Any, str, Any]] = []

    def _suspects(self) -> Any:
        return self.suspects() if callable(self.suspects) else self.suspects

    def _wrap(self, original: Callable, pick: Callable[..., tuple[Any, Any, bool]]) -> Callable:
        guard = self

        @functools.wraps(original)
        def wrapper(*args, **kwargs):
            try:
                if getattr(_state, "busy", False):
                    return original(*args, **kwargs)
                return guard._call(original, pick, args, kwargs)
            except BaseException:
                leave_unseen(sys._getframe())  # the traceback shows the user's frames only
                raise
        return wrapper

    def _call(self, original: Callable, pick: Callable[..., tuple[Any, Any, bool]],
              args: tuple, kwargs: dict) -> Any:
        """The call, diagnosed first; a freed-graph (or in-place) error gets the diagnosis."""
        _state.busy = True
        try:
            root, inputs, grad, retained = pick(*args, **kwargs)
            try:
                report = diagnose(root, self._suspects(), inputs=inputs, grad=grad)
            except Exception:  # noqa: BLE001 - never let the diagnosis break the call
                report = None
            try:
                result = original(*args, **kwargs)
            except RuntimeError as error:
                if report is not None and error_kind(error) is not None:
                    # Quotes, not backticks, in an error message (tracebacks are often
                    # rendered by tools that treat backticks as markup).
                    text = self._with_carriers(str(report), error, root, report)
                    error.args = (f"{error}\n\n{text}",) + tuple(error.args[1:])
                raise
            self.history.add(_numbered(make_call(root, retained, "grad" if grad else "backward",
                                                 inputs)))
            return result
        finally:
            _state.busy = False

    def _with_carriers(self, text: str, error: RuntimeError, root: Any, report: Any) -> str:
        """The report's text with the carriers named, and the pattern decided from the same
        evidence as the command's: the carriers, the graph (the old part found from the
        report's frontier, read before the call, so exact) and the calls recorded here. A
        backward that another backward ran (nothing stale before the call) is explained from
        the recorded calls."""
        try:
            old = set()
            for item in report.frontier:
                old.update(n for n in breadth_first([item.node]) if not hasattr(n, "variable"))
            frames = user_frames()
            finding = explain(error, root, list(self.history.calls), frames,
                              old=old if old else None, nested=not old,
                              regions=list(self.history.regions))
            edit = _edit(finding, frames[0] if frames else None)
        except Exception:  # noqa: BLE001 - never let the diagnosis break the call
            return text.replace("`", "'")
        finally:
            frames = None
        if not old:  # the report saw nothing stale before the call: the finding says it all
            return (str(finding) + edit).replace("`", "'")
        lines = text.split("\n")
        at = next((i for i, line in enumerate(lines) if line.startswith("Likely pattern")),
                  len(lines))
        lines[at:] = finding.carrier_lines() + finding.pattern_lines(every_page=True)
        return ("\n".join(lines) + edit).replace("`", "'")

    def __enter__(self) -> "diagnose_on_error":
        def tensor_pick(self_, gradient=None, retain_graph=None, create_graph=False, inputs=None):
            return self_, inputs, False, bool(retain_graph or create_graph)

        def backward_pick(tensors, grad_tensors=None, retain_graph=None, create_graph=False,
                          grad_variables=None, inputs=None):
            return tensors, inputs, False, bool(retain_graph or create_graph)

        def grad_pick(outputs, inputs, grad_outputs=None, retain_graph=None, create_graph=False,
                      *args, **kwargs):
            return outputs, inputs, True, bool(retain_graph or create_graph)

        targets = [(torch.Tensor, "backward", tensor_pick),
                   (torch.autograd, "backward", backward_pick),
                   (torch.autograd, "grad", grad_pick)]
        saved = []
        for owner, name, pick in targets:
            original = getattr(owner, name)
            saved.append((owner, name, original))
            setattr(owner, name, self._wrap(original, pick))
        saved += start_recording(self.history)
        self._saved.append(saved)
        return self

    def __exit__(self, *exc_info) -> None:
        stop_recording(self.history)
        for owner, name, original in reversed(self._saved.pop()):
            setattr(owner, name, original)


def _numbered(call: Call | None) -> Call | None:
    """The call, with the number of the notebook cell's run that made it (a cell run twice
    keeps one file: the number tells the runs apart)."""
    if call is None or not is_cell(call.where[0]):
        return call
    return call._replace(cell=cell_number(call.where[0]) or 0)


def _edit(finding: Any, frame: Any) -> str:
    """The suggested edit of the program's lines (a cell's, in a notebook), after a blank
    line; or why there is none; empty without a pattern."""
    if finding.pattern is None:
        return ""
    where = None if frame is None else (frame.f_code.co_filename, frame.f_lineno)
    text = edit_text(finding.pattern.fixes(finding.carriers, where), finding.pattern)
    return "\n\n" + text.rstrip("\n") if text else ""


_extension_guard: diagnose_on_error | None = None


def load_ipython_extension(ipython: Any) -> None:
    """``%load_ext autograd_lens``: every cell's freed-graph error carries a diagnosis."""
    global _extension_guard
    if _extension_guard is None:
        _extension_guard = diagnose_on_error()
        _extension_guard.__enter__()
    print("autograd_lens: a freed-graph error will now carry a diagnosis "
          "(%unload_ext autograd_lens to stop).")


def unload_ipython_extension(ipython: Any) -> None:
    """``%unload_ext autograd_lens``: restore PyTorch's functions."""
    global _extension_guard
    if _extension_guard is not None:
        _extension_guard.__exit__(None, None, None)
        _extension_guard = None
