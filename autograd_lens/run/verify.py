"""Verification: each candidate edit run before it is called the fix.

After a failure, every edit the fixes give is applied to a copy of the program and run in the
sandbox (:mod:`autograd_lens.run.sandbox`: a temporary copy of the program's folder, writes outside
it and the network refused), each in a new process forked from one that was started with the
first run (``Rerun``: it copies the folder and imports torch while the first run goes on, so
a run starts in milliseconds; it runs the first edits beside the replay, see
:class:`autograd_lens.__main__._Ahead`). A run has the first run's arguments and environment, no
input (stdin is empty), the edited files in place of the originals, and the same watch. It stops
once the backward call that failed and :data:`MORE_CALLS` more have run (or the program made
:data:`MORE_CALLS` + 1 optimizer steps past the step that failed), or when the program ends,
or at its bound in time; then it ends at once, without the program's ``atexit`` handlers.

An edit *holds* (:func:`verdict` ``"gone"``) when its run got past the point that failed without an
error, and every parameter that the failing call would have reached and that an optimizer alive at
the failure updates (in a program without an optimizer, every one it would reach that the program
has written in place by then, a weight updated by hand, or every one it would reach when it wrote
none) still gets a gradient in some call past that point (parameters named by their module and
shape, see :mod:`autograd_lens.run.reached`): a run at its limit goes on until each optimizer that
updates one of them has stepped past the failing call (a generator trained by a loss of its own
after the critic's calls), for at most as many calls and steps again as the first run made up to
its failure, and 20 more. A gradient of zeros alone does not count (two terms that cancel train
nothing); at an optimizer's step any gradient held counts, zeros too: a critic's last bias under
``d_fake - d_real`` holds exactly zero at the critic's step in the program as written. A parameter
that no optimizer updates may lose its gradient, and so may one whose optimizers all stay idle past
that point while another steps (an autoencoder trained first, whose optimizer is still alive when a
flow is fitted on its codes): the run's text names it ("the edit stops gradients into ..."). One
that an optimizer steps past that point counts only if it holds a gradient when that optimizer
steps (a generator that gets one only from the critic's loss, after its own step, has it cleared by
its next ``zero_grad()``). With an optimizer, "every parameter" also takes in those an optimizer
has stepped with a gradient before the failure (it keeps a state for them) that the failing graph
does not show (read inside a checkpointed region, whose graph is built only when its backward
runs). "Past the point" is counted in backward calls, or, for an edit that merges backward calls
into one (fewer calls per step), in optimizer steps: the run passes the step that failed and ends
by itself or makes more steps; a program without optimizer steps whose edit merges backward calls
(:func:`merges`) is past the point when it made its merged call and ended by itself without an
error.

What a run that holds proves: the edited program gets past the failure, keeps training the same
parameters, without an error. It does not prove that the edited program computes what its
author meant; each pattern's proof programs (in the tests) compare the gradient of the edit with
an independent reference.
"""

from __future__ import annotations

import contextlib
import json
import linecache
import os
import select
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections import Counter
from typing import Any

from . import reached, sandbox
from ..source.edits import Edit, apply, by_file
from ..lens.errors import error_kind
from .lifetime import die_with_parent, stop_group
from .running import run_as_main
from .unseen import without_ours

MORE_CALLS = 2
"""How many backward calls past the one that failed a verifying run lets through."""
READY = "ready\n"  # what the re-run's process says on stderr once it waits for its runs
DONE = "done "  # ... and once a run ended: "done <how>"


def _grad_inputs(args: tuple) -> list[Any]:
    """The tensors an ``autograd.grad`` call (torch's engine call: outputs, then gradients,
    retain_graph, create_graph, inputs) takes gradients for: the only ones it gives one."""
    inputs = args[3] if len(args) > 3 else ()
    return [t for t in inputs if getattr(t, "requires_grad", False)]


