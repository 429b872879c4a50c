"""The process that runs the program again (the replay's and the verification's runs), as the
command sees it: started with the first run, given runs, waited for, stopped with the command.
What runs inside it: :mod:`autograd_lens.run.rerun_process`."""

from __future__ import annotations

import contextlib
import json
import os
import select
import shutil
import signal
import subprocess
import sys
import threading
import time
from typing import Any

from . import sandbox_folder
from .lifetime import stop_group

READY = "ready\n"  # what the re-run's process says on stderr once it waits for its runs
DONE = "done "  # ... and once a run ended: "done <how>"


# Set by a process that imports torch and this package and then forks one process for each
# command it runs (a test server does): each command's process is then a clean copy, which has
# run nothing of a program, and its re-run's process is forked from it (see :func:`forkable`).
# The command never sets it: a process that has run other code is no clean copy (its modules
# and objects would be the re-run's).
fork_from_clean_copies = False


def forkable() -> bool:
    """Whether the command's re-run process can be forked from this one rather than started
    afresh: this is a clean copy (:data:`fork_from_clean_copies`) that has imported torch (a new
    interpreter would only import it again), no other thread runs here (a fork keeps only the
    calling thread, and a lock another thread held would stay held in the copy), and torch runs
    each operation on one thread (no thread pool that the copy would lack)."""
    torch = sys.modules.get("torch")
    return fork_from_clean_copies and torch is not None and threading.active_count() == 1 \
        and torch.get_num_threads() == 1


class Forked:
    """The re-run's process forked from this one: ``boot()`` run in a process group of its own,
    its standard input and error pipes to this process, its output thrown away, as the new
    interpreter is started otherwise; what :class:`Rerun` uses of a ``Popen``."""

    def __init__(self, boot: Any) -> None:
        its_in, to_it = os.pipe()
        from_it, its_err = os.pipe()
        pid = os.fork()
        if pid == 0:
            try:
                os.setpgid(0, 0)
                null = os.open(os.devnull, os.O_WRONLY)
                for fd, into in ((its_in, 0), (null, 1), (its_err, 2)):
                    os.dup2(fd, into)
                for fd in (its_in, to_it, from_it, its_err, null):
                    os.close(fd)
                signal.signal(signal.SIGINT, signal.default_int_handler)
                sys.stdin = open(0, closefd=False)
                sys.stdout = open(os.devnull, "w")
                sys.stderr = open(2, "w", closefd=False)
                boot()
            finally:
                os._exit(0)
        with contextlib.suppress(OSError):  # as the child does: in its group before stopped
            os.setpgid(pid, pid)
        os.close(its_in)
        os.close(its_err)
        self.pid = pid
        self.stdin = open(to_it, "w")
        self.stderr = open(from_it, "rb", buffering=0)
        self.returncode: int | None = None

    def wait(self) -> int:
        if self.returncode is None:
            try:
                self.returncode = os.waitstatus_to_exitcode(os.waitpid(self.pid, 0)[1])
            except ChildProcessError:
                self.returncode = 0
        return self.returncode


