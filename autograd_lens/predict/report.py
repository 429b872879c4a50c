"""What a diagnosis holds: the report of :func:`~autograd_lens.diagnose`, its frontier nodes and
suspects. The catalogue of patterns (title, fix, page, edit rule, proofs) is
:mod:`autograd_lens.fixes.patterns`, re-exported here.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from torch.autograd.graph import Node

from ..lens.graph import SavedSlot
from ..lens.history import LIBRARY_DIRS
from ..source.places import place
from ..fixes.patterns import BOOK_URL, PATTERNS, Pattern  # noqa: F401 - re-exported: the catalogue


_FRAME = re.compile(r'File "(?P<file>[^"]+)", line (?P<line>\d+), in (?P<func>[^\n]+)\n'
                    r'(?:(?!\s*File ")(?P<code>[ \t]+[^\n]*)\n?)?')


@dataclass(frozen=True)
class SourceLine:
    """The line of user code that created a node (read from anomaly mode's stored traceback)."""

    filename: str
    lineno: int
    code: str

    @classmethod
    def of(cls, node: Node) -> SourceLine | None:
        """The last frame outside torch and this library in the node's forward traceback."""
        try:
            stack = node.metadata.get("traceback_")
        except (AttributeError, RuntimeError):
            return None
        if not stack:
            return None
        text = "".join(stack) if isinstance(stack, (list, tuple)) else str(stack)
        found = None
        for match in _FRAME.finditer(text):
            if not match.group("file").startswith(LIBRARY_DIRS):  # torch's, this package's
                found = cls(match.group("file"), int(match.group("line")),
                            (match.group("code") or "").strip())
        return found

    @property
    def where(self) -> str:
        """``"In [4], line 7"`` in a notebook, ``"train.py:7"`` in a file (no directory)."""
        return place(self.filename, self.lineno)

    def __str__(self) -> str:
        return f"{self.where}: {self.code}" if self.code else self.where


@dataclass(frozen=True)
class FrontierNode:
    """A first stale node on a path from the root: where this step's graph meets an old one.

    Attributes:
        node: the node (a backward function).
        node_name: its class name, such as ``"TanhBackward0"``.
        slots: its stale saved-tensor slots.
        source: the line that created it, when the forward ran under anomaly mode, else None.
    """

    node: Node
    node_name: str
    slots: tuple[SavedSlot, ...]
    source: SourceLine | None

    def __str__(self) -> str:
        states = ", ".join(f"{s.name} {s.state}" for s in self.slots)
        text = f"{self.node_name} (saved {states})"
        return text + (f", created at {self.source}" if self.source else "")


@dataclass(frozen=True)
class Suspect:
    """What :func:`diagnose` found about one of the ``suspects`` you named.

    Attributes:
        name: the name you gave (or the attribute path in a module, such as ``"bank"``).
        state: ``"stale"`` (carries a graph an earlier backward freed or that was modified in
            place), ``"history"`` (carries a live graph, or reaches a stale one only through
            another suspect, which is the one to fix), or ``"clean"`` (no graph: detached, a
            leaf, or computed under no_grad).
        reaches_root: True when backward from the root would go through this tensor's graph.
        message: one sentence to act on (empty for a clean suspect).
    """

    name: str
    state: str
    reaches_root: bool
    message: str = ""


@dataclass(frozen=True)
class Report:
    """The answer of :func:`diagnose`. ``str(report)`` explains it in a few lines.

    Attributes:
        ok: True exactly when backward from the root will not reach a freed saved tensor or one
            modified in place since it was saved; never True when part of the graph is hidden.
        stale: every stale slot that backward would reach.
        frontier: the first stale nodes on each path from the root.
        suspects: what was found about each suspect, in the order given.
        pattern: the likely :class:`Pattern` (None when ``ok``, or when nothing stale was seen).
        nodes_checked: how many nodes backward would execute.
        anomaly: True when the frontier nodes carry a forward traceback (anomaly mode).
        hidden: the nodes backward would execute whose saved tensors cannot be seen into, such
            as a compiled region's (``torch.compile``); empty when everything was seen.
    """

    ok: bool
    stale: tuple[SavedSlot, ...]
    frontier: tuple[FrontierNode, ...]
    suspects: tuple[Suspect, ...]
    pattern: Pattern | None
    nodes_checked: int
    anomaly: bool = False
    hidden: tuple[str, ...] = ()

    @property
    def stale_suspects(self) -> list[Suspect]:
        """The suspects that carry a stale graph."""
        return [s for s in self.suspects if s.state == "stale"]

    def _hidden_lines(self) -> list[str]:
        if not self.hidden:
            return []
        return [f"It cannot see inside a compiled region (torch.compile): {', '.join(self.hidden)}. "
                "Backward may fail there on a saved tensor it cannot read; diagnose the step "
                "without torch.compile to see inside."]

    def __str__(self) -> str:
        if not self.stale:
            lead = (f"autograd_lens.diagnose: OK. Backward will reach no freed or modified "
                    f"saved tensor ({self.nodes_checked} nodes checked).")
            if self.hidden:
                lead = (f"autograd_lens.diagnose: NOT SURE. In the {self.nodes_checked} nodes "
                        "checked, backward reaches no freed or modified saved tensor that it "
                        "can see.")
            notes = [f"  Note: {s.message}" for s in self.suspects if s.message]
            return "\n".join([lead] + self._hidden_lines() + notes)
        freed = sum(s.state == "freed" for s in self.stale)
        modified = sum(s.state == "modified" for s in self.stale)
        parts = []
        if freed:
            parts.append(f"{freed} saved tensor{'s' if freed != 1 else ''} freed by an earlier backward")
        if modified:
            parts.append(f"{modified} modified in place since saved")
        lines = ["autograd_lens.diagnose: backward will FAIL. It reaches " + " and ".join(parts) + ".",
                 "This step's graph meets an old one at:"]
        lines += [f"  - {item}" for item in self.frontier[:5]]
        if len(self.frontier) > 5:
            lines.append(f"  - ... and {len(self.frontier) - 5} more")
        if not self.anomaly:
            lines.append("  (Turn on torch.autograd.set_detect_anomaly(True) from the start of the "
                         "run to see the line that created each: these nodes belong to an earlier "
                         "step's graph.)")
        lines += [s.message for s in self.suspects if s.message]
        lines += self._hidden_lines()
        if self.pattern is not None:
            if self.pattern.key == "backward_twice" and modified:
                lines.append("Some saved tensors were also modified in place since they were "
                             "saved (optimizer.step() after a retained backward does that).")
            lines.append(f"Likely pattern: {self.pattern.title}.")
            lines.append(f"Fix: {self.pattern.fix}.")
            lines.append("See: " + ", ".join(self.pattern.links()))
        return "\n".join(lines)

    def __repr__(self) -> str:
        return (f"<Report ok={self.ok} stale={len(self.stale)} frontier="
                f"{[f.node_name for f in self.frontier]}>")
