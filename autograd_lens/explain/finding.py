"""The diagnosis of one failed backward, and how it is said.

A :class:`Finding` holds what :func:`~autograd_lens.explain.situation.explain` found: the error,
the carriers of the old graph, where the graphs meet, the likely pattern, the write that changed
a saved tensor (the in-place error), the page of the situation the evidence shows, and what the
replay recorded. It says the pattern's fix and page as that evidence chooses them, gives its
JSON form (``--report``), and prints the lines that follow the traceback; :func:`written_lines`
says the in-place error as what it is.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ..fixes.patterns import link
from ..predict.report import Pattern
from ..source.places import place
from .carrier import Carrier
from .recorded import GUESS
from .recorded_lines import recorded_lines
from .recorded_write import write_entry
from .writes import Write


# The page on a weight written in place while a graph still needs its old value.
_WEIGHT_PAGE = "08_retain_step_backward"


@dataclass
class Finding:
    """The diagnosis of one failed backward (see ``chapters/api.md`` for its JSON form)."""

    error: str
    carriers: list[Carrier]
    frontier: list[str]
    pattern: Pattern | None
    hidden: tuple[str, ...] = ()
    # The hidden regions are the failing run's, which the replay ran as plain PyTorch code: its
    # graph, which the statements come from, has none there (set by Teller.amend).
    hidden_replayed: bool = False
    notes: list[str] = field(default_factory=list)
    write: Write | None = None
    inplace: bool = False
    across_step: bool = False  # an optimizer's step() runs between the earlier call and this one
    situation: str = ""  # the page of the situation the evidence shows, when not the pattern's
    # What the replay recorded (see autograd_lens.explain.recorded): True once its evidence made the
    # statements; False when it was tried and gave none (``why_not`` says why); None: no replay.
    recorded: bool | None = None
    why_not: str = ""
    evidence: dict | None = None

    @property
    def fix(self) -> str:
        """The pattern's fix, said without keeping the graph when a step runs in between."""
        if self.pattern is None:
            return ""
        if self.on_weight and self.pattern.on_weight:
            return self.pattern.on_weight
        return self.pattern.across_step if self.across_step and self.pattern.across_step \
            else self.pattern.fix

    @property
    def on_weight(self) -> bool:
        """Whether the program itself wrote in place a weight a node saved."""
        return self.inplace and self.write is not None and self.write.weight and \
            self.write.how == "op"

    @property
    def page(self) -> str:
        """The page of the situation the evidence shows (see :mod:`autograd_lens.explain.pages`); else
        the pattern's page on state kept on an object when the tensor written in place is an
        attribute (a module's buffer), else its first."""
        if not self.pattern:
            return ""
        if self.situation:
            return link(self.situation)
        if self.on_weight and self.pattern.on_weight:
            return link(_WEIGHT_PAGE)
        links = self.pattern.links()
        kept = self.inplace and self.carriers and self.carriers[0].kind == "written" and \
            self.carriers[0].origin == "attribute"
        return next((link for link in links if "16_module_state" in link), links[0]) if kept \
            else links[0]

    def as_dict(self) -> dict[str, Any]:
        carriers = [c.as_dict() for c in self.carriers]
        write = self.write if self.recorded else None
        if write is not None and write.line and not (carriers and (
                carriers[0]["file"], carriers[0]["line"]) == (write.file, write.line)):
            carriers.insert(0, write_entry(write))  # the recorded write first
        return {"error": self.error, "carriers": carriers,
                "frontier": self.frontier, "pattern": self.pattern.key if self.pattern else "",
                "title": self.pattern.title if self.pattern else "",
                "fix": self.fix, "page": self.page,
                "hidden": list(self.hidden), "recorded": self.evidence}

    def carrier_lines(self) -> list[str]:
        """"Carried in by", then one line per carrier (none when no carrier was found)."""
        if not self.carriers:
            return []
        lines = ["Carried in by (most likely first):"]
        for carrier in self.carriers[:5]:
            guess = GUESS if not self.recorded and "assigned only before" in carrier.why else ""
            name, got = carrier.given()
            lines.append(f"  {name}  {place(got['file'], got['line'])} in "
                         f"{got['function']}: {carrier.said()}{guess}.")
        return lines

    def __str__(self) -> str:
        lines = written_lines(self.write, self.recorded is True) if self.inplace else [
            "autograd_lens: this backward reaches a graph that an earlier call already went "
            "through."]
        lines += recorded_lines(self)
        if self.recorded is False:
            lines.append(f"Not recorded: {self.why_not or 'the replay did not fail the same way'}"
                         "; what follows is read from the failure and the source, and what it "
                         "says about a write, a step or a loop is a guess.")
        if self.hidden and self.hidden_replayed:
            lines.append("It runs through a compiled region (" + ", ".join(self.hidden) + "), "
                         "which the replay, under its recording, ran as plain PyTorch code: the "
                         "nodes named here are that code's.")
        elif self.hidden:
            lines.append("It runs through a compiled region (" + ", ".join(self.hidden) + "): "
                         "autograd_lens cannot see inside a compiled region, so what follows "
                         "is a best guess.")
        named = self.inplace and self.write is not None and bool(self.write.name)
        none = [] if named else [  # the line above named the tensor written: no "no variable"
            "No variable of your program holds the old graph by name (it may sit inside a "
            "function's result or a closure)." if not self.inplace else
            "No variable of your program holds that graph by name."]
        lines += self.carrier_lines() or none
        if self.frontier:
            lines.append("Where the graphs meet: " + ", ".join(self.frontier[:5])
                         + (" ..." if len(self.frontier) > 5 else ""))
        lines += self.notes
        return "\n".join(lines + self.pattern_lines())

    def pattern_lines(self, every_page: bool = False) -> list[str]:
        """The likely pattern, its fix and its page (``every_page``: all its pages), or: no
        pattern, and the debugging page."""
        if self.pattern is None:
            return []
        pages = [self.page] + [p for p in self.pattern.links() if p != self.page]
        see = "See: " + (", ".join(pages) if every_page else self.page)
        if self.pattern.key == "unknown" and self.situation:
            return ["Likely pattern: none that the evidence shows for certain" +
                    ("" if self.carriers else " (no carrier named)") + "; the page on the "
                    "situation the graph shows, then the debugging page, say how to look.",
                    "See: " + ", ".join(pages)]
        if self.pattern.key == "unknown":
            return ["Likely pattern: none that the evidence shows (no carrier, no telling "
                    "graph); the debugging page says how to look.", see]
        guess = GUESS if self.pattern.key == "modified_in_place" and not self.recorded else ""
        return [f"Likely pattern: {self.pattern.title}{guess}.", f"Fix: {self.fix}.", see]