class CallCounter:
    """Counts the backward and ``autograd.grad`` calls that return and the optimizer steps (an
    outer wrapper around the watch's, on the function through which both run the engine).

    In the first run it keeps, at the failure, what the verifying runs compare with
    (:attr:`expected`: the names of the parameters the failing call would reach that an
    optimizer alive at the failure updates, with their counts, or, when the program has no
    optimizer, those it has written in place (:attr:`by_hand`), else all of them;
    :attr:`unstepped`: the others it would reach, None without an optimizer and by-hand writes;
    :attr:`steps_before`: the optimizer steps made before it). In a verifying run, ``limit``
    stops the program once that many calls have returned (or ``step_limit`` steps have been
    made), and the parameters that get a gradient in the calls from ``watch_from`` on (or in
    those made during a step from ``steps_from`` on; for an ``autograd.grad`` call, the inputs
    it takes gradients for) are kept. With ``wanted`` (the first run's
    :attr:`expected`) and ``stepped`` (they are the parameters an optimizer updates), a run at
    its limit goes on until the optimizers that update them have each stepped past the failing
    call (:meth:`settled`: each had its chance to get its gradient, a generator's from a loss of
    its own after the critic's calls), for at most as many calls and steps again as the first
    run made up to its failure, and 20 more."""

    def __init__(self, limit: int | None = None, step_limit: int | None = None,
                 watch_from: int | None = None, steps_from: int | None = None,
                 wanted: dict[str, int] | None = None, stepped: bool = False) -> None:
        self.count, self.limit, self.steps, self.step_limit = 0, limit, 0, step_limit
        self.watch_from, self.steps_from = watch_from, steps_from
        self.wanted = wanted if stepped else None
        self.call_cap = None if limit is None else limit + (watch_from or 0) + 1 + 20
        self.step_cap = None if step_limit is None else step_limit + (steps_from or 0) + 1 + 20
        self.updated: set[str] = set()  # the names of what optimizers updated past the failure
        self._stepping: set[int] = set()  # those optimizers
        self.expected: dict[str, int] | None = None
        self.unstepped: dict[str, int] | None = None
        self.by_hand = False  # no optimizer: the parameters the program wrote in place count
        self.steps_before = 0
        self.reached: dict[int, Any] = {}
        self.gave: set[int] = set()  # the ids of the reached leaves that got a gradient
        self.stepped_ids: set[int] = set()  # the parameters of optimizers that stepped, watched
        self.fed: set[int] = set()  # ... those of them holding a gradient at that step
        self._saved: list[tuple[str, Any]] = []
        self._hook: Any = None
        self._pre_hook: Any = None

    def _watched(self) -> bool:
        return (self.watch_from is not None and self.count >= self.watch_from) or \
            (self.steps_from is not None and self.steps >= self.steps_from)

    def _wrap(self, original: Any) -> Any:
        def counted(outputs: Any, *args: Any, **kwargs: Any) -> Any:
            if self._watched():
                with contextlib.suppress(Exception):
                    self._reach(reached.leaves(outputs) if kwargs.get("accumulate_grad", True)
                                is not False else _grad_inputs(args))
            try:
                result = original(outputs, *args, **kwargs)
            except BaseException as error:
                error.__traceback__ = without_ours(error.__traceback__)  # as the watch does
                if self.expected is None and isinstance(error, RuntimeError) and \
                        error_kind(error) is not None:
                    self._keep(outputs)
                raise
            self.count += 1
            if self.limit is not None and self.count >= self.limit and \
                    (self.count >= self.call_cap or self.settled()):
                raise _Enough
            return result
        return counted

    def _reach(self, leaves: list[Any]) -> None:
        """Keeps the leaves a watched call reaches, named while the modules that hold them are
        alive (a program that ends has dropped them by the time the run's result is written),
        each with a hook that notes when the engine computes a gradient for it."""
        new = [leaf for leaf in leaves if id(leaf) not in self.reached]
        if new:
            for leaf, name in zip(new, reached.names(new)):
                self.reached[id(leaf)] = (leaf, name)
                try:
                    leaf.register_hook(self._noting(id(leaf)))
                except RuntimeError:  # a tensor that requires no gradient gets none
                    continue

    def _noting(self, key: int) -> Any:
        def note(grad: Any) -> None:
            # A custom Function's backward that returns None for an input calls the hook with
            # None: no gradient came; one of zeros alone trains nothing (two terms that cancel,
            # as ``exp(logp - old_logp)`` with both computed anew from the same weights).
            if grad is not None and key not in self.gave and _not_zeros(grad):
                self.gave.add(key)
        return note

    def got(self) -> list[str]:
        """The names of the parameters that got a gradient (not zeros) in a watched call that
        ran, and, for one that an optimizer stepped while watched, held a gradient at one of
        those steps (zeros count there: a WGAN critic's last bias gets exactly zero under
        ``d_fake - d_real``): a gradient that a later backward leaves and the next
        ``zero_grad()`` clears before the optimizer steps (a generator's, from the critic's
        loss, when its own loss no longer reaches it) trains nothing."""
        return [name for key, (_, name) in self.reached.items() if key in self.gave and
                (key not in self.stepped_ids or key in self.fed)]

    def _before_step(self, optimizer: Any, *args: Any) -> None:
        if not self._watched():
            return
        with contextlib.suppress(Exception):  # an answer of ours must never add an error
            for group in optimizer.param_groups:
                for param in group["params"]:
                    self.stepped_ids.add(id(param))
                    if param.grad is not None:  # (zeros too: a WGAN critic's last bias)
                        self.fed.add(id(param))

    def settled(self) -> bool:
        """Whether the optimizers that update the parameters of :attr:`wanted` have each
        stepped past the failing call (True without ``wanted``)."""
        return self.wanted is None or all(name in self.updated for name in self.wanted)

    def keep(self, outputs: Any) -> None:
        """At a failure of the first run (the watch hands over the failing call's
        ``outputs``): the parameters the failing call would reach; a later failure's replace
        an earlier one's (a caught failure before the one explained)."""
        self._keep(outputs)

    def _keep(self, outputs: Any) -> None:
        """At the failure: the parameters the failing call would reach."""
        self.steps_before = self.steps
        try:
            found = [t for t in reached.leaves(outputs) if getattr(t, "requires_grad", False)]
            named = reached.names(found)
            stepped = reached.stepped(found)
            if stepped is None:  # no optimizer: those the program updated in place by hand
                stepped = reached.written_in_place(found) or None
                self.by_hand = stepped is not None
            self.expected = dict(Counter(n for t, n in zip(found, named)
                                         if stepped is None or id(t) in stepped))
            if stepped is not None and not self.by_hand:  # and those an optimizer has trained
                # so far that the failing graph does not show (read inside a checkpointed
                # region, whose graph is built only when its backward runs)
                more = reached.trained_so_far({id(t) for t in found})
                for name in reached.names(more):
                    self.expected[name] = self.expected.get(name, 0) + 1
            self.unstepped = None if stepped is None else \
                dict(Counter(n for t, n in zip(found, named) if id(t) not in stepped))
        except Exception:  # noqa: BLE001 - an answer of ours must never add an error
            self.expected, self.unstepped = {}, {}

    def _stepped(self, optimizer: Any, *args: Any) -> None:
        self.steps += 1
        if self.wanted is not None and id(optimizer) not in self._stepping and (
                (self.watch_from is not None and self.count > self.watch_from) or
                (self.steps_from is not None and self.steps > self.steps_from)):
            self._stepping.add(id(optimizer))
            with contextlib.suppress(Exception):
                self.updated.update(reached.names(
                    [p for group in optimizer.param_groups for p in group["params"]]))
        if self.step_limit is not None and self.steps >= self.step_limit and \
                (self.steps >= self.step_cap or self.settled()):
            raise _Enough

    def __enter__(self) -> CallCounter:
        import torch
        from torch.optim.optimizer import (register_optimizer_step_post_hook,
                                           register_optimizer_step_pre_hook)

        original = torch.autograd._engine_run_backward
        self._saved.append(("_engine_run_backward", original))
        torch.autograd._engine_run_backward = self._wrap(original)
        self._hook = register_optimizer_step_post_hook(self._stepped)
        self._pre_hook = register_optimizer_step_pre_hook(self._before_step)
        return self

    def __exit__(self, *exc_info: Any) -> None:
        import torch

        if self._hook is not None:
            self._hook.remove()
            self._hook = None
        if self._pre_hook is not None:
            self._pre_hook.remove()
            self._pre_hook = None
        while self._saved:
            name, original = self._saved.pop()
            setattr(torch.autograd, name, original)


