"""What the command says about a failed backward, and when.

The diagnosis is made at the moment backward fails (see :class:`~autograd_lens.run.watch.Watch`),
and :class:`Teller` puts it in the ``--report`` file at once. It is printed at once too when the
error could be caught on its way out (a ``try``, a framework's wrapper, another thread):
whatever the program then does with it (logs it and exits, carries on), the diagnosis has been
said. An error that nothing can catch reaches the command, which prints Python's traceback first
and the diagnosis after it; so does one that only ``with`` blocks see on its way out (should an
``__exit__`` swallow it, the diagnosis is said at the next failure or when the program ends).
Each failure is printed once. After the program has ended, the replay's evidence (see
:mod:`autograd_lens.run.replay_run`) remakes the finding's statements (:meth:`Teller.amend`): a
diagnosis still pending is printed in that form; one already said is said again when the
recording changed it. The runs of the candidate edits come after the replay, and the edit block
(the fix that held, alternatives, failed attempts; see :mod:`autograd_lens.text.edit_block`)
after them. What the report holds is :mod:`autograd_lens.text.report_data`'s; the diagnosis in
short, said last, :mod:`autograd_lens.text.in_short`'s.
"""

from __future__ import annotations

import contextlib
import json
import os
import sys
import time
from typing import TYPE_CHECKING, Any, Callable

from ..source.places import place
from ..run.unseen import may_be_caught
from .child_processes import child_identity
from .edit_block import STARTED_IN, edit_text
from .in_short import in_short
from .report_data import report_data

if TYPE_CHECKING:  # the command imports torch only when the program does
    from ..fixes.rules import Fix
    from ..explain.finding import Finding


def _guarded() -> bool:
    """Whether the failing call runs inside the program's own :class:`diagnose_on_error`
    (whose wrapper is around the watch's), which adds the diagnosis to the error's message:
    the command then does not say it a second time."""
    on_error = sys.modules.get("autograd_lens.text.on_error")
    return on_error is not None and getattr(on_error._state, "busy", False)


def _guarded_text(text: str) -> bool:
    return "from the program's own diagnose_on_error" in text


