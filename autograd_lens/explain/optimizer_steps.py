"""The optimizer steps a program takes, recorded as they run.

A weight that a node saved can be changed by an optimizer's ``step()`` or by the program's own
in-place write (``p.clamp_(-c, c)`` under ``torch.no_grad()``). The source alone cannot say
which one ran between the forward and the failing backward: a ``step()`` further down a loop's
body may not have run yet. While the guard (:class:`~autograd_lens.text.on_error.diagnose_on_error`,
where there is no replay) is active, :class:`StepLog` records each ``step()``
that ends (PyTorch's global optimizer step hook): which optimizer, the sequence number the
newest node had then (every node made before the step has a smaller one), and the line of the
program that called it. :func:`step_after` then answers: did a step of the optimizer that holds
the weight run after the node saved it, and where. The command's first run records no step
(it would cost each step a few microseconds): its replay records every step with the rest
(:mod:`autograd_lens.run.record`).

>>> import torch
>>> w = torch.nn.Parameter(torch.ones(2))
>>> opt = torch.optim.SGD([w], lr=0.1)
>>> with StepLog() as log:
...     node = (w * 2).sum().grad_fn
...     before = step_after(log.steps, w, node)
...     (w * 2).sum().backward(); opt.step()
...     after = step_after(log.steps, w, node)
>>> before is None, after is not None
(True, True)
"""

from __future__ import annotations

import collections
import linecache
import sys
import weakref
from typing import Any, NamedTuple

import torch

from ..lens.history import _CALLERS_SKIP
from ..lens.sequence_numbers import newest_number, sequence

KEPT = 256  # the newest steps kept (a long run takes many)


class StepRecord(NamedTuple):
    """One ``step()`` that ran: its optimizer (a weak reference), the newest node's sequence
    number then, and where the program called it."""

    optimizer: Any
    number: int
    file: str
    line: int
    function: str

    def text(self) -> str:
        """The line of the program that called it, as written."""
        return linecache.getline(self.file, self.line).strip() if self.line else ""


class StepLog:
    """Records the optimizer steps that run while it is active (``with StepLog() as log``)."""

    def __init__(self) -> None:
        self.steps: collections.deque[StepRecord] = collections.deque(maxlen=KEPT)
        self._handle: Any = None

    def _record(self, optimizer: Any, args: Any, kwargs: Any) -> None:
        frame = sys._getframe(1)
        while frame is not None and frame.f_code.co_filename.startswith(_CALLERS_SKIP):
            frame = frame.f_back
        where = ("", 0, "") if frame is None else (
            frame.f_code.co_filename, frame.f_lineno, frame.f_code.co_name)
        self.steps.append(StepRecord(weakref.ref(optimizer), newest_number(), *where))

    def __enter__(self) -> "StepLog":
        hooks = sys.modules.get("torch.optim.optimizer")  # torch.optim deletes its name
        register = getattr(hooks, "register_optimizer_step_post_hook", None)
        if register is not None:
            self._handle = register(self._record)
        return self

    def __exit__(self, *exc_info: Any) -> None:
        if self._handle is not None:
            self._handle.remove()
            self._handle = None


def _holds(optimizer: Any, leaf: torch.Tensor) -> bool:
    return optimizer is not None and any(
        p is leaf for group in optimizer.param_groups for p in group["params"])


def step_after(steps: Any, leaf: torch.Tensor, node: Any) -> StepRecord | None:
    """The newest recorded step of an optimizer holding ``leaf`` that ran after ``node`` was
    made (None: no such step ran)."""
    made = sequence(node)
    for record in reversed(steps):
        if record.number > made and _holds(record.optimizer(), leaf):
            return record
    return None
