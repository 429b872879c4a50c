"""The command's ending, and ``--verify``'s re-run tied to it.

The re-run is a process group of its own (the program it runs may start processes too); it is
stopped as a whole when the command ends, however it ends: SIGTERM, SIGHUP and SIGINT (Ctrl-C)
to the command while the re-run goes on raise :class:`Stopped` in the command, whose clean-up
stops the group and removes the temporary copy; then the command ends as the signal would have
ended it. A re-run whose command is killed outright (SIGKILL) is told by the system (Linux's
parent-death signal): the re-run's process then removes its folder and kills its group (see
:mod:`autograd_lens.run.verify`), and each run it forked is killed with it.
"""

from __future__ import annotations

import atexit
import contextlib
import ctypes
import os
import signal
import sys
from typing import Any, Iterator

SIGNALS = tuple(getattr(signal, name) for name in ("SIGTERM", "SIGHUP", "SIGINT")
                if hasattr(signal, name))


class Stopped(BaseException):
    """A signal asked the command to stop (not an Exception: nothing of ours catches it)."""

    def __init__(self, signum: int) -> None:
        super().__init__(signum)
        self.signum = signum


def _raise_stopped(signum: int, frame: Any) -> None:
    raise Stopped(signum)


@contextlib.contextmanager
def stopped_by_signals() -> Iterator[None]:
    """While active (in the main thread), the signals that end a command raise
    :class:`Stopped`; the handlers before are put back after."""
    saved = {}
    try:
        for signum in SIGNALS:
            saved[signum] = signal.signal(signum, _raise_stopped)
    except ValueError:  # not the main thread: leave the handlers alone
        pass
    try:
        yield
    finally:
        for signum, handler in saved.items():
            signal.signal(signum, handler)


_ending: list[int] = []


def _end_by_signal() -> None:
    if _ending:
        end_now(_ending[0])


def end_by_signal_at_exit(signum: int) -> None:
    """End the process by ``signum`` once the interpreter has run the program's ``atexit``
    handlers, as Python ends a program that a KeyboardInterrupt stopped."""
    _ending[:] = [signum]


def watch_for_exit() -> None:
    """Register, before the program can register its own, the last ``atexit`` handler: the one
    that ends the process by a signal when asked (``atexit`` runs the newest first)."""
    atexit.unregister(_end_by_signal)
    atexit.register(_end_by_signal)


def end_now(signum: int) -> None:
    """End the process by ``signum`` now, as the signal itself would have ended it."""
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(Exception):
            stream.flush()
    signal.signal(signum, signal.SIG_DFL)
    os.kill(os.getpid(), signum)


def die_with_parent(signum: int = signal.SIGKILL) -> None:
    """In a re-run's process: get ``signum`` (by default be killed) when the process that
    started it ends, however it ends (Linux)."""
    with contextlib.suppress(Exception):
        ctypes.CDLL(None, use_errno=True).prctl(1, signum)  # PR_SET_PDEATHSIG
    if os.getppid() == 1:  # the parent ended before the call above: end now
        os.kill(os.getpid(), signum)


def stop_group(pid: int) -> None:
    """Kill the process group ``pid`` leads (the re-run and whatever it started)."""
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pid, signal.SIGKILL)
