"""Predicting, before backward runs, whether it will hit a stale saved tensor, and explaining why.

A saved tensor is **stale** when backward can no longer use it: an earlier backward freed it, or
it was modified in place after it was saved (its version counter moved). Backward from a root
fails exactly when it executes a node holding a stale saved tensor. :func:`diagnose` finds the
nodes that backward would execute, reads the state of their saved tensors without unpacking any
that a hook packed (so a checkpoint is not recomputed), and reports:

* ``ok``: whether backward will get through;
* the **frontier**: the first stale nodes on each path from the root, where this step's graph
  meets an old one, with the line of your code that created each (when the forward ran under
  ``torch.autograd.set_detect_anomaly``);
* which of your ``suspects`` (hidden state, cached features, module attributes) carry an old graph;
* the likely pattern, its fix, and the book's notebook about it.

:func:`diagnose_on_error` adds the same diagnosis to the error message at the moment backward
fails, and ``%load_ext autograd_lens`` does it for every cell of a notebook.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import torch

from ._inputs import graph_roots
from .graph import (SavedSlot, children, children_cached, is_custom_function, node_name,
                    reachable, stale_slots, without_gc)

BOOK_URL = "https://through-the-graph.github.io/through-the-graph-a-second-time/"
"""Where the book is published; the report links to its notebooks under ``notebooks/``."""

_UNPACK_NAMES = frozenset({"saved_tensors", "saved_variables"})
_ACCUMULATING = frozenset({"AddBackward0", "AddBackward1", "StackBackward0", "CatBackward0",
                           "SumBackward1", "UnbindBackward0"})
_RECURRENT_NAMES = re.compile(r"^(h|c|hx|cx|h\d|c\d|hidden.*|state.*|.*_state|.*hidden|memory|mem)$",
                              re.IGNORECASE)
_NOTEBOOK_CELL = re.compile(r"ipykernel_\d+|<ipython-input")
_FRAME = re.compile(r'File "(?P<file>[^"]+)", line (?P<line>\d+), in (?P<func>[^\n]+)\n'
                    r'(?:(?!\s*File ")(?P<code>[ \t]+[^\n]*)\n?)?')
# Frames from these folders are skipped when looking for the user's line in a traceback.
_LIBRARY_DIRS = (os.path.dirname(torch.__file__) + os.sep,
                 os.path.dirname(os.path.abspath(__file__)) + os.sep)


# ---------------------------------------------------------------------------------------------
# What the report holds


@dataclass(frozen=True)
class Pattern:
    """A known way to reach the freed-graph error, with its fix and the book's notebooks on it."""

    key: str
    title: str
    fix: str
    notebooks: tuple[str, ...]

    def links(self) -> list[str]:
        """Addresses of the published notebooks about this pattern."""
        return [f"{BOOK_URL}notebooks/{name}.html" for name in self.notebooks]


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
            ("06_accumulating_loss", "15_rl_buffers")),
    Pattern("hidden_state", "hidden state carried from one batch into the next",
            "detach the state at the start of each batch (h = h.detach()), which is truncated "
            "backpropagation through time",
            ("05_rnn_hidden_state",)),
    Pattern("module_state", "a module attribute or buffer updated with history",
            "update it under torch.no_grad() or store a .detach()ed value",
            ("16_module_state_with_history",)),
    Pattern("outside_loop", "a tensor computed outside the loop and reused every step",
            "compute it inside the loop, or under torch.no_grad() (or .detach() it) if it needs "
            "no gradient",
            ("13_tensor_outside_loop", "04_two_networks")),
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
)}
"""The patterns :func:`~autograd_lens.diagnose` can name, by key."""

_GUIDE = f"{BOOK_URL}notebooks/21_debugging_your_loop.html"