class _Enough(BaseException):
    """Raised in the verifying run once enough calls have run (not an Exception, so that the
    program's own ``except Exception`` does not catch it)."""


class Rerun:
    """The process that runs the program again, started before the program's first run: it
    copies the program's folder (``root``, by default the working folder) into the sandbox's
    folder and imports torch while the first run goes on, then forks one process per run
    (:meth:`start` returns at once, :meth:`wait` waits for a run's end, :meth:`run` does both;
    runs started one after the other without waiting run at once, each in its own folder: the
    runs of the edits beside the replay, on a machine with a core for each). It is started as
    the user's interpreter started the command (the same flags, environment and
    ``PYTHONPATH``: this package is found the way the command found it, not added to the path);
    its working folder is the one the first run started in. Not needed any more, it is stopped
    (``close``), with all it started, and its folder removed."""

    def __init__(self, root: str | None = None) -> None:
        self.cwd = os.getcwd()
        self.root = os.path.realpath(root or self.cwd)
        self.folder = sandbox.make_folder()
        self.runs = 0
        package = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
        setup = json.dumps({"folder": self.folder, "root": self.root, "cwd": self.cwd,
                            "parent": os.getpid()})
        # The process starts from sandbox.py alone, so that it copies the folder before it
        # imports torch (and this package); -c leaves sys.path as python -m left the command's.
        code = ("import importlib.util as u; "
                f"s = u.spec_from_file_location('autograd_lens_boot', {sandbox.__file__!r}); "
                "m = u.module_from_spec(s); s.loader.exec_module(m); "
                f"m.boot({setup!r}, {package!r})")
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
        self._said = "" if copied == sandbox.COPIED else copied + "\n"
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


