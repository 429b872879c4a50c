"""The command's runs of the candidate edits (see :mod:`autograd_lens.run.verify`): the first
run's edits started beside the replay once it reached the failing call (:class:`Ahead`), then
each edit run in turn (a run started beside the replay taken as it is, when the edits and the
step counted from are the same), then the edit block said; a signal meanwhile stops them.
"""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING, Any

from ..run.lifetime import Stopped, stopped_by_signals
from ..run.verify import Started, announce, bound, finish_verify, start_verify

if TYPE_CHECKING:
    from ..run.counting import CallCounter
    from ..run.rerun import Rerun
    from .telling import Teller


class Ahead:
    """The runs of the first run's edits, started beside the replay once it reached the failing
    call (:meth:`~autograd_lens.run.replay_run.Replaying.failed_at`: the steps made before it, which
    a run of an edit counts from, are known then; the replay goes on making its evidence), one
    at a time (a core for the replay, one for them). The replay's finding can change the edits:
    :func:`verify` takes the result of a run started here only for the same edits, run the
    same way, and stops the rest."""

    def __init__(self, teller: Teller, rerun: Rerun, counter: CallCounter, module: str | None,
                 target: list[str]) -> None:
        self.teller, self.rerun, self.counter = teller, rerun, counter
        self.module, self.target = module, target
        self.waiting = list(teller.fixes)
        self.started: dict[tuple, Any] = {}
        self.replaying: Any = None

    def poll(self) -> None:
        """Start the next run when the replay has reached the failing call and no run of ours
        goes on (called while the replay runs)."""
        if not self.waiting or self.replaying is None or \
                any(isinstance(started, Started) and not started.done()
                    for started in self.started.values()):
            return
        failed = self.replaying.failed_at()
        if failed is None:
            return
        fix = self.waiting.pop(0)
        teller, steps = self.teller, failed["steps_before"]
        self.started[(tuple(fix.edits), steps)] = start_verify(
            list(fix.edits), self.module, self.target, teller.calls_before, self.rerun,
            bound(teller.seconds), self.counter.expected, steps, self.counter.unstepped,
            self.counter.by_hand)

    def take(self, edits: tuple, steps_before: int | None) -> Any:
        """The run started here of ``edits`` counted from ``steps_before`` steps, or None."""
        return self.started.pop((edits, steps_before), None)

    def stop_rest(self) -> None:
        """Stop the runs started here that no edit took."""
        for started in self.started.values():
            if isinstance(started, Started):
                self.rerun.cancel(started.run)
        self.started.clear()


def _steps_before(teller: Teller) -> int | None:
    """The optimizer steps made before the failing call, as the replay recorded them (None
    without a recording: the runs of the edits then count backward calls only)."""
    evidence = getattr(teller.finding, "evidence", None) if teller.finding else None
    return evidence.get("steps_before") if evidence else None


def verify(teller: Teller, rerun: Rerun, counter: CallCounter, module: str | None,
           target: list[str], ahead: Ahead | None = None) -> BaseException | None:
    """The runs of the candidate edits, one after the other (a run that ``ahead`` started beside
    the replay, of the same edits counted from the same step, is taken as it is); then the
    diagnosis and the edit block. A signal (or Ctrl-C) meanwhile stops them and is returned."""
    seconds = bound(teller.seconds)
    runs = []
    try:
        with stopped_by_signals():
            sys.stderr.write(announce(teller.calls_before, seconds, len(teller.fixes)))
            steps = _steps_before(teller)
            for fix in teller.fixes:
                started = ahead.take(tuple(fix.edits), steps) if ahead is not None else None
                if started is None:
                    started = start_verify(list(fix.edits), module, target, teller.calls_before,
                                           rerun, seconds, counter.expected, steps,
                                           counter.unstepped, counter.by_hand)
                runs.append(finish_verify(started))
            if ahead is not None:
                ahead.stop_rest()
    except (Stopped, KeyboardInterrupt) as stopped:
        teller.say_pending()
        teller.say_edits(None, "the runs of the edits were stopped")
        sys.stderr.write("\nautograd_lens: the runs of the suggested edits were stopped "
                         "(and their temporary copy removed).\n")
        return stopped
    teller.say_pending()
    teller.say_edits(runs)
    return None