def _article(noun: str) -> str:
    """"an" before a vowel (an Embedding), else "a" (a Dropout)."""
    return "an" if noun[:1].lower() in "aeiou" else "a"


def made_at(write: Write) -> str:
    """Where the library module that wrote was made, as recorded (`` made at net.py:18:
    `nn.Dropout(0.25, inplace=True)` ``), else ""."""
    if not write.made_at:
        return ""
    text = f": `{write.made_text}`" if write.made_text else ""
    return f" made at {place(*write.made_at)}{text}"


def written_lines(write: Write | None, recorded: bool = False) -> list[str]:
    """The in-place error said as what it is: the node, the tensor it saved, and the write
    (``recorded``: the write as the replay recorded it; else a guess from the source)."""
    lead = ("autograd_lens: this backward meets a saved tensor that was changed in place after "
            "a node saved it (its version counter moved).")
    if write is None:
        return [lead]
    saved, now = write.versions
    what = f"a weight, `{write.name}`" if write.weight and write.how == "op" and write.name \
        else f"a weight of `{write.name}`" if write.weight and write.name else \
        "a weight" if write.weight else f"`{write.name}`" if write.name else "a tensor"
    if write.shares and write.name and not write.weight:  # which view was saved is not known
        what += " or a view of the same storage (" + ", ".join(f"`{n}`" for n in write.shares) + ")"
    saver = f"{write.node} saved {what} (slot {write.slot})" if write.node else \
        f"A node saved {what}"
    lines = [lead, f"{saver} at version {saved}; it is at version {now} now."]
    if write.line:
        verb = "steps the optimizer that holds it" if write.how == "step" else \
            f"runs `{write.by}` ({_article(write.maker)} {write.maker}{made_at(write)}), whose forward wrote it in " \
            "place" \
            if write.module and write.by and write.maker else \
            "makes a module (or calls a function) with inplace=True, whose call wrote it in " \
            "place" if write.module else "writes it in place"
        label = "Changed by" if recorded else f"Changed by{GUESS}"
        lines.append(f"{label}: {write.text}  ({place(write.file, write.line)} in "
                     f"{write.function}), which {verb}.")
    return lines