def bound(seconds_to_failure: float) -> float:
    """How long the re-run may take, in seconds, from the moment its process is ready: three
    times the first run's time to the failure, and a minute more (a busier machine)."""
    return 3 * seconds_to_failure + 60


def verify(edits: list[Edit], module: str | None, target: list[str], calls_before: int,
           rerun: Rerun | None = None, seconds: float | None = None,
           expected: dict[str, int] | None = None, steps_before: int | None = None,
           unstepped: dict[str, int] | None = None, by_hand: bool = False) -> dict:
    """Run the program with ``edits`` applied, in the sandbox (``rerun``'s, if one was started
    before the first run; else a new one, closed after); ``calls_before``: the calls that
    returned before the one that failed; ``steps_before``: the optimizer steps made before it
    (None: not counted); ``expected``: the names of the parameters the failing call would reach
    that an optimizer updates (None: not compared), ``unstepped``: those it would reach that no
    optimizer updates, None when the program has no optimizer (``by_hand``: it has none, and
    ``expected`` are those the program wrote in place, updated by hand); ``seconds``: the
    bound, after which the run is stopped. Returns
    ``{"ran", "backward_calls", "error"}`` and ``"steps"``, ``"ended"`` (the program ended by
    itself), ``"missing"`` (parameters of ``expected`` that got no gradient in any call
    past the failure), ``"untrained"`` (those of ``unstepped`` that got none),
    ``"refused"`` (what the sandbox refused, if that ended the run), and, for :func:`verdict`,
    ``"same_error"``: whether its error is the freed-graph or in-place error again.
    :func:`start_verify` and :func:`finish_verify` do the same in two halves (the run goes on
    between them)."""
    return finish_verify(start_verify(edits, module, target, calls_before, rerun, seconds,
                                      expected, steps_before, unstepped, by_hand))


class Started:
    """A run of edits started by :func:`start_verify`: ``rerun`` runs it as run ``run``
    (None: it could not start), writing ``result``; ``own``: ``rerun`` was started for it
    alone (closed when it ends)."""

    def __init__(self, rerun: Rerun, run: int | None, result: str, seconds: float | None,
                 steps_before: int | None, merges: bool, own: bool) -> None:
        self.rerun, self.run, self.result, self.seconds = rerun, run, result, seconds
        self.steps_before, self.merges, self.own = steps_before, merges, own

    def done(self) -> bool:
        return self.rerun.done(self.run)


