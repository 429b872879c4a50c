"""``python -m autograd_lens [--report FILE] [--no-verify] script.py [args...]``: run a script
unchanged, and when its backward fails on a freed (or modified) graph, name the variables that
carry the old graph in, the line where each enters, the pattern, its fix, the book's page about
it, and the fix as an edit of the program's own lines, each edit run in a sandbox before it is
called the fix (see :mod:`autograd_lens.run.verify`; ``--no-verify``: not run).

The order a failure goes through: the first run, watched just enough to catch the failure and
count the calls (:mod:`autograd_lens.run.watch`); the replay up to the failing call under recording
(:mod:`autograd_lens.run.replay_run`, :mod:`autograd_lens.run.record`), whose evidence the finding is
then said from (:mod:`autograd_lens.explain.recorded`); the runs of the candidate edits in the sandbox
(:mod:`autograd_lens.run.verify`, :mod:`autograd_lens.run.sandbox`); then the text and the report.
"""

from __future__ import annotations

import argparse
import contextlib
import importlib.util
import os
import signal
import sys
import tempfile
import time
import types
import zipfile
from typing import Any, NoReturn

from .run.arrival import OnTorch
from .run.counting import CallCounter
from .run.launched import verify_skipped
from .run.lifetime import (Stopped, end_by_signal_at_exit, end_now, stopped_by_signals,
                           watch_for_exit)
from .run.replay_run import finish_replay, refusal, start_replay
from .run.rerun import Rerun
from .run.running import run_as_main
from .run.sandbox_folder import root_of
from .run.unseen import PACKAGE
from .run.verify import Started, announce, bound, finish_verify, start_verify
from .text.spawned import Spawning
from .text.child_processes import child_note, from_a_child
from .text.telling import Teller

_PROG = "python -m autograd_lens"
_USAGE = (f"{_PROG} [--report FILE] [--no-verify] (script.py | -m module) [args ...]\n"
          f"   or: {_PROG} [--report FILE] [--no-verify] (-c code | -) [args ...]")
_DESCRIPTION = """\
Run a Python script (or, with -m, a module) exactly as `python script.py` would: the same
sys.argv, its folder first on sys.path, __name__ == "__main__", the same output and exit code.
If a backward (or torch.autograd.grad) fails with "Trying to backward through the graph a
second time" or with the in-place (version counter) error, Python's usual traceback is followed
by a diagnosis (said at the moment of the failure instead when the program could catch the
error, so that a program that catches it, logs it and exits still gets it): the variables of
your program that carry the old graph into this step (most likely first, each with the file,
line and function where it enters the step), the likely pattern, its fix, and the book's page
about it; then the fix written as an edit of your own lines (a unified diff; where the intent
is unclear, other edits follow, each saying what it computes).
Before the diagnosis is printed, the program is replayed in a second Python process (from the
moment the backward fails) up to the call that failed, under a recorder of every in-place
write, graph node, backward call and optimizer step: the write, the node, the backward that
freed it and the names that hold it are said from that recording. A replay that does not fail
the same way (or none, under torchrun) leaves what the text says about a write, a step or a
loop marked as a guess. The replay runs in the sandbox described below, in a temporary copy of
the program's folder: what it writes there goes with the copy, a write outside it and the
network (but this machine) are refused, and its output is not shown; only a process it starts
(subprocess, os.system) is not held to that.
A program that catches the error and goes on gets the diagnosis in full the first time; the
same error again at the same line is one line ("the same error at train.py:57 again, 3 times so
far"). When the error ends the program, the diagnosis in short (the carrier and its line, the
fix, the edit, the page) is said last. A program that calls diagnose_on_error() itself gets the
diagnosis from it, in the error's message, and from the command only what the replay adds.
A child process the program starts (os.fork; multiprocessing's Process, Pool and
ProcessPoolExecutor workers by the fork, spawn or forkserver method; torch.multiprocessing.spawn)
is watched: its failure is diagnosed there, at once, and listed in the report's "children" with
its pid and how it was started; its output, exit code and results are as under python. Only the
command's own process replays the failure and runs the edits. Not watched: a Python the program
starts otherwise (subprocess.run([sys.executable, ...]), os.system, os.exec*); when the error
that ends the program carries such a process's failure, the command says where it happened.
Healthy runs print nothing extra. The first run, the replay and each edit's run see the
environment that python gives the program (PYTHONPATH, sys.path, the environment variables;
and so do the processes they start), but that a re-run's working folder, its script's folder on
sys.path, PWD and TMPDIR are in its temporary copy. As under python, the folder of the
script's real file (a symbolic link resolved) comes first on sys.path, except under -P; zip
applications and folders with a __main__.py run too; -m, -c and - (the program on standard
input) run as python runs them, with python's errors and exit codes (the edits of a program
given as text are not run); no frame of the command shows in a traceback; options are not
taken abbreviated, as python's are not; "--" may end the command's options.

Before an edit is printed as the fix, it is run: the command applies each suggested edit to a
copy of the program and runs it in a sandbox, one run after the other, each in a new process
forked from one started with the first run (which imports torch meanwhile); the first runs go
on beside the replay, from the moment it reaches the call that failed. The sandbox's
working folder is a temporary copy of the program's folder (small files copied, big ones
linked); a write outside it (open for writing, torch.save, os and shutil's file operations) and
the network (but this machine) are refused, and the run reads no input. A run stops after the
call that failed and two more (or, for an edit that merges backward calls, past the optimizer
step that failed), or when the program ends, or at its bound in time. The first edit that gets
there without an error, every parameter that the failing call would reach and an optimizer
updates still getting a gradient in some call past that point (the run goes on until the
optimizers that update them stepped past it), is printed as the fix;
others that hold as alternatives; one that failed only as a failed attempt, with what
happened; one that could not be checked (the sandbox refused what it needed, it ended before
the failure) with why. That shows the error is gone, not that the edit
computes what you meant. The temporary folder is removed, and the runs stopped, when the command
ends, however it ends. The exit code stays the first run's. --no-verify prints the edits
without running them, said as not run. Under torchrun (or another launcher that set RANK or
LOCAL_RANK with WORLD_SIZE) the edits are not run, and the command says so: a rank's re-run
would wait for the other ranks'. --verify is accepted and does nothing (running is the
default)."""
_EPILOG = """\
examples:
  python -m autograd_lens train.py --epochs 3
  python -m autograd_lens --report diagnosis.json train.py
  python -m autograd_lens --no-verify train.py
  python -m autograd_lens -m mypackage.train"""