class Rerun:
    """The process that runs the program again, started before the program's first run: it
    copies the program's folder (``root``, by default the working folder) into the sandbox's
    folder and imports torch while the first run goes on, then forks one process per run
    (:meth:`start` returns at once, :meth:`wait` waits for a run's end, :meth:`run` does both;
    runs started one after the other without waiting run at once, each in its own folder: the
    runs of the edits beside the replay, on a machine with a core for each). It is started as
    the user's interpreter started the command (the same flags, environment and
    ``PYTHONPATH``: this package is found the way the command found it, not added to the path);
    its working folder is the one the first run started in. ``fork``: forked from this process
    instead, which must be a clean copy (see :func:`forkable`). Not needed any more, it is stopped
    (``close``), with all it started, and its folder removed."""

    def __init__(self, root: str | None = None, fork: bool = False) -> None:
        self.cwd = os.getcwd()
        self.root = os.path.realpath(root or self.cwd)
        self.folder = sandbox_folder.make_folder()
        self.runs = 0
        package = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
        setup = json.dumps({"folder": self.folder, "root": self.root, "cwd": self.cwd,
                            "parent": os.getpid()})
        # The process starts from sandbox_folder.py alone, so that it copies the folder before it
        # imports torch (and this package); -c leaves sys.path as python -m left the command's.
        code = ("import importlib.util as u; "
                f"s = u.spec_from_file_location('autograd_lens_boot', {sandbox_folder.__file__!r}); "
                "m = u.module_from_spec(s); s.loader.exec_module(m); "
                f"m.boot({setup!r}, {package!r})")
        if fork:
            self.process: Any = Forked(lambda: sandbox_folder.boot(setup, package))
        else:
            flags = subprocess._args_from_interpreter_flags()
            self.process = subprocess.Popen(
                [sys.executable, *flags, "-c", code], stdin=subprocess.PIPE,
                stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                process_group=0)  # its own group: stopped as a whole (see lifetime)
        self._ready: bool | None = None
        self._buffer = b""  # what the process said on stderr and was not read as a line yet
        self._ended = False  # its stderr was closed: the process ended
        self._done: dict[int, str] = {}  # the runs that ended, not waited for yet: how
        self._deadlines: dict[int, float | None] = {}
        self._seconds: dict[int, float | None] = {}
        self._other: list[str] = []  # the other lines it said (an error of its own)
        self._unready: set[int] = set()  # the runs asked for before the process was ready
        # The first run starts once the folder is copied: the runs find it as the first run did.
        copied = self._line(None)
        self._said = "" if copied == sandbox_folder.COPIED else copied + "\n"
        if self._said:
            self._ready = False

    def _line(self, timeout: float | None) -> str | None:
        """The next line the process says on stderr ("" once it ended), or None when none came
        within ``timeout`` seconds. Read from the pipe itself, not through a buffer that select
        would not see."""
        while b"\n" not in self._buffer:
            if self._ended:
                rest, self._buffer = self._buffer, b""
                return rest.decode(errors="replace")
            if timeout is not None and \
                    not select.select([self.process.stderr], [], [], max(timeout, 0))[0]:
                return None
            chunk = os.read(self.process.stderr.fileno(), 65536)
            if not chunk:
                self._ended = True
            self._buffer += chunk
        line, self._buffer = self._buffer.split(b"\n", 1)
        return line.decode(errors="replace") + "\n"

    def _rest(self) -> str:
        """All the process says until it ends."""
        said = []
        while True:
            line = self._line(None)
            if not line:
                return "".join(said)
            said.append(line)

    def _wait_ready(self) -> bool:
        if self._ready is None:
            line = self._line(None)
            self._ready = line == READY
            if not self._ready:
                self._said += line + self._rest()
        return self._ready

    def start(self, spec: dict, seconds: float | None = None, waiting: bool = True) -> int | None:
        """Start a run of the program as ``spec`` says (see ``_child``) once the process is
        ready (torch imported), stopped after ``seconds``; returns its number (its folder is
        ``run_<number>``), or None when the process could not start it (:meth:`wait` then
        returns what it said). ``waiting=False``: the run is asked for without waiting until the
        process is ready (it starts when the process is; asked from inside a backward call of
        the program, which this must not hold up)."""
        if self._ready is False or (waiting and not self._wait_ready()):
            return None
        run = self.runs
        self.runs += 1
        try:
            self.process.stdin.write(json.dumps(dict(spec, seconds=seconds, run=run)) + "\n")
            self.process.stdin.flush()
        except OSError:
            return None
        self._seconds[run] = seconds
        self._deadlines[run] = None if seconds is None else time.monotonic() + seconds + 30
        if not self._ready:
            self._unready.add(run)  # its time counts from when the process is ready
        return run

    def done(self, run: int | None) -> bool:
        """Whether the run ``run`` has ended (without waiting: what the process said so far)."""
        if run is None or run in self._done or self._ended:
            return True
        while True:
            line = self._line(0)
            if line is None:
                return run in self._done
            self._heard(line)
            if run in self._done or not line:
                return True

    def _heard(self, line: str) -> None:
        if line == READY and self._ready is None:
            self._ready = True
        elif line.startswith(DONE):
            number, _, how = line[len(DONE):].strip().partition(" ")
            self._done[int(number)] = how
        elif line:
            self._other.append(line)

    def wait(self, run: int | None, poll: Any = None, every: float = 0.02) -> str:
        """Wait for the run ``run`` to end (at most its ``seconds`` from its start, and half a
        minute more: else ``subprocess.TimeoutExpired``); ``poll``, if given, is called every
        ``every`` seconds meanwhile (it may start other runs). Returns what the process said
        on stderr beside the runs' ends (nothing, unless it failed itself)."""
        if run is None:
            return self._said or self._rest()
        if not self._wait_ready():
            return self._said
        seconds = self._seconds.get(run)
        if run in self._unready:  # asked for before the process was ready: its time from now
            self._unready.discard(run)
            if seconds is not None:
                self._deadlines[run] = time.monotonic() + seconds + 30
        while run not in self._done:
            deadline = self._deadlines[run]
            left = None if deadline is None else deadline - time.monotonic()
            if left is not None and left <= 0:
                raise subprocess.TimeoutExpired("the re-run", seconds or 0)
            timeout = left if poll is None else (every if left is None else min(every, left))
            line = self._line(timeout)
            if line is not None:
                self._heard(line)
                if not line:  # the process ended before the run did
                    return "".join(self._other)
            if poll is not None:
                poll()
        if self._done.pop(run) == "timeout":
            raise subprocess.TimeoutExpired("the re-run", seconds or 0)
        return "".join(self._other)

    def run(self, spec: dict, seconds: float | None = None) -> str:
        """Run the program as ``spec`` says (see ``_child``) once the process is ready (torch
        imported) and wait for it to end (at most ``seconds`` from then: else
        ``subprocess.TimeoutExpired``); returns what the process said about it on stderr."""
        return self.wait(self.start(spec, seconds))

    def cancel(self, run: int | None) -> None:
        """Stop the run ``run`` if it still runs (its result is not needed any more)."""
        if run is None or self.done(run):
            self._done.pop(run, None)
            return
        with contextlib.suppress(OSError):
            self.process.stdin.write(json.dumps({"cancel": run}) + "\n")
            self.process.stdin.flush()

    def close(self) -> None:
        """Stop the process and all it started, and remove its folder (a no-op once done)."""
        stop_group(self.process.pid)
        self.process.wait()
        for pipe in (self.process.stdin, self.process.stderr):
            with contextlib.suppress(OSError):
                pipe.close()
        shutil.rmtree(self.folder, ignore_errors=True)

    def __enter__(self) -> Rerun:
        return self

    def __exit__(self, *exc_info: Any) -> None:
        self.close()
