"""The command, ``python -m autograd_lens`` (:func:`main`): the program run as ``python`` runs it,
and what follows when a backward fails.

The order a failure goes through: the first run, watched just enough to catch the failure and
count the calls (:mod:`autograd_lens.run.watch`); the replay up to the failing call under recording
(:mod:`autograd_lens.text.replay_step`, :mod:`autograd_lens.run.replay_run`,
:mod:`autograd_lens.run.record`), whose evidence the finding is then said from
(:mod:`autograd_lens.explain.recorded`); the runs of the candidate edits in the sandbox
(:mod:`autograd_lens.text.edit_runs`, :mod:`autograd_lens.run.verify`,
:mod:`autograd_lens.run.sandbox`); then the text and the report (:mod:`autograd_lens.text.telling`).
"""

from __future__ import annotations

import contextlib
import os
import signal
import sys
import tempfile
from typing import Any

from ..run.arrival import OnTorch
from ..run.counting import CallCounter
from ..run.launched import verify_skipped
from ..run.lifetime import Stopped, end_by_signal_at_exit, end_now, watch_for_exit
from ..run.replay_run import refusal
from ..run.rerun import Rerun, forkable
from ..run.running import run_as_main
from ..run.sandbox_folder import root_of
from ..run.user_traceback import print_traceback
from .arguments import bad_use, check_report, check_script, parser, split
from .child_processes import child_note, from_a_child
from .edit_runs import Ahead, verify
from .replay_step import Early, replay
from .spawned import Spawning
from .telling import Teller
from .usage import USAGE


def main(argv: list[str] | None = None) -> int:
    """Run the command; returns the exit code (a script's ``sys.exit`` passes through)."""
    own, target = split(list(sys.argv[1:] if argv is None else argv))
    options = parser().parse_args(own)
    skipped = verify_skipped(os.environ) if options.verify else ""
    verifying = options.verify and not skipped
    if options.module is None:
        if not target:
            bad_use(f"no script given; usage: {USAGE.splitlines()[0]}")
        if target[0] == "-c" and len(target) < 2:
            bad_use("argument expected for the -c option")
        text = target[0] in ("-c", "-")  # a program without a file: its edits cannot be run
        if text and verifying:
            skipped = ("the program was given as text (-c or on standard input), not in a file "
                       "that an edit could change")
            verifying = False
        elif not text:
            check_script(target[0])
    report = check_report(options.report)
    watch_for_exit()
    watching: list = []
    counter = CallCounter() if verifying else None
    not_run = skipped or "--no-verify"
    teller = Teller(report, lambda: watching[0].count if watching else 0, verifying, not_run)
    teller.write()  # "error": null until a backward fails (so also after an os._exit)
    replaying = refusal(os.environ) is None
    # One process for the replay and the runs of the edits, started now: it copies the folder
    # and imports torch while the first run goes on (forked from this process, where this is a
    # clean copy with torch imported: see forkable).
    rerun = Rerun(root_of(options.module, target, os.getcwd()), fork=forkable()) \
        if verifying or replaying else None
    # A child the program starts (forked or spawned) hands its failures to this process through
    # this file.
    teller.children = os.path.join(rerun.folder, "children.jsonl") if rerun is not None else \
        _children_file()
    ahead = None  # the runs of the first run's edits started beside the replay
    # The replay, started at the failure while the first run explains it and ends.
    early = Early(teller, rerun, watching, options.module, target) \
        if rerun is not None and replaying else None
    ended_by_it = False  # the diagnosed error ended the program: its summary is said last
    child = False  # this is a child the program forked (os.fork), ending as the program does
    try:
        code, ending, uncaught = _first_run(
            OnTorch(lambda: _watching(teller, watching, counter, not replaying, early)),
            options.module,
            target, Spawning(teller.pid, teller.children, os.getcwd()))
        child = os.getpid() != teller.pid
        ended_by_it = uncaught is not None and bool(watching) and \
            watching[0].explains(uncaught) and not child
        if uncaught is not None and not ended_by_it and not child and \
                (from_a_child(uncaught) or teller.from_children()):
            children = teller.from_children()
            said = [c for c in children if c.get("error") and c["error"] in str(uncaught)]
            sys.stderr.write(child_note(said or children))
        del uncaught
        if child:  # no replay, no run of the edits, no report: the parent's
            pass
        elif teller.finding is not None and not isinstance(ending, (KeyboardInterrupt, Stopped)):
            ahead = Ahead(teller, rerun, counter, options.module, target) \
                if verifying and rerun is not None and replaying else None
            ending = replay(teller, rerun if replaying else None, options.module,
                            target, ahead, early) or ending
        if child:
            pass
        elif verifying and rerun is not None and teller.finding is not None and teller.fixes and \
                not isinstance(ending, (KeyboardInterrupt, Stopped)):
            ending = verify(teller, rerun, counter, options.module, target, ahead) or ending
        else:
            teller.say_pending()
            teller.say_edits(None, "the runs of the edits were stopped" if ahead is not None
                             and ahead.started else "the program was stopped before they could run")
    finally:
        if not child:
            teller.say_pending()
            teller.write()  # before the re-run's folder, which holds the children's file, goes
            if rerun is not None:
                rerun.close()
            if rerun is None and teller.children:
                with contextlib.suppress(OSError):
                    os.remove(teller.children)
            if ended_by_it:
                sys.stderr.write(teller.summary())
    if isinstance(ending, Stopped) and ending.signum != signal.SIGINT:
        end_now(ending.signum)
    if isinstance(ending, (KeyboardInterrupt, Stopped)):
        end_by_signal_at_exit(signal.SIGINT)  # after the program's atexit handlers, as Python
        return 130
    if isinstance(ending, SystemExit):
        raise ending
    return code


