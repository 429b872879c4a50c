"""``--verify``: run the program again with the suggested edit, and say whether the error is gone.

The edited files are written to a temporary folder, never into the user's; a new Python process
(``Rerun``, started with the first run) runs the program from there (the script's own folder
stays first on ``sys.path``, so its neighbours import as before, and an edited module is loaded
from its edited copy), under the same watch, with the same arguments and the working directory
and environment the first run started with. It stops once the backward call that failed and a
few more have run (ending at once, without the program's ``atexit`` handlers), or when the
program ends, and reports what happened.

What a clean run proves: the edited program gets past the call that failed, and a few more,
without an error. It does not prove that the edited program computes what its author meant;
each pattern's proof programs (in the tests) compare the gradient of the edit with an
independent reference. Rerunning repeats the program's side effects (files it writes, loggers,
network calls) up to where it is stopped: that is why ``--verify`` is opt-in.
"""

from __future__ import annotations

import contextlib
import json
import linecache
import os
import subprocess
import sys
import tempfile
from typing import Any

from .edits import Edit, apply, by_file
from .errors import error_kind
from .lifetime import die_with_parent, stop_group
from .running import run_as_main

MORE_CALLS = 3
READY = "ready\n"  # what the re-run's process says on stderr once it waits for its run
"""How many backward calls past the one that failed the verifying run lets through."""


class CallCounter:
    """Counts the backward and ``autograd.grad`` calls that return (an outer wrapper around the
    watch's, on the function through which both run the engine); with a ``limit``, stops the
    program once that many have returned."""

    def __init__(self, limit: int | None = None) -> None:
        self.count, self.limit = 0, limit
        self._saved: list[tuple[str, Any]] = []

    def _wrap(self, original: Any) -> Any:
        def counted(*args: Any, **kwargs: Any) -> Any:
            result = original(*args, **kwargs)
            self.count += 1
            if self.limit is not None and self.count >= self.limit:
                raise _Enough
            return result
        return counted

    def __enter__(self) -> CallCounter:
        import torch

        original = torch.autograd._engine_run_backward
        self._saved.append(("_engine_run_backward", original))
        torch.autograd._engine_run_backward = self._wrap(original)
        return self

    def __exit__(self, *exc_info: Any) -> None:
        import torch

        while self._saved:
            name, original = self._saved.pop()
            setattr(torch.autograd, name, original)


class _Enough(BaseException):
    """Raised in the verifying run once enough calls have run (not an Exception, so that the
    program's own ``except Exception`` does not catch it)."""


class Rerun:
    """The new process that runs the edited program, started before the program's first run: it
    imports torch while the first run goes on, on another core, then waits for the edit. The
    program's working directory and environment are those the first run started with. Not
    needed, it is stopped (``close``)."""

    def __init__(self) -> None:
        package = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
        env = dict(os.environ, PYTHONPATH=os.pathsep.join(
            [package] + [p for p in [os.environ.get("PYTHONPATH")] if p]))
        self.process = subprocess.Popen(
            [sys.executable, "-m", "autograd_lens.verify"], stdin=subprocess.PIPE,
            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, env=env,
            process_group=0)  # its own group: stopped as a whole (see lifetime)

    def run(self, spec: dict, seconds: float | None = None) -> str:
        """Hand the process its run once it is ready (torch imported) and wait for it to end (at
        most ``seconds`` from then: else ``subprocess.TimeoutExpired``); returns what it wrote
        to stderr."""
        ready = self.process.stderr.readline()
        if ready != READY:
            return ready + self.process.communicate()[1]
        return self.process.communicate(json.dumps(spec) + "\n", timeout=seconds)[1]

    def close(self) -> None:
        """Stop the process and all it started (a no-op once done)."""
        stop_group(self.process.pid)
        self.process.wait()
        for pipe in (self.process.stdin, self.process.stderr):
            with contextlib.suppress(OSError):
                pipe.close()

    def __enter__(self) -> Rerun:
        return self

    def __exit__(self, *exc_info: Any) -> None:
        self.close()


def bound(seconds_to_failure: float) -> float:
    """How long the re-run may take, in seconds, from the moment its process is ready: three
    times the first run's time to the failure, and a minute more (a busier machine)."""
    return 3 * seconds_to_failure + 60


