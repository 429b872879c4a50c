"""The replay: the program run again, under full recording, up to the call that failed.

After the first run failed, :func:`replay` hands the program to a second process
(:class:`~autograd_lens.verify.Rerun`, started with the first run so that it imports torch
meanwhile), which runs it under :class:`~autograd_lens.record.Recording` (spec key
``"record"``) and stops it at its failing backward call. What that process recorded there is the
evidence every statement of the diagnosis is made from (see
:mod:`autograd_lens.record_evidence`). A program that does not fail the same way again (at
another call, or with another error: it is not seeded, it reads the clock or its input) gives
no evidence: the diagnosis then keeps what the first run saw, and says that it is a guess.

Under a distributed launcher (``torchrun``) there is no replay: one rank's replay would wait
in the job's collectives for the other ranks (:func:`refusal` says so in one line).
"""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Mapping

from .launched import distributed_launch
from .verify import Rerun


def refusal(environ: Mapping[str, str]) -> str | None:
    """The one line said instead of a replay under a distributed launcher (else None)."""
    variable = distributed_launch(environ)
    if variable is None:
        return None
    return (f"autograd_lens: no replay under torchrun or another distributed launcher "
            f"({variable} is set): one rank's replay would wait for the other ranks; what "
            "follows is read from the failure alone, a guess where it says so.\n")


def replay(module: str | None, target: list[str], calls_before: int, seconds: float | None,
           rerun: Rerun | None = None, kind: str | None = None) -> dict | None:
    """Run the program again under recording, up to backward call ``calls_before + 1`` (the one
    that failed), within ``seconds``; returns the evidence, or None when it did not fail the
    same way (another call number, or another ``kind`` of error: ``"freed"`` or
    ``"modified"``), or could not run."""
    own = rerun is None  # a process started here is closed here; one handed in stays open
    rerun = rerun or Rerun()
    try:  # the replay's files in the sandbox's folder, removed with it
        folder = os.path.join(rerun.folder, f"replay_{rerun.runs}")
        os.makedirs(folder, exist_ok=True)
        record = os.path.join(folder, "evidence.json")
        copy = os.path.join(rerun.folder, f"run_{rerun.runs}")  # the folder it runs in
        spec = {"files": {}, "module": module, "target": list(target),
                "limit": calls_before + 1, "result": os.path.join(folder, "result.json"),
                "record": record}
        try:
            rerun.run(spec, seconds)
        except subprocess.TimeoutExpired:
            return None
        if not os.path.exists(record):
            return None
        with open(record, encoding="utf-8") as handle:
            found = json.load(handle)
    finally:
        if own:
            rerun.close()
    if found.get("call") != calls_before + 1 or (kind is not None and found.get("kind") != kind):
        return None
    return _as_original(found, copy, rerun.root)


def _as_original(value: object, copy: str, root: str) -> object:
    """``value`` with each ``"file"`` inside the run's copy of the folder named as the user's
    own file (the copy's path is the sandbox's, gone with it)."""
    if isinstance(value, list):
        return [_as_original(item, copy, root) for item in value]
    if not isinstance(value, dict):
        return value
    found = {key: _as_original(item, copy, root) for key, item in value.items()}
    path = found.get("file")
    if isinstance(path, str) and (path == copy or path.startswith(copy + os.sep)):
        found["file"] = os.path.join(root, os.path.relpath(path, copy))
    return found