def start_verify(edits: list[Edit], module: str | None, target: list[str], calls_before: int,
                 rerun: Rerun | None = None, seconds: float | None = None,
                 expected: dict[str, int] | None = None,
                 steps_before: int | None = None,
                 unstepped: dict[str, int] | None = None,
                 by_hand: bool = False) -> Started | dict:
    """Start the run of ``edits`` (as :func:`verify`) and return at once: the run, for
    :func:`finish_verify`, or the result already (no edit to run)."""
    if not edits:
        return {"ran": False, "backward_calls": 0, "error": "no edit was derived to run"}
    own = rerun is None
    rerun = rerun or Rerun()
    try:
        place = os.path.join(rerun.folder, f"edits_{rerun.runs}")
        os.makedirs(place, exist_ok=True)
        files = {}
        for index, (file, group) in enumerate(by_file(edits).items()):
            copy = os.path.join(place, f"{index}_{os.path.basename(file)}")
            with open(copy, "w", encoding="utf-8") as handle:
                handle.writelines(apply(group, linecache.getlines(file)))
            files[os.path.abspath(file)] = copy
        result = os.path.join(place, "result.json")
        spec = {"files": files, "module": module, "target": target,
                "limit": calls_before + 1 + MORE_CALLS, "result": result,
                "watch_from": calls_before}
        if steps_before is not None:
            spec.update(step_limit=steps_before + 2 + MORE_CALLS, steps_from=steps_before)
        if expected is not None:
            spec["expected"] = expected
            spec["unstepped"] = unstepped
            spec["by_hand"] = by_hand
        run = rerun.start(spec, seconds)
    except BaseException:
        if own:
            rerun.close()
        raise
    return Started(rerun, run, result, seconds, steps_before, merges(edits), own)


def finish_verify(started: Started | dict, poll: Any = None) -> dict:
    """Wait for the run that :func:`start_verify` started (``poll`` called meanwhile, as in
    :meth:`Rerun.wait`) and return its result (see :func:`verify`)."""
    if isinstance(started, dict):
        return started
    try:
        try:
            stderr = started.rerun.wait(started.run, poll)
        except subprocess.TimeoutExpired:
            return {"ran": False, "backward_calls": 0,
                    "error": f"stopped after {started.seconds:.0f} s, the bound on the run"}
        if not os.path.exists(started.result):
            last = (stderr.strip().splitlines() or ["no output"])[-1]
            return {"ran": False, "backward_calls": 0, "error": f"the run did not finish: {last}"}
        with open(started.result, encoding="utf-8") as handle:
            found = json.load(handle)
        found["steps_before"] = started.steps_before
        if started.merges:
            found["merges"] = True
        return found
    finally:
        if started.own:
            started.rerun.close()


def merges(edits: list[Edit]) -> bool:
    """Whether ``edits`` leave fewer backward calls than they replace (one backward of a sum
    in place of two)."""
    def calls(lines: Any) -> int:
        return sum(line.count(".backward(") + line.count("autograd.grad(") for line in lines)
    return calls(line for e in edits for line in e.new) < calls(e.old for e in edits)


def _reached(verified: dict, calls_before: int) -> bool:
    """Whether the run got past the point that failed: past the failing call and the calls
    after it, or (an edit with fewer backward calls per step) past the step that failed, then
    ended by itself or made more steps."""
    if verified["backward_calls"] > calls_before + MORE_CALLS:
        return True
    if verified["backward_calls"] > calls_before and (verified.get("stopped") or
                                                      verified.get("ended")):
        return True  # past the failing call, then stopped or at the program's end
    before = verified.get("steps_before")
    if before is None:
        return verified["backward_calls"] > calls_before
    steps = verified.get("steps", 0)
    if steps > before + MORE_CALLS or (steps > before and verified.get("ended", False)) or \
            (verified["backward_calls"] > calls_before and steps > before):
        return True
    # An edit that merges backward calls (one backward of a sum) and a program without steps
    # past the failure: it ran its merged call and went on to its own end.
    return bool(verified.get("merges")) and verified.get("ended", False) and \
        verified["backward_calls"] >= 1 and steps >= before