@dataclass(frozen=True)
class SourceLine:
    """The line of user code that created a node (read from anomaly mode's stored traceback)."""

    filename: str
    lineno: int
    code: str

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

    node: Any
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
            modified in place since it was saved.
        stale: every stale slot that backward would reach.
        frontier: the first stale nodes on each path from the root.
        suspects: what was found about each suspect, in the order given.
        pattern: the likely :class:`Pattern` (None when ``ok``).
        nodes_checked: how many nodes backward would execute.
        anomaly: True when the frontier nodes carry a forward traceback (anomaly mode).
    """

    ok: bool
    stale: tuple[SavedSlot, ...]
    frontier: tuple[FrontierNode, ...]
    suspects: tuple[Suspect, ...]
    pattern: Pattern | None
    nodes_checked: int
    anomaly: bool = False
    _notes: tuple[str, ...] = field(default=(), repr=False)

    @property
    def stale_suspects(self) -> list[Suspect]:
        """The suspects that carry a stale graph."""
        return [s for s in self.suspects if s.state == "stale"]

    def __str__(self) -> str:
        lines = []
        if self.ok:
            lines.append(f"autograd_lens.diagnose: OK. Backward will reach no freed or modified "
                         f"saved tensor ({self.nodes_checked} nodes checked).")
            lines += [f"  Note: {s.message}" for s in self.suspects if s.message]
            return "\n".join(lines)
        freed = sum(s.state == "freed" for s in self.stale)
        modified = sum(s.state == "modified" for s in self.stale)
        parts = []
        if freed:
            parts.append(f"{freed} saved tensor{'s' if freed != 1 else ''} freed by an earlier backward")
        if modified:
            parts.append(f"{modified} modified in place since saved")
        lines.append("autograd_lens.diagnose: backward will FAIL. It reaches "
                     + " and ".join(parts) + ".")
        lines.append("This step's graph meets an old one at:")
        for item in self.frontier[:5]:
            lines.append(f"  - {item}")
        if len(self.frontier) > 5:
            lines.append(f"  - ... and {len(self.frontier) - 5} more")
        if not self.anomaly:
            lines.append("  (Run the forward under torch.autograd.set_detect_anomaly(True) to see "
                         "the line that created each.)")
        for suspect in self.suspects:
            if suspect.message:
                lines.append(suspect.message)
        lines += list(self._notes)
        if self.pattern is not None:
            lines.append(f"Likely pattern: {self.pattern.title}.")
            lines.append(f"Fix: {self.pattern.fix}.")
            lines.append("See: " + ", ".join(self.pattern.links()))
        return "\n".join(lines)

    def __repr__(self) -> str:
        return (f"<Report ok={self.ok} stale={len(self.stale)} frontier="
                f"{[f.node_name for f in self.frontier]}>")


# ---------------------------------------------------------------------------------------------
# Reading the graph


def _unpacks_saved(node: Any) -> bool:
    """Whether a custom Function's backward reads ``ctx.saved_tensors`` (freed ones then fail)."""
    cls = getattr(node, "_forward_cls", None)
    backward = getattr(cls, "backward", None)
    code = getattr(backward, "__code__", None)
    if code is None:
        return True
    return bool(_UNPACK_NAMES & set(code.co_names))


def _stale_slots(node: Any) -> tuple[SavedSlot, ...]:
    stale = tuple(stale_slots(node)[1])
    if stale and is_custom_function(node):
        if not _unpacks_saved(node):
            return ()  # its backward never reads ctx.saved_tensors: a second run works
    return stale


def _parents(order: list[Any], kids: dict[Any, list[Any]]) -> dict[Any, list[Any]]:
    parents: dict[Any, list[Any]] = {node: [] for node in order}
    for node in order:
        for child in kids[node]:
            parents[child].append(node)
    return parents


def _check_inputs(inputs: Any) -> list[torch.Tensor]:
    items = [inputs] if isinstance(inputs, torch.Tensor) else inputs
    if not isinstance(items, Sequence) or isinstance(items, (str, bytes)):
        raise TypeError(f"inputs must be a tensor or a list of tensors, as in "
                        f"backward(inputs=...), got a {type(inputs).__name__}.")
    items = list(items)
    if not items:
        raise ValueError("inputs is empty. Pass the tensors you want gradients for, as in "
                         "backward(inputs=[w]), or leave inputs out.")
    for i, item in enumerate(items):
        if not isinstance(item, torch.Tensor):
            raise TypeError(f"inputs[{i}] is a {type(item).__name__}, not a tensor. Pass the "
                            "tensors you want gradients for.")
        if not item.requires_grad:
            raise ValueError(f"inputs[{i}] does not require grad, so backward cannot compute a "
                             "gradient for it. Pass tensors that require grad.")
    return items


