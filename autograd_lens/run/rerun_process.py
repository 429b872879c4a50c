"""Inside the process that runs the program again: each run forked from it, in a fresh copy of
the program's folder in the sandbox, the edited files in place of the originals, counted until it
has run enough; its result written for the command (see :class:`~autograd_lens.run.rerun.Rerun`)."""

from __future__ import annotations

import contextlib
import json
import os
import select
import shutil
import signal
import sys
import tempfile
import time

from . import reached, sandbox, sandbox_folder
from ..lens.errors import error_kind
from .counting import CallCounter, Enough
from .lifetime import die_with_parent
from .rerun import DONE, READY
from .running import run_as_main

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
    except Enough:
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


def _inside(path: str, folder: str) -> bool:
    return path == folder or path.startswith(folder.rstrip(os.sep) + os.sep)


def _moved(path: str, root: str, copy: str) -> str:
    return os.path.join(copy, os.path.relpath(path, root)) if _inside(path, root) else path


def _start(spec: dict, setup: dict, run_folder: str) -> None:
    """In the forked process of one run: its folder, its files, the guard, then the run."""
    root, cwd = setup["root"], setup["cwd"]
    temp = run_folder + ".tmp"
    sandbox_folder.fresh(setup["snapshot"], run_folder)
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
    """The re-run's process, once its folder is copied (see :func:`sandbox_folder.boot`): import
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