def verdict(verified: dict, calls_before: int) -> str:
    """What the re-run shows: "gone" (it got past the point that failed without an error, the
    same parameters still getting gradients), "still_fails" (the same kind of error again),
    "lost_gradients" (past the point, but parameters the failing call would reach get no
    gradient), "refused" (the sandbox refused what the program needed: it shows nothing about
    the edit), "not_reached" (it ended cleanly before the point that failed: it shows nothing),
    "other_error" (another error), "not_run"."""
    if not verified["ran"]:
        return "not_run"
    if verified.get("refused"):
        return "refused"
    if verified["error"] and verified.get("same_error", True):
        return "still_fails"
    if verified["error"]:
        return "other_error"
    if not _reached(verified, calls_before):
        return "not_reached"
    return "lost_gradients" if verified.get("missing") else "gone"


HOLDS = ("gone",)
FAILED = ("still_fails", "other_error", "lost_gradients")


def announce(calls_before: int, seconds: float, runs: int = 1) -> str:
    """The line said before re-runs that repeat a long healthy phase (10 calls or more)."""
    if calls_before < 10:
        return ""
    edits = "the suggested edit" if runs == 1 else f"each of the {runs} suggested edits"
    return (f"\nautograd_lens: running the program again with {edits} in a sandbox: each run "
            f"repeats the {calls_before} backward calls that ran before the one that failed "
            f"(stopped after {seconds:.0f} s at most).\n")


def happened(verified: dict, calls_before: int) -> str:
    """What the run of one edit showed, as a clause."""
    said = verdict(verified, calls_before)
    count = verified["backward_calls"]
    calls = "1 backward call" if count == 1 else f"{count} backward calls"
    if said == "not_run":
        return f"it could not run ({verified['error']})"
    if said == "refused":
        return f"not checked: {verified['refused']}"
    if said == "still_fails":
        return f"it still fails, after {calls}: {verified['error']}"
    if said == "other_error":
        return f"it stopped on another error, after {calls}: {verified['error']}"
    stepped = "untrained" in verified  # the program had an optimizer at the failure
    updates = (" and the program updates in place" if verified.get("by_hand") else
               " and an optimizer updates" + (" past that point" if verified.get("idle") else "")
               ) if stepped else ""
    if said == "lost_gradients":
        lost, before = verified["missing"], " (or that an optimizer trained before it)"
        return (f"past the call that failed, but {len(lost)} parameter"
                f"{'s' if len(lost) != 1 else ''} that the failing call would reach"
                f"{before if stepped and not verified.get('by_hand') else ''}"
                f"{updates} no longer "
                f"get{'s' if len(lost) == 1 else ''} a gradient (other than zeros) in any call "
                "past it (held when an optimizer that updates it steps): "
                f"{_names(lost)}")
    if said == "not_reached":
        return (f"not checked: the run ended after {calls}, before reaching the point that "
                f"failed (the first run's call {calls_before + 1}); the re-run reads no input "
                "(stdin is empty)")
    steps = verified.get("steps", 0)
    past = f"{calls}" + (f" and {steps} optimizer step{'s' if steps != 1 else ''}" if steps else "")
    said = (f"{past} ran without an error, past the point that failed, every parameter that "
            f"the failing call would reach{updates} "
            "still getting a gradient")
    idle = verified.get("idle") or []
    if idle:
        said += (f"; the edit stops gradients into {_names(idle)}, which no optimizer updated "
                 "past that point (the program no longer trains it there)")
    untrained = verified.get("untrained") or []
    if untrained:
        said += (f"; the edit stops gradients into {_names(untrained)}, which " +
                 ("the program does not update" if verified.get("by_hand") else
                  "no optimizer updates"))
    return said


def _names(names: list[str]) -> str:
    return ", ".join(names[:4]) + (f" and {len(names) - 4} more" if len(names) > 4 else "")


def describe(verified: dict, calls_before: int) -> str:
    """One paragraph for the text report about one run (see :func:`happened`)."""
    return f"autograd_lens: ran the suggested edit: {happened(verified, calls_before)}."


