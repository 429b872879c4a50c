"""The diagnosis in short, said last when the error ended the program (after Python's traceback
and the edits): the carrier and its line (or the write, for the in-place error), the fix (the
one that was run and held, when it is not the pattern's own), where the edit is, and the page.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..source.places import place

if TYPE_CHECKING:
    from .telling import Teller


def in_short(teller: Teller) -> str:
    """What :meth:`Teller.summary <autograd_lens.text.telling.Teller.summary>` says: the
    diagnosis in three lines (carrier and its line, fix, page)."""
    finding = teller.finding
    if finding is None:
        return ""
    failed = f"the failing backward at {place(*teller.where)}" if teller.where else \
        "a backward"
    write = finding.write if finding.inplace else None
    if write is not None and write.line:  # the in-place error: the write is the cause
        at = place(write.file, write.line)
        made = f" (made at {place(*write.made_at)})" if write.made_at else ""
        said = (f"the optimizer step at {at} changed in place a weight that a node saved"
                if write.how == "step" else
                f"`{write.by}`{made}, run at {at}, wrote in place (in its forward) a tensor "
                "that a node saved" if write.module and write.by else
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
    order, failed_runs = teller._order()
    if teller.verdict == "gone" and order and (failed_runs and order[0] > 0 or
                                             not teller.own[order[0]]):
        # the edit that held is not the first the pattern's words lead to, which failed,
        # or not one of them at all (made from the recording)
        lines.append(f"Fix, as run and verified: {teller.fixes[order[0]].computes}.")
    elif finding.pattern is not None and finding.pattern.key != "unknown":
        lines.append(f"Fix: {finding.fix}.")
    if teller.fixes:
        lines.append("Edit: " + ("the fix as an edit above" if teller.verdict in ("gone",)
                                 else "see the edits above"
                                 + (" (not run)" if teller.runs is None else "")) + ".")
    if finding.page:
        lines.append(f"See: {finding.page}")
    return "\n" + "\n".join(lines) + "\n"
