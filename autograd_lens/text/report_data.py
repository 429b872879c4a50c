"""The ``--report`` file's data: the finding's fields (or an empty report while no backward has
failed), the edit shown as the fix and the alternatives with what each computes, the failed
attempts, the edits left out, each run's result with its verdict, and the errors that came again.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .telling import Teller

EMPTY_REPORT = {"error": None, "carriers": [], "frontier": [], "pattern": "", "title": "",
                "fix": "", "page": "", "hidden": [], "recorded": None, "repeated": [],
                "children": []}


def report_data(teller: Teller) -> dict:
    """The report's data as ``teller`` stands (the children's failures are added by its
    :meth:`~autograd_lens.text.telling.Teller.write`)."""
    data = dict(EMPTY_REPORT) if teller.finding is None else teller.finding.as_dict()
    shown, failed = teller._order()
    first, others = (shown[0], shown[1:]) if shown else (None, [])
    runs = teller.runs or [None] * len(teller.fixes)
    fix = teller.fixes[first] if first is not None else None
    data.update({"edits": [e.as_dict() for e in fix.edits] if fix else [],
                 "computes": fix.computes if fix else "",
                 "alternatives": [[e.as_dict() for e in teller.fixes[i].edits]
                                  for i in others],
                 "alternatives_computes": [teller.fixes[i].computes for i in others],
                 "alternatives_verified": [_public(runs[i], teller.calls_before) for i in others],
                 "failed_attempts": [{"edits": [e.as_dict() for e in teller.fixes[i].edits],
                                      "computes": teller.fixes[i].computes,
                                      "verified": _public(runs[i], teller.calls_before)}
                                     for i in failed],
                 "left_out": list(teller.unbound),
                 "verified": _public(teller.verified, teller.calls_before),
                 "verdict": teller.verdict,
                 "repeated": [{"file": file, "line": line, "again": times}
                              for (file, line), times in teller.repeats.items()]})
    return data


def _public(run: dict | None, calls_before: int) -> dict | None:
    """A run's result as the report gives it, with its verdict."""
    if run is None:
        return None
    from ..run.verify import verdict

    shown = {key: value for key, value in run.items() if key not in ("same_error", "stopped")}
    shown["verdict"] = verdict(run, calls_before)
    return shown