def _executed(order: list[Any], kids: dict[Any, list[Any]], inputs: list[torch.Tensor] | None,
              grad: bool) -> list[Any]:
    """The nodes backward (or autograd.grad when ``grad``) would execute, in walk order."""
    if inputs is None:
        return order
    parents = _parents(order, kids)
    leaf_ids = {id(t) for t in inputs if t.grad_fn is None}
    targets = {t.grad_fn for t in inputs if t.grad_fn is not None and t.grad_fn in parents}
    for node in order:
        variable = getattr(node, "variable", None)
        if variable is not None and id(variable) in leaf_ids:
            targets.add(node)
    run: set[Any] = set()
    work: list[Any] = []
    for target in targets:
        if not grad:
            work.append(target)
        else:
            work.extend(parents[target])
    while work:
        node = work.pop()
        if node in run:
            continue
        run.add(node)
        work.extend(parents[node])
    return [node for node in order if node in run]


def _source(node: Any) -> SourceLine | None:
    try:
        stack = node.metadata.get("traceback_")
    except (AttributeError, RuntimeError):
        return None
    if not stack:
        return None
    text = "".join(stack) if isinstance(stack, (list, tuple)) else str(stack)
    found = None
    for match in _FRAME.finditer(text):
        filename = match.group("file")
        if filename.startswith(_LIBRARY_DIRS):
            continue
        found = SourceLine(filename, int(match.group("line")), (match.group("code") or "").strip())
    return found


# ---------------------------------------------------------------------------------------------
# Suspects


def _suspect_items(suspects: Any) -> list[tuple[str, torch.Tensor, str]]:
    """(name, tensor, origin) for every tensor the user named: origin "module", "list", "plain"."""
    if suspects is None:
        return []
    if isinstance(suspects, torch.nn.Module):
        items = []
        for prefix, module in suspects.named_modules():
            dotted = f"{prefix}." if prefix else ""
            for name, value in vars(module).items():
                if name.startswith("_") or isinstance(value, torch.nn.Parameter):
                    continue
                items += [(n, t, "module") for n, t, _ in _tensors_named(dotted + name, value)]
            for name, buffer in module.named_buffers(recurse=False):
                if buffer is not None:
                    items.append((dotted + name, buffer, "module"))
        return items
    if not isinstance(suspects, Mapping):
        raise TypeError(
            f"suspects must be a mapping of names to tensors, such as {{'h': h, 'feats': feats}}, "
            f"or an nn.Module, got a {type(suspects).__name__}.")
    items = []
    for name, value in suspects.items():
        found = _tensors_named(str(name), value)
        if not found and value is not None and not (
                isinstance(value, (list, tuple)) and not value):
            raise TypeError(
                f"suspects[{name!r}] is a {type(value).__name__}, not a tensor (or a list or "
                "tuple of tensors). Pass the tensors that cross from one step to the next.")
        items += found
    return items


def _tensors_named(name: str, value: Any, origin: str = "plain") -> list[tuple[str, torch.Tensor, str]]:
    """(name, tensor, origin): origin is "list" for items of a list (a buffer that grows)."""
    if isinstance(value, torch.Tensor):
        return [(name, value, origin)]
    if isinstance(value, (list, tuple)):
        inner = "list" if isinstance(value, list) else origin
        found = []
        for i, item in enumerate(value):
            found += _tensors_named(f"{name}[{i}]", item, inner)
        return found
    return []


def _suspect_message(name: str, origin: str, stale: bool, reaches: bool) -> str:
    base = name.split("[")[0].split(".")[-1]
    if not stale:
        return ""
    if origin == "module":
        fix = "update it under torch.no_grad() or store a .detach()ed value"
    elif origin == "list":
        fix = ("clear the list after each backward (or append .detach()ed values, or numbers "
               "from .item(), if they only need logging)")
    elif _RECURRENT_NAMES.match(base):
        fix = "detach it at the start of each batch"
    else:
        fix = ("compute it inside the loop, or detach it (or compute it under torch.no_grad()) "
               "if it needs no gradient")
    where = "" if reaches else " (this backward does not go through it)"
    return f"`{name}` still carries the graph of an earlier backward{where}: {fix}."


