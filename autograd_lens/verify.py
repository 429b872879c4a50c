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
import importlib.abc
import importlib.machinery
import importlib.util
import json
import linecache
import os
import runpy
import subprocess
import sys
import tempfile
import types
from typing import Any

import torch

from .edits import Edit, apply, by_file

MORE_CALLS = 3
"""How many backward calls past the one that failed the verifying run lets through."""


class CallCounter:
    """Counts the backward and ``autograd.grad`` calls that return (an outer wrapper around the
    watch's); with a ``limit``, stops the program once that many have returned."""

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
        for name in ("backward", "grad"):
            original = getattr(torch.autograd, name)
            self._saved.append((name, original))
            setattr(torch.autograd, name, self._wrap(original))
        return self

    def __exit__(self, *exc_info: Any) -> None:
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
            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, env=env)

    def run(self, spec: dict) -> str:
        """Hand the process its run and wait for it to end; returns what it wrote to stderr."""
        return self.process.communicate(json.dumps(spec) + "\n")[1]

    def close(self) -> None:
        if self.process.poll() is None:
            self.process.kill()
        self.process.communicate()

    def __enter__(self) -> Rerun:
        return self

    def __exit__(self, *exc_info: Any) -> None:
        self.close()


def verify(edits: list[Edit], module: str | None, target: list[str], calls_before: int,
           rerun: Rerun | None = None) -> dict:
    """Run the program with ``edits`` applied, in a new process (``rerun``, if one was started
    before the first run); ``calls_before``: the calls that returned before the one that failed.
    Returns ``{"ran", "backward_calls", "error"}``."""
    if not edits:
        return {"ran": False, "backward_calls": 0, "error": "no edit was derived to run"}
    with contextlib.ExitStack() as stack:
        if rerun is None:
            rerun = stack.enter_context(Rerun())
        folder = stack.enter_context(tempfile.TemporaryDirectory(prefix="autograd_lens_verify_"))
        files = {}
        for index, (file, group) in enumerate(by_file(edits).items()):
            copy = os.path.join(folder, f"{index}_{os.path.basename(file)}")
            with open(copy, "w", encoding="utf-8") as handle:
                handle.writelines(apply(group, linecache.getlines(file)))
            files[os.path.abspath(file)] = copy
        result = os.path.join(folder, "result.json")
        stderr = rerun.run({"files": files, "module": module, "target": target,
                            "limit": calls_before + 1 + MORE_CALLS, "result": result})
        if not os.path.exists(result):
            last = (stderr.strip().splitlines() or ["no output"])[-1]
            return {"ran": False, "backward_calls": 0, "error": f"the run did not finish: {last}"}
        with open(result, encoding="utf-8") as handle:
            return json.load(handle)


def describe(verified: dict, calls_before: int) -> str:
    """One paragraph for the text report."""
    head = "autograd_lens: ran the suggested edit: "
    if not verified["ran"]:
        return head + f"it could not run ({verified['error']})."
    count = verified["backward_calls"]
    calls = "1 backward call" if count == 1 else f"{count} backward calls"
    if verified["error"]:
        return head + f"it still fails, after {calls}: {verified['error']}"
    reached = "past the call that failed" if count > calls_before else \
        "to the end of the program"
    return (head + f"{calls} ran without an error, {reached}. This shows the "
            "error is gone; it does not show that the edit computes what you meant (the words "
            "above the edit say what it computes).")


class _EditedFinder(importlib.abc.MetaPathFinder):
    """Loads a module whose file was edited from its edited copy."""

    def __init__(self, files: dict[str, str]) -> None:
        self.files = files

    def find_spec(self, name: str, path: Any, target: Any = None) -> Any:
        spec = importlib.machinery.PathFinder.find_spec(name, path)
        origin = os.path.abspath(spec.origin) if spec is not None and spec.origin else None
        if origin not in self.files:
            return None
        return importlib.util.spec_from_file_location(
            name, self.files[origin], submodule_search_locations=spec.submodule_search_locations)


def run_as_main(module: str | None, target: list[str], files: dict[str, str] | None = None) -> None:
    """Run the script (``target[0]``, its arguments after it) or the module as ``__main__``, as
    Python itself would. ``files``: edited copies to run in place of the program's own files
    (the verifying run: the script, or modules it imports)."""
    if files:
        sys.meta_path.insert(0, _EditedFinder(files))
    if module is not None:
        sys.argv = [module, *target]
        runpy.run_module(module, run_name="__main__", alter_sys=True)
        return
    script = os.path.abspath(target[0])
    sys.argv, sys.path[0] = list(target), os.path.dirname(script)
    if script not in (files or {}):
        runpy.run_path(script, run_name="__main__")
        return
    with open(files[script], encoding="utf-8") as handle:
        code = compile(handle.read(), files[script], "exec")
    main = types.ModuleType("__main__")
    main.__file__ = script  # the program finds its data beside it, as before
    sys.modules["__main__"] = main
    exec(code, main.__dict__)


def _child(spec: dict) -> bool:
    """The verifying run; writes its result, and returns whether it stopped the program."""
    from .watch import Watch

    counter = CallCounter(spec["limit"])
    error, stopped = None, False
    try:
        with Watch(), counter:
            run_as_main(spec["module"], spec["target"], spec["files"])
    except _Enough:
        stopped = True
    except SystemExit as leaving:
        if leaving.code not in (None, 0):
            error = f"the program exited with status {leaving.code}"
    except BaseException as caught:  # noqa: BLE001 - what the edited program raised is the answer
        error = f"{type(caught).__name__}: {str(caught).splitlines()[0] if str(caught) else ''}"
    with open(spec["result"], "w", encoding="utf-8") as handle:
        json.dump({"ran": True, "backward_calls": counter.count, "error": error}, handle)
    return stopped


if __name__ == "__main__":
    spec = sys.stdin.readline()  # empty: the first run needed no re-run
    if spec:
        sys.stdin = open(os.devnull)  # the re-run reads no input
        sys.stdout = sys.stderr = open(os.devnull, "w")  # the program's own output is not shown
        if _child(json.loads(spec)):
            # Stopped part-way, the program ends here, as if killed: its atexit handlers (which
            # could, say, save a half-trained model over the first run's) do not run, and
            # neither does the interpreter's clean-up, which takes torch almost half a second.
            os._exit(0)
