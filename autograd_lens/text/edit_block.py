"""The edit block: the fix written as an edit of the program's own lines, a unified diff whose
paths are relative to the folder the command started in; then the other choices, each with
what it computes. Before the edits are run they are said to be not run; after their runs (see
:mod:`autograd_lens.run.verify`), the first that held is the fix, the others that held are
alternatives, those that could not be checked say why, and those that failed are failed attempts.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any

from ..source.edits import unified_diff
from ..source.places import is_cell, shown_file

if TYPE_CHECKING:
    from ..fixes.rules import Fix


# The folder the command started in: the diff's paths are relative to it, even when the program
# has changed its working folder since (set by each Teller).
STARTED_IN: list[str] = []


def _shown(file: str) -> str:
    """A file's name as the diff shows it: relative to the folder the command started in when
    inside it, quoted as ``patch`` reads a name with spaces (``"my runs/train.py"``); a
    notebook cell as ``In [4]``."""
    if is_cell(file):
        return shown_file(file)
    start = STARTED_IN[-1] if STARTED_IN else os.getcwd()
    relative = os.path.relpath(file, start) if os.path.isabs(file) else file
    name = file if relative.startswith("..") else relative
    if any(c.isspace() or c in '"\\' for c in name):
        name = '"' + name.replace("\\", "\\\\").replace('"', '\\"') + '"'
    return name


NOT_RUN = ("autograd_lens: the edits below were not run ({why}): none of them is shown to "
           "remove the error or to keep every weight training.\n")


def _diff(fix: Fix) -> str:
    return unified_diff(list(fix.edits), _shown)


def _where(fix: Fix) -> str:
    edit = fix.edits[0]
    return f"{_shown(edit.file)}, line {edit.line}"


def edit_text(fixes: list[Fix], pattern: Any, runs: list[dict] | None = None,
              calls_before: int = 0, not_run: str = "") -> str:
    """The edit block: without ``runs``, each edit as a unified diff (the first as the fix,
    then the other choices, each with what it computes), said to be not run (``not_run``: why);
    with ``runs`` (each fix's verified result, in order, see :mod:`autograd_lens.run.verify`), the
    first edit that held as the fix, the others that held as alternatives, those that could not
    be checked with why, and those that failed only as failed attempts, with what happened.
    Without a fix, why there is none."""
    from ..run.verify import FAILED, HOLDS, happened, verdict

    if not fixes:
        if pattern is None:
            return ""
        why = "no pattern shows in the evidence" if pattern.key == "unknown" else \
            "the source does not show plainly where the fix goes; the fix above says what to change"
        return f"autograd_lens: no edit of your lines is suggested: {why}.\n"
    cells = all(is_cell(edit.file) for fix in fixes for edit in fix.edits)
    first = "The fix as an edit of your cell" if cells else "The fix as an edit of your program"
    if runs is None:
        parts = [NOT_RUN.format(why=not_run)] if not_run else []
        for index, fix in enumerate(fixes):
            lead = first if index == 0 else "Or"
            parts.append(f"{lead} ({fix.computes}):\n{_diff(fix)}")
        return "\n".join(parts)
    said = [verdict(run, calls_before) for run in runs]
    held = [i for i, v in enumerate(said) if v in HOLDS]
    failed = [i for i, v in enumerate(said) if v in FAILED]
    unchecked = [i for i in range(len(fixes)) if i not in held and i not in failed]
    parts = []
    for rank, index in enumerate(held):
        fix = fixes[index]
        lead = f"{first}, run and verified" if rank == 0 else "Or, also run and verified"
        parts.append(f"{lead} ({fix.computes}):\n{_diff(fix)}"
                     f"Run: {happened(runs[index], calls_before)}.\n")
    for rank, index in enumerate(unchecked):
        fix = fixes[index]
        lead = f"{first}, not verified" if not held and rank == 0 else "Or, not verified"
        parts.append(f"{lead} ({fix.computes}):\n{_diff(fix)}"
                     f"Run: {happened(runs[index], calls_before)}.\n")
    if failed:
        head = "autograd_lens: no suggested edit held when run; " if not held and not unchecked \
            else "autograd_lens: "
        lines = [head + ("these failed attempts are not to apply:" if len(failed) > 1 else
                         "this failed attempt is not to apply:")]
        lines += [f"  - {_where(fixes[i])} ({fixes[i].computes}): "
                  f"{happened(runs[i], calls_before)}." for i in failed]
        parts.append("\n".join(lines) + "\n")
    text = ("autograd_lens: each suggested edit was run in a sandbox (a temporary copy of your "
            "folder; your files are not touched), past the call that failed and "
            "two more backward calls.\n")
    return text + "\n" + "\n".join(parts)
