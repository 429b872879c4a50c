"""What a diagnosis holds, and the catalogue of known patterns, each with its fix and the book's pages.

The fixes are written here and nowhere else: a report names its pattern, and a suspect that
carries a stale graph gets the advice of the pattern it points to.
"""

from __future__ import annotations

import importlib.metadata
import os
import re
import tomllib
from dataclasses import dataclass
from pathlib import Path

import torch
from torch.autograd.graph import Node

from .graph import SavedSlot


def _documentation_url() -> str:
    """The book's address: the ``Documentation`` link of the package's metadata, or, in a
    source tree without metadata, of ``pyproject.toml`` beside the package."""
    try:
        links = importlib.metadata.metadata(__package__).get_all("Project-URL") or []
    except importlib.metadata.PackageNotFoundError:
        links = []
    for link in links:
        label, _, url = link.partition(",")
        if label.strip() == "Documentation":
            return url.strip()
    with open(Path(__file__).resolve().parent.parent / "pyproject.toml", "rb") as file:
        return tomllib.load(file)["project"]["urls"]["Documentation"]


BOOK_URL = _documentation_url()
"""Where the book is published; the report links to its notebooks under ``notebooks/``."""

_NOTEBOOK_CELL = re.compile(r"ipykernel_\d+|<ipython-input")
_FRAME = re.compile(r'File "(?P<file>[^"]+)", line (?P<line>\d+), in (?P<func>[^\n]+)\n'
                    r'(?:(?!\s*File ")(?P<code>[ \t]+[^\n]*)\n?)?')
# Frames from these folders are skipped when looking for the user's line in a traceback.
_LIBRARY_DIRS = (os.path.dirname(torch.__file__) + os.sep,
                 os.path.dirname(os.path.abspath(__file__)) + os.sep)


@dataclass(frozen=True)
class Pattern:
    """A known way to reach the freed-graph error, with its fix and the book's notebooks on it.

    ``suspect_fix`` is the same fix said of one named tensor (``"detach it at the start of
    each batch"``); without it a suspect gets ``fix``.
    """

    key: str
    title: str
    fix: str
    notebooks: tuple[str, ...]
    suspect_fix: str = ""

    def links(self) -> list[str]:
        """Addresses of the published pages about this pattern (notebooks, or chapters/...)."""
        return [f"{BOOK_URL}{n if '/' in n else 'notebooks/' + n}.html" for n in self.notebooks]


PATTERNS: dict[str, Pattern] = {p.key: p for p in (
    Pattern("backward_twice", "backward twice through the same graph",
            "run the forward pass again before the second backward (or pass retain_graph=True to "
            "the first backward or autograd.grad call if two passes through one graph are really "
            "wanted)",
            ("01_backward_twice", "14_grad_then_backward", "11_higher_order_gradients")),
    Pattern("modified_in_place", "a saved tensor modified in place after it was saved",
            "run the forward pass again after optimizer.step() or any in-place update; do not "
            "reuse a loss from before the update, and avoid in-place ops on tensors a node saved",
            ("08_retain_step_backward", "16_module_state_with_history")),
    Pattern("accumulated_loss", "a loss accumulated as a tensor across steps",
            "call backward on each step's loss and keep a running total as a number "
            "(loss.item()); clear lists of log-probabilities or losses after each update",
            ("06_accumulating_loss", "15_rl_buffers"),
            "clear the list after each backward (or append .detach()ed values, or numbers "
            "from .item(), if they only need logging)"),
    Pattern("hidden_state", "hidden state carried from one batch into the next",
            "detach the state at the start of each batch (h = h.detach()), which is truncated "
            "backpropagation through time",
            ("05_rnn_hidden_state",),
            "detach it at the start of each batch"),
    Pattern("module_state", "a module attribute or buffer updated with history",
            "update it under torch.no_grad() or store a .detach()ed value",
            ("16_module_state_with_history",)),
    Pattern("outside_loop", "a tensor computed outside the loop and reused every step",
            "compute it inside the loop, or under torch.no_grad() (or .detach() it) if it needs "
            "no gradient",
            ("13_tensor_outside_loop", "04_two_networks"),
            "compute it inside the loop, or detach it (or compute it under torch.no_grad()) "
            "if it needs no gradient"),
    Pattern("shared_trunk", "a shared part of the graph that an earlier backward already went "
            "through (two losses over one forward, a GAN's fake batch, a tensor computed outside "
            "the loop)",
            "sum the losses and call backward once; detach what one step hands to another "
            "(D(fake.detach()) in a GAN's discriminator step); recompute what was computed "
            "outside the loop",
            ("02_two_losses_one_forward", "12_gan_discriminator", "13_tensor_outside_loop")),
    Pattern("growing_buffer", "a list of tensors kept across updates (log-probabilities, losses)",
            "clear the list after each update (del buffer[:]), or store .detach()ed values or "
            "numbers (.item()) if they are only logged",
            ("15_rl_buffers", "06_accumulating_loss")),
    Pattern("gan_discriminator", "a generated batch used again after the discriminator's "
            "backward went through the generator",
            "in the discriminator step use D(fake.detach()); then the generator step's "
            "D(fake) is the only backward through the generator",
            ("12_gan_discriminator",)),
    Pattern("grad_then_backward", "autograd.grad, then backward, through the same graph",
            "pass retain_graph=True to autograd.grad (create_graph=True if the gradient is part "
            "of the loss), or compute the loss again before backward",
            ("14_grad_then_backward", "01_backward_twice")),
    Pattern("higher_order", "a gradient taken without create_graph=True, then a loss "
            "through the same graph",
            "pass create_graph=True to autograd.grad when the loss uses the gradient or the "
            "same graph again",
            ("11_higher_order_gradients", "14_grad_then_backward")),
    Pattern("meta_learning", "an inner gradient step on the weights without create_graph=True, "
            "then an outer loss through the inner graph",
            "pass create_graph=True to the inner autograd.grad (second-order), or keep the outer "
            "loss off the inner graph (first-order: detach the inner gradients)",
            ("20_meta_learning",)),
    Pattern("checkpoint", "backward a second time through a checkpointed region",
            "run the forward again before the second backward, or pass retain_graph=True to the "
            "first one",
            ("18_checkpoint",)),
    Pattern("custom_function", "backward a second time through a custom autograd.Function",
            "run the forward again before the second backward, or pass retain_graph=True to the "
            "first one; do not read ctx.saved_tensors after backward",
            ("17_custom_function",)),
    Pattern("two_networks", "one network's output fed to a second network after the first "
            "network's backward went through it",
            "detach the output before the second network if its loss should not train the first "
            "(net2(h.detach())), or sum the two losses and call backward once",
            ("04_two_networks", "02_two_losses_one_forward")),
    Pattern("unknown", "none that the evidence shows", "find the tensor that crosses from one "
            "step into the next and detach it, or compute it inside the step", ("chapters/debugging",)),
)}
"""The patterns :func:`~autograd_lens.diagnose` can name, by key."""


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
            if not match.group("file").startswith(_LIBRARY_DIRS):
                found = cls(match.group("file"), int(match.group("line")),
                            (match.group("code") or "").strip())
        return found

    @property
    def where(self) -> str:
        """``"cell line 7"`` in a notebook, ``"train.py:7"`` in a file (no directory)."""
        if _NOTEBOOK_CELL.search(self.filename):
            return f"cell line {self.lineno}"
        return f"{os.path.basename(self.filename)}:{self.lineno}"

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
            lines.append("  (Run the forward under torch.autograd.set_detect_anomaly(True) to see "
                         "the line that created each.)")
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