def _child(spec: dict) -> bool:
    """The verifying run; writes its result, and returns whether it stopped the program.
    ``spec``: ``module``, ``target`` (as the command got them), ``files`` (edited copies, by
    the original's path), ``limit`` (the calls after which to stop), ``step_limit``,
    ``watch_from`` and ``steps_from`` (see :class:`CallCounter`), ``expected`` (the names of
    the parameters to find reached), ``result`` (where to write the result), ``record`` (where
    the recording writes its evidence, if it runs), and, set by the sandbox, ``sandbox``:
    ``{"folder": the run's copy, "root": the original folder it copies}``."""
    from .watch import Watch

    counter = CallCounter(spec["limit"], spec.get("step_limit"), spec.get("watch_from"),
                          spec.get("steps_from"), spec.get("expected"),
                          spec.get("unstepped") is not None and not spec.get("by_hand"))
    error, stopped, same, ended = None, False, False, False
    try:
        with contextlib.ExitStack() as stack:
            watch = Watch()
            if spec.get("record"):
                from .record import Recording
                stack.enter_context(Recording(spec, watch))
            stack.enter_context(watch)
            stack.enter_context(counter)
            run_as_main(spec["module"], spec["target"], spec["files"])
        ended = True
    except _Enough:
        stopped = True
    except SystemExit as leaving:
        ended = True
        if leaving.code not in (None, 0):
            error = f"the program exited with status {leaving.code}"
    except BaseException as caught:  # noqa: BLE001 - what the edited program raised is the answer
        error = f"{type(caught).__name__}: {str(caught).splitlines()[0] if str(caught) else ''}"
        same = error_kind(caught) is not None
    result = {"ran": True, "backward_calls": counter.count, "error": error,
              "steps": counter.steps, "ended": ended, "stopped": stopped}
    if spec.get("by_hand"):
        result["by_hand"] = True
    if sandbox.REFUSED and error is not None:
        result["refused"] = sandbox.REFUSED[0]
    if error is not None:
        result["same_error"] = same
    if spec.get("expected") is not None and error is None and counter.reached:
        with contextlib.suppress(Exception):
            got = counter.got()
            result["missing"] = reached.missing(spec["expected"], got)
            if result["missing"] and counter.updated:  # some optimizer stepped past the point:
                # a parameter that no optimizer updated from there on is not trained any more
                result["idle"] = [n for n in result["missing"] if n not in counter.updated]
                result["missing"] = [n for n in result["missing"] if n in counter.updated]
            if spec.get("unstepped") is not None:
                result["untrained"] = reached.missing(spec["unstepped"], got)
    with open(spec["result"], "w", encoding="utf-8") as handle:  # allowed by the guard
        json.dump(result, handle)
    return stopped


# -- the re-run's process ------------------------------------------------------------------

def _inside(path: str, folder: str) -> bool:
    return path == folder or path.startswith(folder.rstrip(os.sep) + os.sep)


def _moved(path: str, root: str, copy: str) -> str:
    return os.path.join(copy, os.path.relpath(path, root)) if _inside(path, root) else path


def _start(spec: dict, setup: dict, run_folder: str) -> None:
    """In the forked process of one run: its folder, its files, the guard, then the run."""
    root, cwd = setup["root"], setup["cwd"]
    temp = run_folder + ".tmp"
    sandbox.fresh(setup["snapshot"], run_folder)
    os.makedirs(temp)
    files = {}
    for original, edited in (spec.get("files") or {}).items():
        real = os.path.realpath(original)
        if _inside(real, root):
            there = _moved(real, root, run_folder)
            if os.path.lexists(there):
                os.unlink(there)
            shutil.copyfile(edited, there)
        else:
            files[original] = edited
    target = list(spec["target"])
    if spec.get("module") is None and target:
        script = os.path.join(cwd, target[0])
        if os.path.isabs(target[0]) or not _inside(os.path.realpath(cwd), root):
            target[0] = _moved(os.path.realpath(script), root, run_folder)
    here = _moved(os.path.realpath(cwd), root, run_folder)
    os.chdir(here if os.path.isdir(here) else run_folder)
    os.environ["PWD"] = os.getcwd()
    spec = dict(spec, files=files, target=target,
                sandbox={"folder": run_folder, "root": root})
    sandbox.enter([run_folder, temp], [spec["result"], spec.get("record"), spec.get("finding"),
                                        spec.get("failed_at")])
    if not _child(spec):
        # It ended by itself: its atexit handlers run, as Python runs them (in the sandbox).
        import atexit
        atexit._run_exitfuncs()


