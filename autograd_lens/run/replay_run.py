"""The replay: the program run again, under full recording, up to the call that failed.

After the first run failed, :func:`replay` hands the program to a second process
(:class:`~autograd_lens.run.rerun.Rerun`, started with the first run so that it imports torch
meanwhile), which runs it under :class:`~autograd_lens.run.record.Recording` (spec key
``"record"``) and stops it at its failing backward call. What that process recorded there is the
evidence every statement of the diagnosis is made from (see
:mod:`autograd_lens.run.record_evidence`). A program that does not fail the same way again (at
another call, or with another error: it is not seeded, it reads the clock or its input) gives
no evidence: the diagnosis then keeps what the first run saw, and says that it is a guess.

Under a distributed launcher (``torchrun``) there is no replay: one rank's replay would wait
in the job's collectives for the other ranks (:func:`refusal` says so in one line).
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import os
import pickle
import subprocess
from collections.abc import Mapping
from typing import Any

from .launched import distributed_launch
from .rerun import Rerun


def refusal(environ: Mapping[str, str]) -> str | None:
    """The one line said instead of a replay under a distributed launcher (else None)."""
    variable = distributed_launch(environ)
    if variable is None:
        return None
    return (f"autograd_lens: no replay under torchrun or another distributed launcher "
            f"({variable} is set): one rank's replay would wait for the other ranks; what "
            "follows is read from the failure alone, a guess where it says so.\n")


class Replayed(dict):
    """The replay's evidence (a dict, as :mod:`autograd_lens.run.record_evidence` makes it), and in
    :attr:`finding` the replay's own :class:`~autograd_lens.explain.finding.Finding` of the failing
    call: made, as the first run's is, from the program's frames there, but with every earlier
    call recorded (None when it could not be made)."""

    finding: Any = None


class _Pickler(pickle.Pickler):
    """A finding's pattern travels as its key in the catalogue (it holds the rules' functions)."""

    def persistent_id(self, obj: Any) -> Any:
        from ..fixes.patterns import Pattern

        return ("pattern", obj.key) if isinstance(obj, Pattern) else None


class _Unpickler(pickle.Unpickler):
    def persistent_load(self, pid: Any) -> Any:
        from ..predict.report import PATTERNS

        return PATTERNS[pid[1]]


def dump_finding(finding: Any, path: str) -> None:
    """Write ``finding`` (in the replay's process) for :func:`replay` to read; nothing when it
    is None or cannot be written."""
    if finding is None:
        return
    try:
        with open(path, "wb") as handle:  # in the sandbox's folder
            _Pickler(handle).dump(finding)
    except Exception:  # noqa: BLE001 - the evidence is written already; the finding is extra
        with contextlib.suppress(OSError):
            os.remove(path)


def _load_finding(path: str) -> Any:
    try:
        with open(path, "rb") as handle:
            return _Unpickler(handle).load()
    except Exception:  # noqa: BLE001 - no finding: the first run's is kept
        return None


def replay(module: str | None, target: list[str], calls_before: int, seconds: float | None,
           rerun: Rerun | None = None, kind: str | None = None) -> Replayed | None:
    """Run the program again under recording, up to backward call ``calls_before + 1`` (the one
    that failed), within ``seconds``; returns the evidence (and the replay's finding), or None
    when it did not fail the same way (another call number, or another ``kind`` of error:
    ``"freed"`` or ``"modified"``), or could not run. :func:`start_replay` and
    :func:`finish_replay` do the same in two halves."""
    own = rerun is None  # a process started here is closed here; one handed in stays open
    rerun = rerun or Rerun()
    try:
        return finish_replay(start_replay(module, target, calls_before, seconds, rerun, kind))
    finally:
        if own:
            rerun.close()


class Replaying:
    """The replay started by :func:`start_replay` (run ``run`` of ``rerun``)."""

    def __init__(self, rerun: Rerun, run: int | None, spec: dict, calls_before: int,
                 kind: str | None) -> None:
        self.rerun, self.run, self.spec = rerun, run, spec
        self.calls_before, self.kind = calls_before, kind
        self._failed: dict | None = None

    def failed_at(self) -> dict | None:
        """As soon as the replay reached the failing call (before its evidence is made): the
        call's number, the kind of error and the optimizer steps made before it, as the
        evidence will say them, if the replay failed the same way; else None (not yet, or not
        the same way)."""
        if self._failed is None:
            with contextlib.suppress(OSError, ValueError):
                with open(self.spec["failed_at"], encoding="utf-8") as handle:
                    self._failed = json.load(handle)
        found = self._failed
        if not found or found.get("call") != self.calls_before + 1 or \
                (self.kind is not None and found.get("kind") != self.kind):
            return None
        return found


def start_replay(module: str | None, target: list[str], calls_before: int,
                 seconds: float | None, rerun: Rerun, kind: str | None = None,
                 waiting: bool = True) -> Replaying:
    """Start the replay (see :func:`replay`) in ``rerun``'s process and return at once
    (``waiting``: as in :meth:`~autograd_lens.run.rerun.Rerun.start`)."""
    # The replay's files in the sandbox's folder, removed with it.
    folder = os.path.join(rerun.folder, f"replay_{rerun.runs}")
    os.makedirs(folder, exist_ok=True)
    spec = {"files": {}, "module": module, "target": list(target),
            "limit": calls_before + 1, "result": os.path.join(folder, "result.json"),
            "record": os.path.join(folder, "evidence.json"),
            "finding": os.path.join(folder, "finding.pickle"),
            "failed_at": os.path.join(folder, "failed_at.json")}
    return Replaying(rerun, rerun.start(spec, seconds, waiting), spec, calls_before, kind)


def finish_replay(replaying: Replaying, poll: Any = None) -> Replayed | None:
    """Wait for the replay (``poll`` called meanwhile, as in
    :meth:`~autograd_lens.run.rerun.Rerun.wait`) and return what :func:`replay` returns."""
    rerun, spec = replaying.rerun, replaying.spec
    copy = os.path.join(rerun.folder, f"run_{replaying.run}")  # the folder it ran in
    try:
        rerun.wait(replaying.run, poll)
    except subprocess.TimeoutExpired:
        return None
    if replaying.run is None or not os.path.exists(spec["record"]):
        return None
    with open(spec["record"], encoding="utf-8") as handle:
        found = json.load(handle)
    finding = _load_finding(spec["finding"])
    if found.get("call") != replaying.calls_before + 1 or \
            (replaying.kind is not None and found.get("kind") != replaying.kind):
        return None
    replayed = Replayed(_as_original(found, copy, rerun.root))
    replayed.finding = _as_original(finding, copy, rerun.root)
    return replayed


def _as_original(value: Any, copy: str, root: str) -> Any:
    """``value`` with each ``"file"`` (a dict's key, or a dataclass's field) inside the run's
    copy of the folder named as the user's own file (the copy's path is the sandbox's, gone
    with it)."""
    from ..fixes.patterns import Pattern

    if isinstance(value, (list, tuple)) and not hasattr(value, "_fields"):
        return type(value)(_as_original(item, copy, root) for item in value)
    if dataclasses.is_dataclass(value) and not isinstance(value, (type, Pattern)):
        changes = {f.name: _as_original(getattr(value, f.name), copy, root)
                   for f in dataclasses.fields(value) if f.init}
        if isinstance(changes.get("file"), str):
            changes["file"] = _path(changes["file"], copy, root)
        return dataclasses.replace(value, **changes)
    if not isinstance(value, dict):
        return value
    found = {key: _as_original(item, copy, root) for key, item in value.items()}
    if isinstance(found.get("file"), str):
        found["file"] = _path(found["file"], copy, root)
    return found


def _path(path: str, copy: str, root: str) -> str:
    """A path inside the run's copy, as the user's own; any other as it is."""
    if path == copy or path.startswith(copy + os.sep):
        return os.path.join(root, os.path.relpath(path, copy))
    return path