_SCRIPT_SUFFIXES = (".py", ".pyw")
_TORCH = os.path.dirname(importlib.util.find_spec("torch").origin) + os.sep


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:
        _bad_use(message)


def _bad_use(message: str) -> NoReturn:
    """Bad use of the command: one line on stderr, exit code 2."""
    sys.stderr.write(f"{_PROG}: error: {message}\n")
    raise SystemExit(2)


def _parser() -> argparse.ArgumentParser:
    # No abbreviations (--rep for --report): Python takes none of its own options abbreviated.
    parser = _Parser(prog=_PROG, usage=_USAGE, description=_DESCRIPTION, epilog=_EPILOG,
                     formatter_class=argparse.RawDescriptionHelpFormatter, allow_abbrev=False)
    parser.add_argument("--report", metavar="FILE",
                        help="also write the diagnosis as JSON to FILE (before the program "
                             "runs, at the failure, after every run and at the end; \"error\" "
                             "is null when no backward failed)")
    parser.add_argument("--no-verify", dest="verify", action="store_false",
                        help="print the suggested edits without running them (they are said "
                             "to be not run)")
    parser.add_argument("--verify", dest="verify", action="store_true",
                        help="run each suggested edit in a sandbox before printing it (the "
                             "default; kept for compatibility)")
    parser.add_argument("-m", dest="module", metavar="module",
                        help="run a module as a script, as `python -m module` does")
    return parser


def _split(argv: list[str]) -> tuple[list[str], list[str]]:
    """The command's own options, and the rest: the script (or module) and its arguments."""
    index = 0
    while index < len(argv):
        word = argv[index]
        if word == "--":  # the end of the command's options, as for python itself
            return argv[:index], argv[index + 1:]
        if word in ("--report", "-m"):
            if word == "-m":
                return argv[:index + 2], argv[index + 2:]
            index += 2
        elif word.startswith("-m") and len(word) > 2:
            return argv[:index + 1], argv[index + 1:]
        elif word == "-c":  # the program as text: its arguments follow it, as for python
            return argv[:index], argv[index:]
        elif word.startswith("-c"):
            return argv[:index], ["-c", word[2:], *argv[index + 1:]]
        elif word.startswith("-") and word != "-":
            index += 1
        else:
            return argv[:index], argv[index:]
    return argv, []