def _judge_suspects(items: list[tuple[str, torch.Tensor, str]], kids: dict[Any, list[Any]],
                    stale_nodes: dict[Any, tuple[SavedSlot, ...]], slot_count: dict[Any, int],
                    executed_set: set[Any] | None) -> list[tuple[Suspect, str]]:
    """Which suspects carry a stale graph of their own.

    A suspect whose own node is stale is an old tensor. A suspect computed in this step that
    reaches a stale graph only through an old suspect (the new hidden state, built from an old
    ``style`` vector) is not blamed: the old suspect is the one to fix.
    """
    memo: dict[Any, bool] = {}

    def is_stale(node: Any) -> bool:
        if node in slot_count:
            return node in stale_nodes
        if node not in memo:
            memo[node] = bool(_stale_slots(node))
        return memo[node]

    def first_stale(start: Any) -> set[Any]:
        hits, seen, work = set(), {start}, [start]
        while work:
            node = work.pop()
            if is_stale(node):
                hits.add(node)
                continue
            for child in children_cached(node, kids):
                if child not in seen:
                    seen.add(child)
                    work.append(child)
        return hits

    judged = []
    for name, tensor, origin in items:
        node = tensor.grad_fn
        if node is None:
            judged.append((name, origin, None, False, set()))
            continue
        old = is_stale(node)
        judged.append((name, origin, node, old, {node} if old else first_stale(node)))
    explained: set[Any] = set()
    for _, _, node, old, _ in judged:
        if old:
            explained.update(reachable([node], kids)[0])
    found = []
    in_graph = executed_set if executed_set is not None else slot_count
    for name, origin, node, old, hits in judged:
        if node is None:
            found.append((Suspect(name, "clean", False), origin))
            continue
        own = hits if old else hits - explained
        reaches = node in in_graph or any(n in stale_nodes for n in hits)
        state = "stale" if own else "history"
        found.append((Suspect(name, state, reaches,
                              _suspect_message(name, origin, bool(own), reaches)), origin))
    return found


# ---------------------------------------------------------------------------------------------
# The pattern


def _leaves_below(starts: list[Any], limit: set[Any] | None = None) -> set[int]:
    leaves: set[int] = set()
    seen = set(starts)
    work = list(starts)
    while work:
        node = work.pop()
        variable = getattr(node, "variable", None)
        if isinstance(variable, torch.Tensor):
            leaves.add(id(variable))
        for child in children(node):
            if child not in seen and (limit is None or child in limit):
                seen.add(child)
                work.append(child)
    return leaves


def _pattern(roots: list[torch.Tensor], stale_nodes: dict[Any, tuple[SavedSlot, ...]],
             frontier: list[Any], fresh: list[Any], fresh_slot_count: int,
             suspects: list[tuple[Suspect, str]]) -> Pattern:
    if any(s.state == "modified" for slots in stale_nodes.values() for s in slots) and not any(
            s.state == "freed" for slots in stale_nodes.values() for s in slots):
        return PATTERNS["modified_in_place"]
    stale_suspects = [(s, m) for s, m in suspects if s.state == "stale" and s.reaches_root]
    if stale_suspects:
        suspect, origin = stale_suspects[0]
        if origin == "module":
            return PATTERNS["module_state"]
        if origin == "list":
            return PATTERNS["accumulated_loss"]
        base = suspect.name.split("[")[0].split(".")[-1]
        return PATTERNS["hidden_state" if _RECURRENT_NAMES.match(base) else "outside_loop"]
    if any(r.grad_fn in stale_nodes for r in roots) or fresh_slot_count == 0:
        return PATTERNS["backward_twice"]
    # From the root down through nodes that save nothing, an accumulating node with a stale
    # branch: total = total + loss, torch.stack(log_probs).sum().
    slotless = {node for node in fresh if not stale_slots(node)[0]}
    region: list[Any] = []
    for r in roots:
        if r.grad_fn in slotless and r.grad_fn not in region:
            region += [n for n in _reachable_within(r.grad_fn, slotless) if n not in region]
    if any(node_name(n) in _ACCUMULATING for n in region) and any(
            child in stale_nodes for n in region for child in children(n)):
        return PATTERNS["accumulated_loss"]
    # The old graph and the new one use the same parameters: the same model ran in both steps,
    # fed by something carried over (a recurrent state).
    fresh_set = set(fresh)
    new_leaves = _leaves_below([n for n in fresh], fresh_set)
    old_leaves = _leaves_below(frontier)
    if new_leaves & old_leaves:
        return PATTERNS["hidden_state"]
    return PATTERNS["shared_trunk"]


def _reachable_within(start: Any, allowed: set[Any]) -> list[Any]:
    out, seen, work = [], {start}, [start]
    while work:
        node = work.pop()
        out.append(node)
        for child in children(node):
            if child in allowed and child not in seen:
                seen.add(child)
                work.append(child)
    return out


# ---------------------------------------------------------------------------------------------
# The public function