def _watching(teller: Teller, watching: list, counter: CallCounter | None,
              recording: bool = False, early: "Early | None" = None) -> list:
    """The watch, made once the program imports torch (kept in ``watching``: its count of
    calls is the failing call's number); at the failure, before the watch explains it, it
    starts the replay (``early``) and hands the failing call's outputs to ``counter``, which
    keeps the parameters that the runs of the edits compare with (nothing else runs on each
    call: the optimizer steps before the failure are the replay's). It keeps where each call
    was made only when ``recording`` (no replay will: under a distributed launcher)."""
    from ..run.watch import Watch

    def at_failure(outputs: Any) -> None:
        if early is not None:
            early.start()
        if counter is not None:
            counter.keep(outputs)

    watching.append(Watch(on_failure=teller.failed, on_repeat=teller.repeated, recording=recording,
                          on_outputs=at_failure if early or counter else None))
    return watching[-1:]


def _children_file() -> str:
    """A new empty file for the failures of the program's forked children (without a re-run's
    folder to hold it: under a distributed launcher)."""
    handle, path = tempfile.mkstemp(prefix="autograd_lens_children_", suffix=".jsonl")
    os.close(handle)
    return path


def _first_run(watching: OnTorch, module: str | None, target: list[str], spawning: Spawning
               ) -> tuple[int, BaseException | None, BaseException | None]:
    """Run the program under the watch (its children started by spawn or forkserver watched
    too): (exit code, the SystemExit or KeyboardInterrupt that ended it, the error that ended
    it). An error is printed as Python prints it, without this command's frames."""
    try:
        with watching, spawning:
            run_as_main(module, target)
    except (SystemExit, KeyboardInterrupt) as ending:
        if isinstance(ending, KeyboardInterrupt):
            print_traceback(ending)
        return 0, ending, None
    except BaseException as caught:  # noqa: BLE001 - reported as Python would, then explained
        print_traceback(caught)
        return 1, None, caught
    return 0, None, None