def _check_script(path: str) -> None:
    if not os.path.exists(path):
        _bad_use(f"cannot find the script {path!r}")
    if path.endswith(".ipynb"):
        _bad_use(f"{path!r} is a notebook: in the notebook, run %load_ext autograd_lens in a "
                 "cell before the training cells (this command runs Python scripts)")
    if os.path.isdir(path) or path.endswith(_SCRIPT_SUFFIXES) or zipfile.is_zipfile(path):
        return
    try:
        with open(path, "rb") as handle:
            compile(handle.read(), path, "exec")
    except (SyntaxError, ValueError, UnicodeDecodeError, OSError):
        _bad_use(f"{path!r} is not a Python script")


def _check_report(path: str | None) -> str | None:
    """The report's absolute path (relative to where the command started), once it is known
    that a file can be written there: tried now, before the program runs."""
    if path is None:
        return None
    folder = os.path.dirname(os.path.abspath(path))
    if not os.path.isdir(folder):
        _bad_use(f"cannot write the report {path!r}: the folder {folder!r} does not exist")
    if os.path.isdir(path):
        _bad_use(f"cannot write the report {path!r}: it is a folder")
    existed = os.path.exists(path)
    try:
        with open(path, "a", encoding="utf-8"):
            pass
    except OSError as why:
        _bad_use(f"cannot write the report {path!r}: {why.strerror or why}")
    if not existed:
        os.remove(path)
    return os.path.abspath(path)


def _ours(filename: str) -> bool:
    here = os.path.dirname(os.path.abspath(__file__)) + os.sep
    return filename.startswith((here, "<frozen runpy")) or os.path.basename(filename) == "runpy.py"


def _user_traceback(tb: Any) -> Any:
    """The traceback as ``python script.py`` (or ``python -m module``) would show it: from the
    frame this command's runner runs the program in (the script's, or runpy's for -m, a folder
    or a zip application, as Python's own), without this command's frames below it either."""
    entries = []
    while tb is not None:
        entries.append(tb)
        tb = tb.tb_next
    runner = [i for i, entry in enumerate(entries) if
              entry.tb_frame.f_code.co_filename.startswith(PACKAGE) and
              entry.tb_frame.f_code.co_name in _RUNNERS]
    if runner:
        kept = [e for e in entries[runner[-1] + 1:]
                if not e.tb_frame.f_code.co_filename.startswith(PACKAGE)]
    else:
        kept = [e for e in entries if not _ours(e.tb_frame.f_code.co_filename)]
    rebuilt = None
    for entry in reversed(kept):
        rebuilt = types.TracebackType(rebuilt, entry.tb_frame, entry.tb_lasti, entry.tb_lineno)
    return rebuilt


# The functions of the runner (autograd_lens.run.running) in whose frame the program's code runs.
_RUNNERS = ("run_as_main", "_run_script", "_run_text")


def _failed_at(tb: Any) -> tuple[str, int] | None:
    """The file and line of the user's call of backward (or autograd.grad) that raised: the
    last frame of the user's whose next frame, past this command's, is torch's ``backward`` or
    ``grad``; else the innermost frame of the user's."""
    frames = []
    while tb is not None:
        frames.append((tb.tb_frame.f_code.co_filename, tb.tb_frame.f_code.co_name, tb.tb_lineno))
        tb = tb.tb_next
    theirs = [f for f in frames if not _ours(f[0])]
    found = None
    for (name, _, line), following in zip(theirs, theirs[1:] + [None]):
        if name.startswith(_TORCH):
            continue
        if following is not None and following[0].startswith(_TORCH) and \
                following[1] in ("backward", "grad"):
            return name, line
        found = (name, line)
    return found


