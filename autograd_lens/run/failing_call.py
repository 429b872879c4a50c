"""A backward call of the watched program that failed (see :class:`autograd_lens.run.watch.Watch`,
whose wrappers hand it over): the same error again at the same call of the program's is counted
and told in one line, not explained again; the failing call's outputs are handed over first; the
finding is made from the thread's recorded calls and the program's frames, at that moment; and a
call run inside another (a reentrant checkpoint's, a custom Function's ``autograd.grad``) leaves
its finding for the outer call, which keeps it when its own names no carrier.
"""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING, Any

from ..lens.errors import error_kind
from ..explain.finding import Finding
from ..explain.situation import explain
from .thread_state import State
from ..source.user_frames import first_user_frame, user_frames

if TYPE_CHECKING:
    from .watch import Watch


def explain_failure(watch: Watch, error: RuntimeError, roots: Any) -> None:
    """What :meth:`Watch.failed <autograd_lens.run.watch.Watch.failed>` does: explain ``error``
    (raised by a backward from ``roots``) for ``watch``; never raises."""
    kind = error_kind(error)
    if kind is None:
        return
    # Every call here is a new error: a nested backward's reaches the outer one as the
    # outer's call (below), never twice. (Not matched by id(): a caught and dropped error's
    # address, and its message, can be the next error's.)
    thread = watch._state()
    nested = (thread.depth if watch.recording else watch._running()) > 1
    if not nested and watch.on_repeat is not None:
        # The same error at the same call of the program's, again (a loop that catches it
        # and skips the batch): counted and said in one line, in well under a millisecond.
        caller = first_user_frame(sys._getframe(3))  # past Watch.failed
        where = None if caller is None else \
            (caller.f_code.co_filename, caller.f_lineno, kind)
        del caller
        if where is not None and where in watch.places:
            watch.places[where] += 1
            thread.inner, thread.inner_roots = None, []
            if watch.finding is not None:
                watch.error = (id(error), str(error))
            watch.on_repeat(where[0], where[1], watch.places[where])
            return
        if where is not None:
            watch.places[where] = 0
    if watch.on_outputs is not None and nested:
        thread.inner_roots.append(roots)
    elif watch.on_outputs is not None:
        try:
            watch.on_outputs((*roots, *(r for inner in thread.inner_roots for r in inner)))
        except Exception:  # noqa: BLE001 - a reader of ours must never add an error
            pass
        thread.inner_roots = []
    frames = user_frames()
    finding = finding_of(error, roots, frames, thread, nested)
    if nested:
        if finding is not None and finding.carriers:
            thread.inner = finding
        elif thread.inner is None:
            thread.inner = False  # nested, but nothing named from inside
        del frames
        return
    finding = or_inner(finding, thread)
    thread.inner = None
    watch.finding = finding
    # Not the error itself: its traceback holds the program's frames and their tensors.
    watch.error = None if finding is None else (id(error), str(error))
    try:
        if finding is not None and watch.on_failure is not None:
            watch.on_failure(finding, frames[0] if frames else None)
    finally:
        del frames


def finding_of(error: RuntimeError, roots: Any, frames: list[Any], thread: State,
               nested: bool) -> Finding | None:
    """The finding of ``error`` from this thread's recorded calls and ``frames``."""
    calls = list(thread.history.calls) + (thread.nested if nested else [])
    try:
        return explain(error, roots, calls, frames,
                       nested=nested or thread.inner is not None,
                       regions=list(thread.history.regions),
                       steps=None,  # not recorded here: the replay records them
                       inside=list(thread.nested) if nested else [])
    except Exception:  # noqa: BLE001 - explaining must never add an error of its own
        return None


def or_inner(finding: Finding | None, thread: State) -> Finding | None:
    """The outer call's finding, or, when it names no carrier, the one a backward run inside it
    made (a reentrant checkpoint's, a custom Function's ``autograd.grad``)."""
    if thread.inner and (finding is None or not finding.carriers):
        return thread.inner
    return finding
