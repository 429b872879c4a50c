"""Adding the diagnosis to the freed-graph (or in-place) error at the moment backward fails.

:class:`diagnose_on_error` wraps the function through which ``Tensor.backward``,
``torch.autograd.backward`` and ``torch.autograd.grad`` run the engine while it is active (as the
command's watch does); ``%load_ext autograd_lens`` does it for every cell of a notebook, and names
places as the notebook shows them (see :mod:`autograd_lens.source.places`).
"""

from __future__ import annotations

import contextlib
import functools
import threading
from collections import deque
from typing import Any, Callable

import torch

from ..lens.after_failure import Failure
from ..predict.diagnose import diagnose_after_failure
from ..lens.errors import error_kind
from ..lens.graph import breadth_first
from ..lens.history import Call, History, as_call, make_call, start_recording, stop_recording
from ..lens.sequence_numbers import newest_number, reaches_before
from ..explain.optimizer_steps import StepLog
from ..source.places import cell_numbers
from ..explain.situation import _known as known_nodes  # alive nodes, where an earlier root would be
from ..explain.situation import explain
from .edit_block import edit_text
from ..run.unseen import without_ours
from ..source.user_frames import user_frames


_state = threading.local()


class diagnose_on_error(contextlib.ContextDecorator):
    """Add the diagnosis to the freed-graph (or in-place) error when backward fails.

    While active, every call of ``Tensor.backward``, ``torch.autograd.backward`` and
    ``torch.autograd.grad`` is recorded (a few microseconds; nothing of its graph is read). If a
    call raises the freed-graph or the in-place error, its graph is read then, as it was before
    the call (the saved tensors the failing call freed itself, before it reached the stale
    node, are told apart by sequence numbers: see ``autograd_lens.lens.after_failure``), and the
    diagnosis is appended to the error's message, with the variables of your code that carry
    the old graph in (ranked as ``autograd_lens.explain.carriers`` says). Nothing else changes, and
    everything is restored on exit. Use it as a context manager around a training step or as
    a decorator on the step function.

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
        self._steps = StepLog()  # optimizer steps: a weight's write named only if it ran
        # Nodes numbered up to this may have been gone through by a backward: those made
        # before the guard started, and those of the graphs the recorded calls went through.
        self._mark = -1
        self._start = -1  # nodes numbered up to this were made before the guard first started
        self._failures: deque[tuple[Call, int]] = deque(maxlen=8)  # failed calls, see _failed
        self._cells: dict[str, int] | None = None  # in a notebook: each cell's file, its number

    def _suspects(self) -> Any:
        return self.suspects() if callable(self.suspects) else self.suspects

    def _wrap(self, original: Callable) -> Callable:
        guard, state, records, cells = self, _state, self.history.records, self._cells

        @functools.wraps(original)
        def wrapper(outputs, *args, **kwargs):
            # torch's own call: (outputs, gradients, retain_graph, create_graph, inputs, ...,
            # accumulate_grad=True for backward, False for autograd.grad)
            nested = getattr(state, "busy", False)
            state.busy = True
            try:
                result = original(outputs, *args, **kwargs)
            except BaseException as error:
                # Re-raised without this wrapper's entry (a bare raise adds none): the
                # traceback shows the frames it would show without the guard.
                error.__traceback__ = without_ours(error.__traceback__)
                if not nested:
                    try:
                        guard._failed(error, outputs, args, kwargs)
                    except BaseException as stopped:  # Ctrl-C during the diagnosis
                        stopped.__traceback__ = None
                        raise
                raise
            finally:
                state.busy = nested
            if nested:  # a backward run by a backward: the outer call says it all
                return result
            # The call that worked, recorded: the nodes it went through are now old.
            grad = kwargs.get("accumulate_grad", True) is False
            call = make_call(outputs[0] if len(outputs) == 1 else outputs,
                             args[1] or args[2] if len(args) > 2 else False,
                             "grad" if grad else "backward",
                             args[3] if grad and len(args) > 3 else None, cells, _TO_USER)
            if call is not None:
                records.append(call)
                if call[1] > guard._mark:  # its sequence
                    guard._mark = call[1]
            return result
        return wrapper

    def _failed(self, error: BaseException, outputs: tuple, args: tuple, kwargs: dict) -> None:
        """A freed-graph (or in-place) error gets the diagnosis; any other goes on as it is. The
        nodes the call ran are old from now on, whatever it raised."""
        kind = error_kind(error) if isinstance(error, RuntimeError) else None
        retained = bool(args[1]) if len(args) > 1 else False
        first = None
        if kind is not None:
            report, first = self._diagnosed(kind, retained, outputs, args, kwargs)
            # Quotes, not backticks, in an error message (tracebacks are often rendered by
            # tools that treat backticks as markup).
            text = self._with_carriers(error, outputs[0] if len(outputs) == 1 else outputs, report)
            if text:
                error.args = (f"{error}\n\n{text}",) + tuple(error.args[1:])
        try:
            call = make_call(outputs[0] if len(outputs) == 1 else outputs, retained, "backward")
        except Exception:  # noqa: BLE001 - never let the record break the call
            call = None
        if call is not None:
            self._failures.append((as_call(call), -1 if first is None else first))
            self._mark = max(self._mark, call[1])

    def _diagnosed(self, kind: str, retained: bool, outputs: tuple, args: tuple,
                   kwargs: dict) -> tuple[Any, int | None]:
        """The report of the graph as it was before the failing call (None when no node of it
        was made before the latest backward, or when it cannot be made), and the number of the
        node the call failed at."""
        if not reaches_before(outputs, self._mark):
            return None, None
        grad = kwargs.get("accumulate_grad", True) is False
        inputs = (args[3] or None) if len(args) > 3 else None
        root = outputs[0] if len(outputs) == 1 else outputs
        try:
            frames = user_frames()
            failure = Failure(kind, retained, self._mark, self._start,
                              tuple((c, -1) for c in self.history.calls) + tuple(self._failures),
                              known_nodes(breadth_first(t.grad_fn for t in outputs), frames))
            frames = None
            return diagnose_after_failure(root, failure, self._suspects(), inputs=inputs,
                                          grad=grad)
        except Exception:  # noqa: BLE001 - never let the diagnosis break the call
            return None, None

    def _with_carriers(self, error: RuntimeError, root: Any, report: Any) -> str:
        """The report's text with the carriers named, and the pattern decided from the same
        evidence as the command's: the carriers, the graph (the old part found from the
        report's frontier, as it was before the call) and the calls recorded here. Without
        a report (the graph was made since the latest backward), or with nothing stale in it
        (a backward that another backward ran), it is explained from the recorded calls."""
        text = "" if report is None else str(report)
        try:
            old = set()
            for item in (report.frontier if report is not None else ()):
                old.update(n for n in breadth_first([item.node]) if not hasattr(n, "variable"))
            frames = user_frames()
            finding = explain(error, root, self.history.calls, frames,
                              old=old if old else None, nested=not old,
                              regions=list(self.history.regions),
                              steps=list(self._steps.steps))
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
        lines[at:] = finding.carrier_lines() + finding.pattern_lines()
        return ("\n".join(lines) + edit).replace("`", "'")

    def __enter__(self) -> "diagnose_on_error":
        # The function through which Tensor.backward, autograd.backward and autograd.grad
        # (however the program imported them) run the engine, as the command's watch does.
        original = torch.autograd._engine_run_backward
        saved = [(torch.autograd, "_engine_run_backward", original)]
        self._mark = max(self._mark, newest_number())
        if self._start < 0:
            self._start = self._mark
        self._cells = cell_numbers()
        torch.autograd._engine_run_backward = self._wrap(original)
        saved += start_recording(self.history)
        if not self._saved:
            self._steps.__enter__()
        self._saved.append(saved)
        return self

    def __exit__(self, *exc_info) -> None:
        stop_recording(self.history)
        for owner, name, original in reversed(self._saved.pop()):
            setattr(owner, name, original)
        if not self._saved:
            self._steps.__exit__()


def _edit(finding: Any, frame: Any) -> str:
    """The suggested edit of the program's lines (a cell's, in a notebook), after a blank
    line; or why there is none; empty without a pattern."""
    if finding.pattern is None:
        return ""
    from ..source.bound_names import names_bound

    where = None if frame is None else (frame.f_code.co_filename, frame.f_lineno)
    fixes, unbound = names_bound(finding.pattern.fixes(finding.carriers, where))
    text = "".join(f"autograd_lens: an edit was left out: {why}.\n" for why in unbound)
    text += edit_text(fixes, finding.pattern, not_run=NOT_RUN_HERE)
    return "\n\n" + text.rstrip("\n") if text else ""


NOT_RUN_HERE = ("here the program is not run again: the command, python -m autograd_lens, runs "
                "each edit in a sandbox before it calls one the fix")


# From make_call, called by the wrapper: the wrapper, then torch.autograd.backward (or grad),
# which alone calls the engine's function; the user's frame is above them.
_TO_USER = 3

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