def _serve(setup: dict) -> None:
    """The re-run's process, once its folder is copied (see :func:`sandbox.boot`): import
    torch, say it is ready, then run each spec read from stdin in a forked process at once (a
    run may start while another goes on), and say ``done <run> <how>`` as each ends (killed at
    its bound in time: "timeout"); ``{"cancel": run}`` stops a run."""
    folder = setup["folder"]
    setup["snapshot"] = os.path.join(folder, "snapshot")
    from .watch import Watch  # noqa: F401 - torch imported while the first run goes on

    out = sys.stderr
    out.write(READY)
    out.flush()
    # What the replay's recording imports on its first operation (torch's dispatch modes run
    # outside its compiler, which takes seconds to import): here, while the first run goes on.
    # It changes the environment (its cache folder): put back as the user had it. It makes
    # that folder in the temporary folder: the sandbox's here, removed with it.
    environ, kept = dict(os.environ), tempfile.tempdir
    os.environ["TMPDIR"], tempfile.tempdir = folder, None
    try:
        with contextlib.suppress(Exception):
            import torch._dynamo  # noqa: F401
    finally:
        os.environ.clear()
        os.environ.update(environ)
        tempfile.tempdir = kept
    running: dict[int, tuple[int, float | None]] = {}  # run: its process, its deadline
    cancelled: set[int] = set()
    heard, reading = b"", True
    while reading or running:
        # Wait for an order, looking every 10 ms at the runs that go on.
        if select.select([0] if reading else [], [], [], 0.01 if running else None)[0]:
            chunk = os.read(0, 65536)
            reading = bool(chunk)
            heard += chunk
            while b"\n" in heard:
                line, heard = heard.split(b"\n", 1)
                spec = json.loads(line)
                if "cancel" in spec:
                    if spec["cancel"] in running:
                        cancelled.add(spec["cancel"])
                        with contextlib.suppress(ProcessLookupError):
                            os.kill(running[spec["cancel"]][0], signal.SIGKILL)
                    continue
                run, seconds = spec.get("run", 0), spec.get("seconds")
                running[run] = (_fork_run(spec, setup, os.path.join(folder, f"run_{run}")),
                                None if seconds is None else time.monotonic() + seconds)
        for run, (pid, deadline) in list(running.items()):
            how = _ended(pid, deadline)
            if how is None:
                continue
            del running[run]
            run_folder = os.path.join(folder, f"run_{run}")
            shutil.rmtree(run_folder, ignore_errors=True)
            shutil.rmtree(run_folder + ".tmp", ignore_errors=True)
            out.write(f"{DONE}{run} {'cancelled' if run in cancelled else how}\n")
            out.flush()


def _fork_run(spec: dict, setup: dict, run_folder: str) -> int:
    """Fork the process of one run; returns its id."""
    pid = os.fork()
    if pid:
        return pid
    try:  # the run
        die_with_parent()
        signal.signal(signal.SIGTERM, signal.SIG_DFL)
        devnull = os.open(os.devnull, os.O_RDWR)
        for fd in (0, 1, 2):
            os.dup2(devnull, fd)
        sys.stdin = open(os.devnull)
        sys.stdout = sys.stderr = open(os.devnull, "w")
        _start(spec, setup, run_folder)
    finally:
        # Stopped part-way, the program ends here, as if killed: its atexit handlers (which
        # could, say, save a half-trained model) do not run, and neither does the interpreter's
        # clean-up, which takes torch almost half a second.
        os._exit(0)


def _ended(pid: int, deadline: float | None) -> str | None:
    """Whether the run ``pid`` has ended (killed once past ``deadline``): "ended",
    "timeout", or None while it goes on."""
    done, _ = os.waitpid(pid, os.WNOHANG)
    if done:
        return "ended"
    if deadline is not None and time.monotonic() > deadline:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
        os.waitpid(pid, 0)
        return "timeout"
    return None


def _not_zeros(grad: Any) -> bool:
    """Whether a gradient has an element other than zero (a sparse one, by its values; one that
    cannot be read so, as a tensor of another kind, counts as a gradient)."""
    try:
        values = grad.coalesce().values() if grad.is_sparse else grad
        return bool(values.ne(0).any())
    except Exception:  # noqa: BLE001 - a hook must not raise into the program's backward
        return True
