"""A carrier: a variable that brings an old graph into the failing backward, where it enters,
why, and how the report names it (at the line where the recording shows it got the graph, or
the statement that put it into its list)."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Carrier:
    """A variable that brings an old graph into this backward.

    Attributes:
        name: as written in the source: ``h``, ``self.h``, ``outputs["loss"]``, ``buffer[3]``.
        file: the file where it enters this step's computation.
        line: the line there (the line to change).
        function: the function holding that line (``<module>`` for a script's top level).
        why: one sentence, true to how it entered.
        kind: ``"old"`` (the tensor itself belongs to an old graph) or ``"carried"`` (made
            before this step, or in it, its graph reaches an old one).
        origin: ``"variable"``, ``"attribute"`` (of a module or object) or ``"list"`` (an entry
            of a list or dict).
        update: how the source assigns it in the step: ``"accumulate"`` (``total = total + x``,
            ``+=``), ``"assign"``, or ``""`` (not assigned there).
        outside_loop: True when it is read in a loop but assigned only before the loop.
        entry: how the source brings it into the step: ``"read_first"``, ``"kept"``,
            ``"assigned_first"`` or ``"unread"`` (see :mod:`autograd_lens.source.entry`).
        form: what the name holds at the failure: ``"tensor"``, ``"tuple"`` (an LSTM's
            ``(h, c)``), ``"nested tuple"`` (tuples in a tuple), ``"list"``, ``"dict"`` or
            ``"object"``.
        write: for the in-place error, what changed the saved tensor
            (:class:`~autograd_lens.explain.writes.Write`); ``kind`` is ``"written"`` for the tensor
            that the program wrote in place itself, named at that write.
        got: for the freed-graph error, where the replay recorded that the carrier got the
            graph that was freed (a dict: file, line, function, text): the statement, in the
            scope that holds the name, that was running when its tensor's node was made; None
            without a recording. The report gives this line; ``line`` stays the one to change.
        held: named from the recording alone (a name that holds a freed node itself, which
            the source's reading did not name): said, but no edit is derived from it.
        shown: the name as written at ``got`` when it is not ``name`` (the method of the
            attribute's object: ``self.cache_k``; the caller's name of an argument; the list
            when every entry of it was made there and holds a freed graph), else "".
            The report and the text use it; the edits keep ``name``.
        put: for an entry of a list shown as the list (``shown``), the one statement of the
            source that puts entries into that list (a dict: file, line, function, text; with
            a recorded ``got``, the same statement), or None. The report gives this line.
        kept: with a recorded ``got`` that assigned the tensor to another name, the one
            statement that then assigns it to this name (``self.h = h``; a dict: file, line,
            function, text), else None (:func:`autograd_lens.explain.carrier_origin.kept`). The report
            gives this line.
    """

    name: str
    file: str
    line: int
    function: str
    why: str
    kind: str
    origin: str = "variable"
    update: str = ""
    outside_loop: bool = False
    form: str = "tensor"
    entry: str = ""
    write: Any = None
    got: Any = None
    shown: str = ""
    held: bool = False
    put: Any = None
    kept: Any = None

    def _named_at(self, at: dict) -> str:
        """The name as the line the report gives writes it: the list as the statement that
        puts entries into it names it (``self.log_probs`` in a buffer's method, for
        ``agent.memory.log_probs``), else :attr:`shown` or :attr:`name`."""
        put = self.put or self.kept
        if put and put.get("name") and (at["file"], at["line"]) == (put["file"], put["line"]):
            return put["name"]
        return self.shown or self.name

    def given(self) -> tuple[str, dict]:
        """The name and the line (a site dict) the report gives: where the recording shows it got
        the graph, or the statement that put it into its list, else where it enters."""
        site = self.kept or self.got or self.put or {"file": self.file, "line": self.line,
                                                     "function": self.function}
        return self._named_at(site), site

    def as_dict(self) -> dict[str, Any]:
        if self.got is None and self.put is not None:
            return {"name": self._named_at(self.put), "file": self.put["file"],
                    "line": self.put["line"], "function": self.put["function"],
                    "why": self.said(),
                    "enters": {"name": self.name, "file": self.file, "line": self.line,
                               "function": self.function}}
        if self.got is None:
            return {"name": self.shown or self.name, "file": self.file, "line": self.line,
                    "function": self.function, "why": self.said(),
                    **(self.write.made_entry() if self.kind == "written" and self.write else {})}
        at = self.kept or self.got
        return {"name": self._named_at(at), "file": at["file"], "line": at["line"],
                "function": at["function"], "why": self.said(),
                "enters": {"name": self.name, "file": self.file, "line": self.line,
                           "function": self.function}}

    def said(self) -> str:
        """``why``, said from the line the report gives: with a recorded ``got``, the statement
        that made its tensor's node, then its reason with "here" said as the line it enters at."""
        from ..source.places import place

        if self.shown and self.name.startswith(self.shown + "[") and \
                (self.got is None or self.put is not None):  # a list's entry, shown as the list
            entry = f"its entry `{self.name}`"
            if self.got is not None:  # made by the statement that put it in, as recorded
                return (f"the node of {entry} was made by this statement (`{self.got['text']}`, "
                        "recorded in a replay), and it " +
                        re.sub(r"\bhere\b", "at " + place(self.file, self.line), self.why))
            if self.put is None:
                return f"{entry} {self.why}"
            return (f"its entries are put in here (`{self.put['text']}`), and {entry} " +
                    re.sub(r"\bhere\b", "at " + place(self.file, self.line), self.why))
        if self.got is None:
            return self.why

        at = "at " + place(self.file, self.line) + (f" (as `{self.name}`)" if self.shown else "")
        whole = self.name.startswith(self.shown + "[") if self.shown else False
        made = "the nodes of its entries were" if whole else "its tensor's node was"
        if self.kept is not None:
            return (f"this statement keeps its tensor, whose node was made by `{self.got['text']}` "
                    f"at {place(self.got['file'], self.got['line'])} (recorded in a replay), and "
                    f"it " + re.sub(r"\bhere\b", at, self.why))
        return (f"{made} made by this statement (`{self.got['text']}`, recorded in a replay), "
                f"and it " + re.sub(r"\bhere\b", at, self.why))