def main(argv: list[str] | None = None) -> int:
    """Run the command; returns the exit code (a script's ``sys.exit`` passes through)."""
    own, target = _split(list(sys.argv[1:] if argv is None else argv))
    options = _parser().parse_args(own)
    skipped = verify_skipped(os.environ) if options.verify else ""
    verifying = options.verify and not skipped
    if options.module is None:
        if not target:
            _bad_use(f"no script given; usage: {_USAGE.splitlines()[0]}")
        if target[0] == "-c" and len(target) < 2:
            _bad_use("argument expected for the -c option")
        text = target[0] in ("-c", "-")  # a program without a file: its edits cannot be run
        if text and verifying:
            skipped = ("the program was given as text (-c or on standard input), not in a file "
                       "that an edit could change")
            verifying = False
        elif not text:
            _check_script(target[0])
    report = _check_report(options.report)
    watch_for_exit()
    watching: list = []
    counter = CallCounter() if verifying else None
    not_run = skipped or "--no-verify"
    teller = Teller(report, lambda: watching[0].count if watching else 0, verifying, not_run)
    teller.write()  # "error": null until a backward fails (so also after an os._exit)
    replaying = refusal(os.environ) is None
    # One process for the replay and the runs of the edits, started now: it copies the folder
    # and imports torch while the first run goes on.
    rerun = Rerun(root_of(options.module, target, os.getcwd())) \
        if verifying or replaying else None
    # A child the program starts (forked or spawned) hands its failures to this process through
    # this file.
    teller.children = os.path.join(rerun.folder, "children.jsonl") if rerun is not None else \
        _children_file()
    ahead = None  # the runs of the first run's edits started beside the replay
    # The replay, started at the failure while the first run explains it and ends.
    early = _Early(teller, rerun, watching, options.module, target) \
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
            ahead = _Ahead(teller, rerun, counter, options.module, target) \
                if verifying and rerun is not None and replaying else None
            ending = _replay(teller, rerun if replaying else None, options.module,
                             target, ahead, early) or ending
        if child:
            pass
        elif verifying and rerun is not None and teller.finding is not None and teller.fixes and \
                not isinstance(ending, (KeyboardInterrupt, Stopped)):
            ending = _verify(teller, rerun, counter, options.module, target, ahead) or ending
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
              recording: bool = False, early: "_Early | None" = None) -> list:
    """The watch, made once the program imports torch (kept in ``watching``: its count of
    calls is the failing call's number); at the failure, before the watch explains it, it
    starts the replay (``early``) and hands the failing call's outputs to ``counter``, which
    keeps the parameters that the runs of the edits compare with (nothing else runs on each
    call: the optimizer steps before the failure are the replay's). It keeps where each call
    was made only when ``recording`` (no replay will: under a distributed launcher)."""
    from .run.watch import Watch

    def at_failure(outputs: Any) -> None:
        if early is not None:
            early.start()
        if counter is not None:
            counter.keep(outputs)

    watching.append(Watch(on_failure=teller.failed, on_repeat=teller.repeated, recording=recording,
                          on_outputs=at_failure if early or counter else None))
    return watching[-1:]


class _Early:
    """The replay started at the moment a backward of the first run fails (the watch hands
    over the failing call's outputs before it explains the failure): it runs while the first
    run explains the failure and the program ends. :func:`_replay` takes it when the failure
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


class _Ahead:
    """The runs of the first run's edits, started beside the replay once it reached the failing
    call (:meth:`~autograd_lens.run.replay_run.Replaying.failed_at`: the steps made before it, which
    a run of an edit counts from, are known then; the replay goes on making its evidence), one
    at a time (a core for the replay, one for them). The replay's finding can change the edits:
    :func:`_verify` takes the result of a run started here only for the same edits, run the
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


def _replay(teller: Teller, replayer: Rerun | None, module: str | None,
            target: list[str], ahead: _Ahead | None = None,
            early: _Early | None = None) -> BaseException | None:
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
            _print_traceback(ending)
        return 0, ending, None
    except BaseException as caught:  # noqa: BLE001 - reported as Python would, then explained
        _print_traceback(caught)
        return 1, None, caught
    return 0, None, None


def _print_traceback(caught: BaseException) -> None:
    shown = caught.with_traceback(_user_traceback(caught.__traceback__))
    sys.excepthook(type(shown), shown, shown.__traceback__)


def _steps_before(teller: Teller) -> int | None:
    """The optimizer steps made before the failing call, as the replay recorded them (None
    without a recording: the runs of the edits then count backward calls only)."""
    evidence = getattr(teller.finding, "evidence", None) if teller.finding else None
    return evidence.get("steps_before") if evidence else None


def _verify(teller: Teller, rerun: Rerun, counter: CallCounter, module: str | None,
            target: list[str], ahead: _Ahead | None = None) -> BaseException | None:
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


if __name__ == "__main__":
    sys.exit(main())
