"""The program's traceback as ``python`` would show it, without the command's frames (nor
runpy's, where Python's own would not show them), and the user's call of backward that raised.
"""

from __future__ import annotations

import importlib.util
import os
import sys
import types
from typing import Any

from .unseen import PACKAGE

_TORCH = os.path.dirname(importlib.util.find_spec("torch").origin) + os.sep


def _ours(filename: str) -> bool:
    here = PACKAGE
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


def print_traceback(caught: BaseException) -> None:
    shown = caught.with_traceback(_user_traceback(caught.__traceback__))
    sys.excepthook(type(shown), shown, shown.__traceback__)

