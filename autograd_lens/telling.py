"""What the command says about a failed backward, and when.

The diagnosis is made at the moment backward fails (see :class:`~autograd_lens.watch.Watch`),
and :class:`Teller` puts it in the ``--report`` file at once. It is printed at once too when the
error could be caught on its way out (a ``try``, a framework's wrapper, another thread):
whatever the program then does with it (logs it and exits, carries on), the diagnosis has been
said. An error that nothing can catch reaches the command, which prints Python's traceback first
and the diagnosis after it; so does one that only ``with`` blocks see on its way out (should an
``__exit__`` swallow it, the diagnosis is said at the next failure or when the program ends).
Each failure is printed once. After the program has ended, the replay's evidence (see
:mod:`autograd_lens.replay_run`) remakes the finding's statements (:meth:`Teller.amend`): a
diagnosis still pending is printed in that form; one already said is said again when the
recording changed it. ``--verify``'s run comes at the end.
"""

from __future__ import annotations

import json
import os
import sys
import time
from typing import TYPE_CHECKING, Any, Callable

from .edits import unified_diff
from .errors import FREED_GRAPH_PATTERN, INPLACE_PATTERN, error_kind
from .places import is_cell, shown_file
from .unseen import may_be_caught

if TYPE_CHECKING:  # the command imports torch only when the program does
    from .rules import Fix
    from .situation import Finding

EMPTY_REPORT = {"error": None, "carriers": [], "frontier": [], "pattern": "", "title": "",
                "fix": "", "page": "", "hidden": [], "recorded": None}


def _shown(file: str) -> str:
    """A file's name as the diff shows it: relative to the working folder when inside it; a
    notebook cell as ``In [4]``."""
    if is_cell(file):
        return shown_file(file)
    relative = os.path.relpath(file) if os.path.isabs(file) else file
    return file if relative.startswith("..") else relative


def edit_text(fixes: list[Fix], pattern: Any) -> str:
    """The suggested edit as a unified diff, then the other choices, each with what it computes;
    without one, why there is none."""
    if not fixes:
        if pattern is None:
            return ""
        why = "no pattern shows in the evidence" if pattern.key == "unknown" else \
            "the source does not show plainly where the fix goes; the fix above says what to change"
        return f"autograd_lens: no edit of your lines is suggested: {why}.\n"
    parts = []
    cells = all(is_cell(edit.file) for fix in fixes for edit in fix.edits)
    first = "The fix as an edit of your cell" if cells else "The fix as an edit of your program"
    for index, fix in enumerate(fixes):
        lead = first if index == 0 else "Or"
        parts.append(f"{lead} ({fix.computes}):\n{unified_diff(list(fix.edits), _shown)}")
    return "\n".join(parts)


CHILD_NOTE = ("\nautograd_lens: this error happened in a child process, which the command does not "
              "watch; to see the diagnosis, run that part in the command's own process.\n")


def from_a_child(error: BaseException) -> bool:
    """Whether ``error`` reports a freed-graph (or in-place) error raised elsewhere: its text
    holds one, but it is not one itself (torch.multiprocessing.spawn's ProcessRaisedException,
    a process pool's error)."""
    text = str(error)
    return error_kind(error) is None and bool(
        FREED_GRAPH_PATTERN.search(text) or INPLACE_PATTERN.search(text))


class Teller:
    """Says each diagnosis once, writes the report, and keeps what ``--verify`` needs:
    ``report`` the report's absolute path (or None), ``calls`` a function giving the number of
    backward calls that returned so far."""

    def __init__(self, report: str | None, calls: Callable[[], int]) -> None:
        self.report, self.calls = report, calls
        self.finding: Finding | None = None
        self.fixes: list[Fix] = []
        self.calls_before = 0
        self.pending = ""  # a diagnosis to print after Python's traceback
        self.verified: dict | None = None
        self.verdict: str | None = None
        self.started, self.seconds = time.monotonic(), 0.0  # the first run's time to the failure
        self.where: tuple[str, int] | None = None  # the program's call of backward that failed
        self.text = ""

    def failed(self, finding: Finding, frame: Any) -> None:
        """At the moment a backward failed (``frame``: the program's call of it)."""
        self.say_pending()  # an earlier failure that a ``with`` block swallowed: said first
        self.finding, self.calls_before = finding, self.calls()
        self.seconds = time.monotonic() - self.started
        self.where = None if frame is None else (frame.f_code.co_filename, frame.f_lineno)
        self._made()
        self.write()
        if frame is None or may_be_caught(frame):
            self.pending = ""
            sys.stderr.write(self.text)
            sys.stderr.flush()
        else:
            self.pending = self.text

    def _made(self) -> None:
        """The fixes and the text, from the finding as it stands."""
        finding = self.finding
        self.fixes = finding.pattern.fixes(finding.carriers, self.where) if finding.pattern \
            else []
        edit = edit_text(self.fixes, finding.pattern)
        self.text = "\n" + str(finding) + "\n" + (edit and "\n" + edit)

    def amend(self, evidence: dict | None, why_not: str = "") -> None:
        """The finding said from the replay's ``evidence`` (None: marked as a guess, with
        ``why_not``); said again at once when it was already said at the failure."""
        from .recorded import amend

        if self.finding is None:
            return
        said = self.text
        self.finding = amend(self.finding, evidence, why_not)
        self._made()
        self.write()
        if self.pending:
            self.pending = self.text
        else:  # said at the failure: what the recording changed or adds, once
            before = set(said.splitlines())
            new = [line for line in self.text.splitlines() if line and line not in before]
            if new:
                sys.stderr.write("\nautograd_lens: after replaying the run up to the failing "
                                 "call:\n" + "\n".join(new) + "\n")
                sys.stderr.flush()

    def say_pending(self) -> None:
        """Print the diagnosis kept for after the traceback (if any)."""
        if self.pending:
            sys.stderr.write(self.pending)
            self.pending = ""

    def write(self) -> None:
        if self.report is None:
            return
        data = dict(EMPTY_REPORT) if self.finding is None else self.finding.as_dict()
        first, others = (self.fixes[0], self.fixes[1:]) if self.fixes else (None, [])
        data.update({"edits": [e.as_dict() for e in first.edits] if first else [],
                     "computes": first.computes if first else "",
                     "alternatives": [[e.as_dict() for e in fix.edits] for fix in others],
                     "alternatives_computes": [fix.computes for fix in others],
                     "verified": self.verified, "verdict": self.verdict})
        with open(self.report, "w", encoding="utf-8") as handle:
            json.dump(data, handle, indent=2)
            handle.write("\n")