class Teller:
    """Says each diagnosis once, writes the report, and keeps what the verification needs:
    ``report`` the report's absolute path (or None), ``calls`` a function giving the number of
    backward calls that returned so far; ``verifying``: the edits are run before they are
    printed (else ``not_run`` says why they are not)."""

    def __init__(self, report: str | None, calls: Callable[[], int], verifying: bool = False,
                 not_run: str = "") -> None:
        self.report, self.calls = report, calls
        self.pid = os.getpid()  # the command's process; a forked child's failures go through
        self.children: str | None = None  # ... this file (one JSON line each), set by main
        STARTED_IN[:] = [os.getcwd()]
        self.verifying, self.not_run = verifying, not_run
        self.finding: Finding | None = None
        self.fixes: list[Fix] = []
        self.own: list[bool] = []  # for each fix: one the pattern's words lead to
        self.unbound: list[str] = []  # the edits left out: a name they use is not bound there
        self.calls_before = 0
        self.pending = ""  # a diagnosis to print after Python's traceback (and the runs)
        self.guarded = False  # the failure ran inside the program's own diagnose_on_error
        self.runs: list[dict] | None = None  # each fix's verified result, in order
        self.verified: dict | None = None
        self.verdict: str | None = None
        self.started, self.seconds = time.monotonic(), 0.0  # the first run's time to the failure
        self.where: tuple[str, int] | None = None  # the program's call of backward that failed
        self.text = ""
        # The same error again at a place already diagnosed: the times, by (file, line).
        self.repeats: dict[tuple[str, int], int] = {}

    def failed(self, finding: Finding, frame: Any) -> None:
        """At the moment a backward failed (``frame``: the program's call of it)."""
        if os.getpid() != self.pid:
            self._in_a_child(finding, frame)
            return
        self.say_pending()  # an earlier failure that a ``with`` block swallowed: said first
        self.finding, self.calls_before = finding, self.calls()
        self.seconds = time.monotonic() - self.started
        self.runs = self.verified = self.verdict = None
        self.where = None if frame is None else (frame.f_code.co_filename, frame.f_lineno)
        self._made()
        self.write()
        text = self.text
        self.guarded = _guarded()
        if self.guarded:  # the program's own diagnose_on_error puts it in the error's message
            text = (f"\n{self.text.strip().splitlines()[0]}\nautograd_lens: the diagnosis is in "
                    "the error's message, from the program's own diagnose_on_error.\n")
        if frame is None or may_be_caught(frame):
            self.pending = ""
            sys.stderr.write(text)
            sys.stderr.flush()
        else:
            self.pending = text

    def _in_a_child(self, finding: Finding, frame: Any) -> None:
        """A failure in a process the program forked (``os.fork``, multiprocessing's fork
        start method: a Pool's worker): said there, at once, with the child's identity, and
        handed to the command's process through ``children`` (one JSON line), which puts it in
        the report. Nothing is replayed or run for it: only the command's process does that."""
        self.finding, self.runs, self.verified, self.verdict = finding, None, None, None
        self.where = None if frame is None else (frame.f_code.co_filename, frame.f_lineno)
        self.verifying, self.not_run = False, "it failed in a child process"
        self._made()
        who = child_identity()
        sys.stderr.write(f"\nautograd_lens: in child process {who['pid']} ({who['how']}):"
                         + self.text)
        sys.stderr.flush()
        if self.children is None:
            return
        record = dict(report_data(self), **who)
        with contextlib.suppress(OSError):
            with open(self.children, "a", encoding="utf-8") as handle:
                handle.write(json.dumps(record) + "\n")

    def repeated(self, file: str, line: int, times: int) -> None:
        """The same error again at the program's call ``file``:``line``, diagnosed already:
        one line, at once; the report gets the count when it is next written (at the end)."""
        self.repeats[(file, line)] = times
        sys.stderr.write(("\n" if times == 1 else "") + "autograd_lens: the same error at "
                         f"{place(file, line)} again, {times} time{'s' if times != 1 else ''} "
                         "so far.\n")

    def summary(self) -> str:
        """The diagnosis in three lines (carrier and its line, fix, page), said last when the
        error ended the program, after Python's traceback and the edits."""
        return in_short(self)

    def _made(self) -> None:
        """The fixes and the text, from the finding as it stands."""
        from ..source.bound_names import names_bound

        finding = self.finding
        read = [c for c in finding.carriers if not c.held]  # the source's: edits come from them
        fixes = finding.pattern.fixes(read, self.where, finding.write if finding.inplace
                                      else None) if finding.pattern else []
        own = [f.edits for f in fixes]  # the edits the pattern's words lead to
        if finding.pattern is not None and not finding.inplace and finding.evidence:
            from ..fixes.earlier_loss import detach_in_earlier_loss

            with contextlib.suppress(Exception):  # a source it cannot read: no such edit
                fixes = fixes + [f for f in detach_in_earlier_loss(
                    (finding.evidence.get("node") or {}).get("freed_by"), self.where)
                    if f.edits not in {g.edits for g in fixes}]
            from ..explain.recorded_edits import candidates

            with contextlib.suppress(Exception):  # a source it cannot read: no such edit
                fixes = fixes + [f for f in candidates(read, finding.evidence, self.where)
                                 if f.edits not in {g.edits for g in fixes}]
        if finding.inplace and finding.evidence:
            from ..explain.across_step import detached_after_step, rebuilt_before_call

            with contextlib.suppress(Exception):  # a source it cannot read: no such edit
                fixes = fixes + [f for f in detached_after_step(finding.evidence) +
                                 rebuilt_before_call(finding.evidence)
                                 if f.edits not in {g.edits for g in fixes}]
        self.fixes, self.unbound = names_bound(fixes)
        self.own = [f.edits in own for f in self.fixes]
        self.text = "\n" + str(finding) + "\n" + self._unbound_text()
        if not self.verifying or not self.fixes:  # else the edit block comes after their runs
            edit = edit_text(self.fixes, finding.pattern, not_run=self.not_run)
            self.text += edit and "\n" + edit

    def amend(self, evidence: dict | None, why_not: str = "") -> None:
        """The finding said from the replay's ``evidence`` (None: marked as a guess, with
        ``why_not``); said again at once when it was already said at the failure."""
        from ..explain.recorded import amend

        if self.finding is None:
            return
        said = self.text
        # The replay's own finding, made with the earlier calls that the first run does not
        # record (see autograd_lens.run.replay_run), when it made one.
        replayed = getattr(evidence, "finding", None)
        if replayed is not None:
            if self.finding.hidden and not replayed.hidden:  # the compiled regions of the
                replayed.hidden = self.finding.hidden  # failing run, which the replay ran as code
                replayed.hidden_replayed = True
            self.finding = replayed
            if self.guarded:  # the program's guard said it all (with the calls it records
                self._made()  # itself) but what the recording adds
                said += self.text
        self.finding = amend(self.finding, evidence, why_not)
        self._made()
        self.write()
        if self.pending and not _guarded_text(self.pending):
            self.pending = self.text
        else:  # said at the failure: what the recording changed or adds, once
            before = set(said.splitlines())
            new = [line for line in self.text.splitlines() if line and line not in before]
            if new:
                sys.stderr.write("\nautograd_lens: after replaying the run up to the failing "
                                 "call:\n" + "\n".join(new) + "\n")
                sys.stderr.flush()

    def _unbound_text(self) -> str:
        if not self.unbound:
            return ""
        return "".join(f"autograd_lens: an edit was left out: {why}.\n" for why in self.unbound)

    def say_pending(self) -> None:
        """Print the diagnosis kept for after the traceback (if any)."""
        if self.pending:
            sys.stderr.write(self.pending)
            self.pending = ""

    def say_edits(self, runs: list[dict] | None, not_run: str = "") -> None:
        """After the runs: the edit block (``runs`` None: the edits were not run, ``not_run``
        says why)."""
        from ..run.verify import FAILED, HOLDS, verdict

        if not self.verifying or not self.fixes or self.finding is None:
            return
        self.runs = runs
        if runs is not None:
            said = [verdict(run, self.calls_before) for run in runs]
            chosen = next((i for i, v in enumerate(said) if v in HOLDS),
                          next((i for i, v in enumerate(said) if v not in FAILED), None))
            if chosen is not None:
                self.verified, self.verdict = runs[chosen], said[chosen]
            else:
                self.verdict = "failed"
        text = edit_text(self.fixes, self.finding.pattern, runs, self.calls_before, not_run)
        sys.stderr.write("\n" + text)
        sys.stderr.flush()
        self.write()

    def _order(self) -> tuple[list[int], list[int]]:
        """The fixes printed as the fix and alternatives, and the failed attempts (indexes)."""
        from ..run.verify import FAILED, HOLDS, verdict

        if self.runs is None:
            return list(range(len(self.fixes))), []
        said = [verdict(run, self.calls_before) for run in self.runs]
        held = [i for i, v in enumerate(said) if v in HOLDS]
        rest = [i for i, v in enumerate(said) if v not in HOLDS and v not in FAILED]
        return held + rest, [i for i, v in enumerate(said) if v in FAILED]

    def write(self) -> None:
        if self.report is None or os.getpid() != self.pid:  # a child's: see _in_a_child
            return
        data = report_data(self)
        data["children"] = self.from_children()
        with open(self.report, "w", encoding="utf-8") as handle:
            json.dump(data, handle, indent=2)
            handle.write("\n")

    def from_children(self) -> list[dict]:
        """The failures diagnosed in the program's child processes, so far."""
        if self.children is None or not os.path.exists(self.children):
            return []
        found = []
        with open(self.children, encoding="utf-8") as handle:
            for line in handle:
                with contextlib.suppress(ValueError):
                    found.append(json.loads(line))
        return found
