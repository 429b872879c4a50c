"""The command's replay of a failure (see :mod:`autograd_lens.run.replay_run`): started at the
moment a backward of the first run fails, while the first run explains it and ends
(:class:`Early`), or after the program ended; the finding is then said again from the
recording's evidence, or marked as a guess when there is none; a signal meanwhile stops it.
"""

from __future__ import annotations

import os
import sys
import time
from typing import TYPE_CHECKING, Any

from ..run.lifetime import Stopped, stopped_by_signals
from ..run.replay_run import finish_replay, refusal, start_replay
from ..run.verify import bound

if TYPE_CHECKING:
    from ..run.rerun import Rerun
    from .edit_runs import Ahead
    from .telling import Teller


class Early:
    """The replay started at the moment a backward of the first run fails (the watch hands
    over the failing call's outputs before it explains the failure): it runs while the first
    run explains the failure and the program ends. :func:`replay` takes it when the failure
    it then replays is the same call (a program that catches the error and fails again later
    gets the replay of the later failure: this one is stopped). Asked for without waiting for
    the re-run's process to be ready (it starts once it is: nothing waits here, inside the
    program's backward call), and only by the command's own process (not a child the program
    forked)."""

    def __init__(self, teller: Teller, rerun: Rerun, watching: list, module: str | None,
                 target: list[str]) -> None:
        self.teller, self.rerun, self.watching = teller, rerun, watching
        self.module, self.target = module, target
        self.replaying: Any = None

    def start(self) -> None:
        if os.getpid() != self.teller.pid or not self.watching:
            return
        calls = self.watching[0].count
        if self.replaying is not None:
            if self.replaying.calls_before == calls:
                return
            self.rerun.cancel(self.replaying.run)
            self.replaying = None
        seconds = time.monotonic() - self.teller.started  # as the teller's, at the failure
        self.replaying = start_replay(self.module, self.target, calls, bound(seconds),
                                      self.rerun, waiting=False)

    def take(self, calls_before: int) -> Any:
        """The replay started here, if it replays up to call ``calls_before + 1``; else None
        (one started here is stopped)."""
        replaying, self.replaying = self.replaying, None
        if replaying is not None and replaying.calls_before != calls_before:
            self.rerun.cancel(replaying.run)
            return None
        return replaying


def replay(teller: Teller, replayer: Rerun | None, module: str | None,
           target: list[str], ahead: Ahead | None = None,
           early: Early | None = None) -> BaseException | None:
    """The replay under recording (see :mod:`autograd_lens.run.replay_run`): the finding is then
    said from its evidence; a signal (or Ctrl-C) meanwhile stops it and is returned. With
    ``ahead``, the runs of the first run's edits start as soon as the replay reached the
    failing call; ``early`` holds the replay if it was started at the failure."""
    if replayer is None:
        sys.stderr.write(refusal(os.environ) or "")
        teller.amend(None, "no replay under a distributed launcher")
        return None
    kind = "modified" if teller.finding.inplace else "freed"
    replayed = False
    try:
        with stopped_by_signals():
            replaying = early.take(teller.calls_before) if early is not None else None
            if replaying is None:
                replaying = start_replay(module, target, teller.calls_before,
                                         bound(teller.seconds), replayer, kind)
            replaying.kind = kind
            if ahead is not None:
                ahead.replaying = replaying
            found = finish_replay(replaying, ahead.poll if ahead is not None else None)
            replayed = True
            # Still under the signals' watch: the runs of edits started beside the replay go on.
            teller.amend(found, "" if found else "the replay did not fail the same way "
                         f"(at backward call {teller.calls_before + 1} with the same error)")
    except (Stopped, KeyboardInterrupt) as stopped:
        edits = ahead is not None and bool(ahead.started)  # runs beside it: stopped with it
        if replayed:
            if edits:
                sys.stderr.write("\nautograd_lens: the runs of the suggested edits were stopped "
                                 "(and their temporary copy removed).\n")
        elif edits:
            sys.stderr.write("\nautograd_lens: the replay was stopped, and the runs of the "
                             "suggested edits were stopped (and their temporary copy removed).\n")
        else:
            sys.stderr.write("\nautograd_lens: the replay was stopped.\n")
        if not replayed:
            teller.amend(None, "the replay was stopped")
        return stopped
    return None