def verify(edits: list[Edit], module: str | None, target: list[str], calls_before: int,
           rerun: Rerun | None = None, seconds: float | None = None) -> dict:
    """Run the program with ``edits`` applied, in a new process (``rerun``, if one was started
    before the first run); ``calls_before``: the calls that returned before the one that failed;
    ``seconds``: the bound, after which the run is stopped. Returns ``{"ran",
    "backward_calls", "error"}`` and, for :func:`verdict`, ``"same_error"``: whether its error
    is the freed-graph or in-place error again."""
    if not edits:
        return {"ran": False, "backward_calls": 0, "error": "no edit was derived to run"}
    with contextlib.ExitStack() as stack:
        rerun = rerun or Rerun()
        folder = stack.enter_context(tempfile.TemporaryDirectory(prefix="autograd_lens_verify_"))
        stack.callback(rerun.close)  # stopped first (however this ends), then the folder removed
        files = {}
        for index, (file, group) in enumerate(by_file(edits).items()):
            copy = os.path.join(folder, f"{index}_{os.path.basename(file)}")
            with open(copy, "w", encoding="utf-8") as handle:
                handle.writelines(apply(group, linecache.getlines(file)))
            files[os.path.abspath(file)] = copy
        result = os.path.join(folder, "result.json")
        try:
            stderr = rerun.run({"files": files, "module": module, "target": target,
                                "limit": calls_before + 1 + MORE_CALLS, "result": result},
                               seconds)
        except subprocess.TimeoutExpired:
            return {"ran": False, "backward_calls": 0,
                    "error": f"stopped after {seconds:.0f} s, the bound on the run"}
        if not os.path.exists(result):
            last = (stderr.strip().splitlines() or ["no output"])[-1]
            return {"ran": False, "backward_calls": 0, "error": f"the run did not finish: {last}"}
        with open(result, encoding="utf-8") as handle:
            return json.load(handle)


def verdict(verified: dict, calls_before: int) -> str:
    """What the re-run shows: "gone" (it got past the call that failed without an error),
    "still_fails" (the same kind of error again), "not_reached" (it ended, cleanly or on
    another kind of error, before the call that failed: it shows nothing about the edit),
    "other_error" (past the call that failed, another error), "not_run"."""
    if not verified["ran"]:
        return "not_run"
    reached = verified["backward_calls"] > calls_before
    if verified["error"] and verified.get("same_error", True):
        return "still_fails"
    if not reached:
        return "not_reached"
    return "other_error" if verified["error"] else "gone"


def announce(calls_before: int, seconds: float) -> str:
    """The line said before a re-run that repeats a long healthy phase (10 calls or more)."""
    if calls_before < 10:
        return ""
    return (f"\nautograd_lens: running the edited program again: it repeats the {calls_before} "
            "backward calls that ran before the one that failed, with their side effects "
            f"(stopped after {seconds:.0f} s at most).\n")


def describe(verified: dict, calls_before: int) -> str:
    """One paragraph for the text report."""
    head = "autograd_lens: ran the suggested edit: "
    said = verdict(verified, calls_before)
    if said == "not_run":
        return head + f"it could not run ({verified['error']})."
    count = verified["backward_calls"]
    calls = "1 backward call" if count == 1 else f"{count} backward calls"
    failing = f"call {calls_before + 1}"
    if said == "still_fails":
        return head + f"it still fails, after {calls}: {verified['error']}"
    if said == "not_reached":
        how = f"stopped on another error ({verified['error']})" if verified["error"] else \
            "ended"
        return (head + f"the run {how} after {calls}, before reaching the backward call that "
                f"failed (the first run's {failing}), so it does not show whether the error is "
                "gone. The re-run reads no input (stdin is empty), and finds what the first run "
                "left behind (files, folders).")
    if said == "other_error":
        return (head + f"it got past the call that failed, then stopped on another error, after "
                f"{calls}: {verified['error']}")
    return (head + f"{calls} ran without an error, past the call that failed. This shows the "
            "error is gone; it does not show that the edit computes what you meant (the words "
            "above the edit say what it computes).")


def _child(spec: dict) -> bool:
    """The verifying run; writes its result, and returns whether it stopped the program."""
    from .watch import Watch

    counter = CallCounter(spec["limit"])
    error, stopped, same = None, False, False
    try:
        with contextlib.ExitStack() as stack:
            if spec.get("record"):
                from .record import Recording
                stack.enter_context(Recording(spec))
            stack.enter_context(Watch())
            stack.enter_context(counter)
            run_as_main(spec["module"], spec["target"], spec["files"])
    except _Enough:
        stopped = True
    except SystemExit as leaving:
        if leaving.code not in (None, 0):
            error = f"the program exited with status {leaving.code}"
    except BaseException as caught:  # noqa: BLE001 - what the edited program raised is the answer
        error = f"{type(caught).__name__}: {str(caught).splitlines()[0] if str(caught) else ''}"
        same = error_kind(caught) is not None
    result = {"ran": True, "backward_calls": counter.count, "error": error}
    if error is not None:
        result["same_error"] = same
    with open(spec["result"], "w", encoding="utf-8") as handle:
        json.dump(result, handle)
    return stopped


if __name__ == "__main__":
    die_with_parent()
    from .watch import Watch  # noqa: F401 - torch imported while the first run goes on

    sys.stderr.write(READY)
    sys.stderr.flush()
    spec = sys.stdin.readline()  # empty: the first run needed no re-run
    if spec:
        sys.stdin = open(os.devnull)  # the re-run reads no input
        sys.stdout = sys.stderr = open(os.devnull, "w")  # the program's own output is not shown
        if _child(json.loads(spec)):
            # Stopped part-way, the program ends here, as if killed: its atexit handlers (which
            # could, say, save a half-trained model over the first run's) do not run, and
            # neither does the interpreter's clean-up, which takes torch almost half a second.
            os._exit(0)