@without_gc
def diagnose(root: Any, suspects: Any = None, *, inputs: Any = None, grad: bool = False) -> Report:
    """Say, before ``root.backward()`` runs, whether it will fail on a stale saved tensor, and why.

    Looks at every node backward would execute and at the state of its saved tensors, without
    unpacking any that a hook packed, so a later backward behaves exactly as it would have.

    Args:
        root: the tensor you would call ``.backward()`` on, such as the loss (or a list of them).
        suspects: tensors that cross from one step to the next, by name, such as
            ``{"h": h, "feats": feats}`` (values may be lists or tuples of tensors, such as an
            LSTM's ``(h, c)``), or an ``nn.Module`` whose tensor attributes and buffers are
            checked. The report says which of them carry a stale graph.
        inputs: as in ``backward(inputs=...)``: only the nodes on paths from the root to these
            tensors run, so only their saved tensors matter.
        grad: with ``inputs``, predict ``torch.autograd.grad(root, inputs)`` instead, which does
            not run the nodes that produced non-leaf inputs.

    Returns:
        A :class:`Report`: ``.ok``, ``.stale``, ``.frontier``, ``.suspects``, ``.pattern``; its
        ``str()`` is a short explanation with the fix and a link to the book's notebook.

    Raises:
        TypeError: ``root`` (or a suspect, or an input) is not a tensor.
        ValueError: ``root`` has no ``grad_fn`` (a leaf, made under no_grad, or detached).

    >>> import torch
    >>> w = torch.ones(3, requires_grad=True)
    >>> h = (w * w).tanh()                 # computed once, outside the loop
    >>> (h * 2).sum().backward()           # step 1 frees h's graph
    >>> report = diagnose((h * 3).sum(), suspects={"h": h})
    >>> report.ok
    False
    >>> [f.node_name for f in report.frontier]
    ['TanhBackward0']
    >>> report.suspects[0].message
    '`h` still carries the graph of an earlier backward: detach it at the start of each batch.'
    >>> diagnose((h.detach() * 3 * w).sum()).ok
    True
    """
    roots = graph_roots(root)
    wanted = None if inputs is None else _check_inputs(inputs)
    if not isinstance(grad, bool):
        raise TypeError(f"grad must be True or False, got {grad!r}.")
    if grad and wanted is None:
        raise ValueError("grad=True predicts torch.autograd.grad(root, inputs): pass inputs too.")
    items = _suspect_items(suspects)

    order, kids = reachable([r.grad_fn for r in roots])
    executed = _executed(order, kids, wanted, grad)
    executed_set = set(executed) if wanted is not None else None
    stale_nodes: dict[Any, tuple[SavedSlot, ...]] = {}
    slot_count: dict[Any, int] = {}
    for node in executed:
        count, found = stale_slots(node)
        slot_count[node] = count
        stale = tuple(found)
        if stale and isinstance(node, torch.autograd.function.BackwardCFunction) \
                and not _unpacks_saved(node):
            stale = ()
        if stale:
            stale_nodes[node] = stale

    # Breadth-first from the roots, stopping at stale nodes: those are the frontier.
    frontier: list[Any] = []
    fresh: list[Any] = []
    seen: set[Any] = set()
    work = [r.grad_fn for r in roots if executed_set is None or r.grad_fn in executed_set]
    for node in work:
        seen.add(node)
    index = 0
    while index < len(work):
        node = work[index]
        index += 1
        if node in stale_nodes:
            frontier.append(node)
            continue
        fresh.append(node)
        for child in kids[node]:
            if child not in seen and (executed_set is None or child in executed_set):
                seen.add(child)
                work.append(child)
    fresh_slot_count = sum(slot_count.get(n, 0) for n in fresh)

    found = _judge_suspects(items, kids, stale_nodes, slot_count, executed_set)

    ok = not stale_nodes
    frontier_items = tuple(FrontierNode(n, node_name(n), stale_nodes[n], _source(n))
                           for n in frontier)
    pattern = None if ok else _pattern(roots, stale_nodes, frontier, fresh, fresh_slot_count, found)
    notes: tuple[str, ...] = ()
    if not ok and pattern is not None and pattern.key == "backward_twice" and any(
            s.state == "modified" for slots in stale_nodes.values() for s in slots):
        notes = ("Some saved tensors were also modified in place since they were saved "
                 "(optimizer.step() after a retained backward does that).",)
    return Report(
        ok=ok,
        stale=tuple(s for n in executed if n in stale_nodes for s in stale_nodes[n]),
        frontier=frontier_items,
        suspects=tuple(s for s, _ in found),
        pattern=pattern,
        nodes_checked=len(executed),
        anomaly=any(f.source is not None for f in frontier_items),
        _notes=notes,
    )
