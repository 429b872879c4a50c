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
(the fix that held, alternatives, failed attempts) after them.
"""

from __future__ import annotations

import contextlib
import json
import os
import sys
import time
from typing import TYPE_CHECKING, Any, Callable

from ..source.edits import unified_diff
from ..lens.errors import FREED_GRAPH_PATTERN, INPLACE_PATTERN, error_kind
from ..source.places import is_cell, place, shown_file
from ..run.unseen import may_be_caught

if TYPE_CHECKING:  # the command imports torch only when the program does
    from ..fixes.rules import Fix
    from ..explain.finding import Finding

EMPTY_REPORT = {"error": None, "carriers": [], "frontier": [], "pattern": "", "title": "",
                "fix": "", "page": "", "hidden": [], "recorded": None, "repeated": [],
                "children": []}


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


# A child started by spawn or forkserver (see autograd_lens.text.spawned): its pid and that method.
START_METHOD: list = []


def child_identity() -> dict:
    """This process, as a child of the program's: its pid, its parent's, how it was started."""
    import multiprocessing

    process = multiprocessing.current_process()
    if START_METHOD and START_METHOD[0] == os.getpid():
        method = START_METHOD[1]  # what started it, not the default its parent had
    else:
        method = multiprocessing.get_start_method(allow_none=True) or "fork"
    how = "os.fork" if process.name == "MainProcess" else \
        f"multiprocessing, {method}: {process.name}"
    return {"pid": os.getpid(), "parent": os.getppid(), "how": how}


def child_note(children: list[dict]) -> str:
    """Said after an error that a child process raised and the program re-raised: where its
    diagnosis is (said in the child, if the child was forked), or that none was made."""
    if not children:
        return CHILD_NOTE
    pids = ", ".join(str(c["pid"]) for c in children)
    return (f"\nautograd_lens: this error happened in child process {pids}; its diagnosis was "
            "said there (above) and is in the report's \"children\"; no replay or edit run is "
            "made for a child's failure.\n")


CHILD_NOTE = ("\nautograd_lens: this error happened in a child process, which the command does not "
              "watch; to see the diagnosis, run that part in the command's own process.\n")


def from_a_child(error: BaseException) -> bool:
    """Whether ``error`` reports a freed-graph (or in-place) error raised elsewhere: its text
    holds one, but it is not one itself (torch.multiprocessing.spawn's ProcessRaisedException,
    a process pool's error)."""
    text = str(error)
    return error_kind(error) is None and bool(
        FREED_GRAPH_PATTERN.search(text) or INPLACE_PATTERN.search(text))


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
        record = dict(self._data(), **who)
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
        finding = self.finding
        if finding is None:
            return ""
        failed = f"the failing backward at {place(*self.where)}" if self.where else \
            "a backward"
        write = finding.write if finding.inplace else None
        if write is not None and write.line:  # the in-place error: the write is the cause
            at = place(write.file, write.line)
            said = (f"the optimizer step at {at} changed in place a weight that a node saved"
                    if write.how == "step" else
                    f"`{write.by}`, run at {at}, wrote in place (in its forward) a tensor that a "
                    "node saved" if write.module and write.by else
                    f"{write.name or 'a saved tensor'} was changed in place at {at} after a "
                    "node saved it") + f"; {failed} needed its old value"
        elif finding.carriers:
            carrier = finding.carriers[0]
            got = "" if carrier.got is None else \
                f"made at {place(carrier.got['file'], carrier.got['line'])} and "
            alias = f" as `{carrier.name}`" if carrier.shown else ""
            said = (f"{carrier.shown or carrier.name}, {got}held at "
                    f"{place(carrier.file, carrier.line)}, holds a node of the graph that "
                    f"{failed} could not go through" if carrier.held else
                    f"{carrier.shown or carrier.name}, {got}entering at "
                    f"{place(carrier.file, carrier.line)}{alias}, "
                    f"carries in the graph that {failed} could not go through")
        else:
            said = f"{failed} failed; no variable of the program was named as the carrier"
        lines = [f"autograd_lens, in short: {said}."]
        order, failed_runs = self._order()
        if self.verdict == "gone" and order and (failed_runs and order[0] > 0 or
                                                 not self.own[order[0]]):
            # the edit that held is not the first the pattern's words lead to, which failed,
            # or not one of them at all (made from the recording)
            lines.append(f"Fix, as run and verified: {self.fixes[order[0]].computes}.")
        elif finding.pattern is not None and finding.pattern.key != "unknown":
            lines.append(f"Fix: {finding.fix}.")
        if self.fixes:
            lines.append("Edit: " + ("the fix as an edit above" if self.verdict in ("gone",)
                                     else "see the edits above"
                                     + (" (not run)" if self.runs is None else "")) + ".")
        if finding.page:
            lines.append(f"See: {finding.page}")
        return "\n" + "\n".join(lines) + "\n"

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
        data = self._data()
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

    def _data(self) -> dict:
        data = dict(EMPTY_REPORT) if self.finding is None else self.finding.as_dict()
        shown, failed = self._order()
        first, others = (shown[0], shown[1:]) if shown else (None, [])
        runs = self.runs or [None] * len(self.fixes)
        fix = self.fixes[first] if first is not None else None
        data.update({"edits": [e.as_dict() for e in fix.edits] if fix else [],
                     "computes": fix.computes if fix else "",
                     "alternatives": [[e.as_dict() for e in self.fixes[i].edits]
                                      for i in others],
                     "alternatives_computes": [self.fixes[i].computes for i in others],
                     "alternatives_verified": [_public(runs[i], self.calls_before) for i in others],
                     "failed_attempts": [{"edits": [e.as_dict() for e in self.fixes[i].edits],
                                          "computes": self.fixes[i].computes,
                                          "verified": _public(runs[i], self.calls_before)}
                                         for i in failed],
                     "left_out": list(self.unbound),
                     "verified": _public(self.verified, self.calls_before),
                     "verdict": self.verdict,
                     "repeated": [{"file": file, "line": line, "again": times}
                                  for (file, line), times in self.repeats.items()]})
        return data


def _public(run: dict | None, calls_before: int) -> dict | None:
    """A run's result as the report gives it, with its verdict."""
    if run is None:
        return None
    from ..run.verify import verdict

    shown = {key: value for key, value in run.items() if key not in ("same_error", "stopped")}
    shown["verdict"] = verdict(run, calls_before)
    return shown
