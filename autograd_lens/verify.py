"""``--verify``: run the program again with the suggested edit, and say whether the error is gone.

The edited files are written to a temporary folder, never into the user's; a new Python process
runs the program from there (the script's own folder stays first on ``sys.path``, so its
neighbours import as before, and an edited module is loaded from its edited copy), under the
same watch, with the same arguments and working directory. It stops once the backward call that
failed and a few more have run, or when the program ends, and reports what happened.

What a clean run proves: the edited program gets past the call that failed, and a few more,
without an error. It does not prove that the edited program computes what its author meant;
each pattern's proof programs (in the tests) compare the gradient of the edit with an
independent reference. Rerunning repeats the program's side effects (files it writes, loggers,
network calls) up to where it is stopped: that is why ``--verify`` is opt-in.
"""

from __future__ import annotations

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


def verify(edits: list[Edit], module: str | None, target: list[str], calls_before: int) -> dict:
    """Run the program with ``edits`` applied, in a new process; ``calls_before``: the calls that
    returned before the one that failed. Returns ``{"ran", "backward_calls", "error"}``."""
    if not edits:
        return {"ran": False, "backward_calls": 0, "error": "no edit was derived to run"}
    with tempfile.TemporaryDirectory(prefix="autograd_lens_verify_") as folder:
        files = {}
        for index, (file, group) in enumerate(by_file(edits).items()):
            copy = os.path.join(folder, f"{index}_{os.path.basename(file)}")
            with open(copy, "w", encoding="utf-8") as handle:
                handle.writelines(apply(group, linecache.getlines(file)))
            files[os.path.abspath(file)] = copy
        result = os.path.join(folder, "result.json")
        spec = {"files": files, "module": module, "target": target,
                "limit": calls_before + 1 + MORE_CALLS, "result": result}
        package = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
        env = dict(os.environ, PYTHONPATH=os.pathsep.join(
            [package] + [p for p in [os.environ.get("PYTHONPATH")] if p]))
        done = subprocess.run([sys.executable, "-m", "autograd_lens.verify", json.dumps(spec)],
                              capture_output=True, text=True, env=env)
        if not os.path.exists(result):
            last = (done.stderr.strip().splitlines() or ["no output"])[-1]
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


def _run(files: dict[str, str], module: str | None, target: list[str]) -> None:
    sys.meta_path.insert(0, _EditedFinder(files))
    if module is not None:
        sys.argv = [module, *target]
        runpy.run_module(module, run_name="__main__", alter_sys=True)
        return
    script = os.path.abspath(target[0])
    sys.argv, sys.path[0] = list(target), os.path.dirname(script)
    if script not in files:
        runpy.run_path(script, run_name="__main__")
        return
    with open(files[script], encoding="utf-8") as handle:
        code = compile(handle.read(), files[script], "exec")
    main = types.ModuleType("__main__")
    main.__file__ = script  # the program finds its data beside it, as before
    sys.modules["__main__"] = main
    exec(code, main.__dict__)


def _child(spec: dict) -> None:
    from .watch import Watch

    counter = CallCounter(spec["limit"])
    error = None
    try:
        with Watch(), counter:
            _run(spec["files"], spec["module"], spec["target"])
    except _Enough:
        pass
    except SystemExit as leaving:
        if leaving.code not in (None, 0):
            error = f"the program exited with status {leaving.code}"
    except BaseException as caught:  # noqa: BLE001 - what the edited program raised is the answer
        error = f"{type(caught).__name__}: {str(caught).splitlines()[0] if str(caught) else ''}"
    with open(spec["result"], "w", encoding="utf-8") as handle:
        json.dump({"ran": True, "backward_calls": counter.count, "error": error}, handle)


if __name__ == "__main__":
    sys.stdout = sys.stderr = open(os.devnull, "w")  # the program's own output is not shown
    _child(json.loads(sys.argv[1]))
