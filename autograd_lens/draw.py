"""Drawing an autograd graph with its saved tensors, and the frames of a backward pass.

Colours, as in torchviz (whose node style and sizing this module reuses), plus the overlay:

* light blue: a leaf tensor that requires grad (its ``.grad`` is filled by backward)
* light grey: a node (a backward function)
* green: the root tensor(s) the graph was drawn from
* orange: a saved tensor, alive
* white, dashed red border, label "freed": a saved tensor freed by a backward pass
* red, label "modified in place": a saved tensor changed in place since it was saved
* bold blue border: in a backward frame, the node that has just run

Node ids are assigned in walk order (``n0``, ``n1``, ...), not from Python ``id()``, so the
DOT source of the same graph is the same on every run.

Why not call ``torchviz.make_dot`` directly: after backward, ``make_dot(show_saved=True)``
raises the freed-graph error, plain ``make_dot`` raises on graphs with a custom
``autograd.Function`` or a reentrant checkpoint, and its node ids change on every run.
"""

from __future__ import annotations

import html
from dataclasses import dataclass, field
from typing import Any, Callable, Mapping

import graphviz
import torch
from torch.autograd.graph import Node

from ._inputs import graph_roots, leaf_names
from .graph import SavedSlot, children, node_name, node_slots, walk

LEAF = "lightblue"
NODE = "lightgrey"
ROOT = "darkolivegreen1"
ALIVE = "orange"
FREED_FILL = "white"
FREED_LINE = "red3"
MODIFIED = "tomato"
CURRENT = "blue"

# torchviz's node style, so our pictures look like the ones readers know.
NODE_ATTR = dict(style="filled", shape="box", align="left", fontsize="10", ranksep="0.1",
                 height="0.2", fontname="monospace")


def _shape(shape: Any) -> str:
    return "(" + ", ".join(str(int(d)) for d in shape) + ")"


def _human(nbytes: int | None) -> str:
    if nbytes is None:
        return "? bytes"
    for unit in ("bytes", "KiB", "MiB", "GiB"):
        if nbytes < 1024 or unit == "GiB":
            break
        nbytes /= 1024
    return f"{nbytes} {unit}" if unit == "bytes" else f"{nbytes:.1f} {unit}"


def _slot_style(slot: SavedSlot) -> dict[str, str]:
    shape = _shape(slot.shape) if slot.shape is not None else ""
    if slot.state == "freed":
        return dict(label=f"{slot.name}\nfreed", fillcolor=FREED_FILL, color=FREED_LINE,
                    fontcolor="gray30", style="filled,dashed", penwidth="1.5")
    if slot.state == "modified":
        return dict(label=f"{slot.name} {shape}\nmodified in place", fillcolor=MODIFIED,
                    color="black", style="filled,bold")
    extra = "\npacked by a hook" if slot.hooked else ""
    return dict(label=f"{slot.name} {shape}\n{_human(slot.nbytes)}{extra}", fillcolor=ALIVE)


def _legend(dot: graphviz.Digraph, with_current: bool) -> None:
    items = [
        ("leaf tensor\n(gets .grad)", dict(fillcolor=LEAF)),
        ("node\n(backward function)", dict(fillcolor=NODE)),
        ("root tensor", dict(fillcolor=ROOT)),
        ("saved tensor\nalive", dict(fillcolor=ALIVE)),
        ("saved tensor\nfreed", dict(fillcolor=FREED_FILL, color=FREED_LINE, style="filled,dashed",
                                      penwidth="1.5", fontcolor="gray30")),
        ("saved tensor\nmodified in place", dict(fillcolor=MODIFIED, style="filled,bold")),
    ]
    if with_current:
        items.append(("node that\njust ran", dict(fillcolor=NODE, color=CURRENT, penwidth="3")))
    with dot.subgraph(name="cluster_legend") as legend:
        legend.attr(label="legend", fontsize="10", fontname="monospace", style="dashed",
                    color="gray50")
        for index, (label, style) in enumerate(items):
            legend.node(f"legend{index}", label, **style)
            if index:
                legend.edge(f"legend{index - 1}", f"legend{index}", style="invis")


def _render(root: Any, params: Mapping[str, torch.Tensor] | None, *, show_saved: bool,
            max_nodes: int, legend: bool, title: str | None,
            slots_of: Callable[[int, Node], list[SavedSlot]] | None = None,
            current: int | None = None) -> graphviz.Digraph:
    roots = graph_roots(root)
    names = leaf_names(params)
    if not isinstance(max_nodes, int) or isinstance(max_nodes, bool) or max_nodes < 1:
        raise ValueError(f"max_nodes must be a positive int, got {max_nodes!r}.")
    nodes = walk(roots)
    shown = nodes[:max_nodes]
    index = {node: i for i, node in enumerate(shown)}
    slots_of = slots_of or (lambda i, node: node_slots(node))

    dot = graphviz.Digraph(node_attr=NODE_ATTR, graph_attr=dict(size="12,12"))
    if title:
        dot.attr(label=title, labelloc="t", fontname="monospace", fontsize="12")
    for r, tensor in enumerate(roots):
        label = names.get(id(tensor), "root" if len(roots) == 1 else f"root {r}")
        dot.node(f"r{r}", f"{label}\n {_shape(tensor.shape)}", fillcolor=ROOT)
        if tensor.grad_fn in index:
            dot.edge(f"n{index[tensor.grad_fn]}", f"r{r}")

    for i, node in enumerate(shown):
        key = f"n{i}"
        style = dict(color=CURRENT, fillcolor=NODE, penwidth="3") if i == current else {}
        dot.node(key, node_name(node), **style)
        variable = getattr(node, "variable", None)
        if isinstance(variable, torch.Tensor):
            dot.node(f"v{i}", f"{names.get(id(variable), '')}\n {_shape(variable.shape)}",
                     fillcolor=LEAF)
            dot.edge(f"v{i}", key)
        for child in children(node):
            if child in index:
                dot.edge(f"n{index[child]}", key)
        if show_saved:
            for k, slot in enumerate(slots_of(i, node)):
                dot.node(f"s{i}_{k}", **_slot_style(slot))
                dot.edge(key, f"s{i}_{k}", dir="none", style="dashed", color="gray40")
    if len(nodes) > len(shown):
        dot.node("more", f"... {len(nodes) - len(shown)} more nodes not drawn\n"
                         f"(max_nodes={max_nodes})", shape="note", fillcolor="lightyellow")
    if legend:
        _legend(dot, with_current=current is not None)
    from torchviz.dot import resize_graph  # here: its 0.3 s import would slow every CLI run

    resize_graph(dot)
    return dot


def draw(root: Any, params: Mapping[str, torch.Tensor] | None = None, *, show_saved: bool = True,
         max_nodes: int = 60, legend: bool = True, title: str | None = None) -> graphviz.Digraph:
    """Draw the autograd graph behind ``root``, with every saved tensor and its state.

    Works before and after backward, and on graphs with custom ``autograd.Function`` nodes and
    checkpoints (both modes). Drawing changes nothing that a later backward does.

    Args:
        root: the tensor the graph ends at, such as the loss (or a list of tensors).
        params: names for leaf tensors, such as ``dict(model.named_parameters())``.
        show_saved: draw saved tensors (orange alive, dashed red "freed", red "modified").
        max_nodes: draw at most this many nodes, breadth-first from the root; the picture
            says how many more there are.
        legend: add a legend that says what every colour means.
        title: a caption above the picture.

    Returns:
        A ``graphviz.Digraph``; in a notebook it displays as SVG.

    >>> import torch
    >>> x = torch.ones(3, requires_grad=True)
    >>> loss = (x * x).sum()
    >>> "freed" in draw(loss, legend=False).source
    False
    >>> loss.backward()
    >>> "freed" in draw(loss, legend=False).source
    True
    """
    return _render(root, params, show_saved=show_saved, max_nodes=max_nodes, legend=legend,
                   title=title)


@dataclass(frozen=True)
class Frame:
    """One step of a backward pass: the node that ran and the slots it freed.

    Attributes:
        step: 1 for the first node backward executed, 2 for the next, and so on.
        node_name: the class name of the node that ran.
        node_index: its position in :func:`~autograd_lens.walk` order (``n<index>`` in the picture).
        freed: names of this node's saved tensors found freed right after it ran.
        slots: this node's saved-tensor slots as observed right after it ran.
    """

    step: int
    node_name: str
    node_index: int
    freed: tuple[str, ...]
    slots: tuple[SavedSlot, ...] = field(repr=False)


class BackwardFrames:
    """The frames of one backward pass, returned by :func:`backward_frames`.

    Index it like a list of :class:`Frame`; ``draw(k)`` draws the graph as it was right after
    frame ``k``; ``to_html()`` (also how a notebook displays it) gives a page fragment with
    every frame pre-rendered and a slider, so it works on a static site without a kernel.
    """

    def __init__(self, roots: list[torch.Tensor], params: Mapping[str, torch.Tensor] | None,
                 before: list[list[SavedSlot]], frames: list[Frame]):
        self._roots, self._params, self._before, self.frames = roots, params, before, frames

    def __len__(self) -> int:
        return len(self.frames)

    def __getitem__(self, k: int) -> Frame:
        return self.frames[k]

    def __repr__(self) -> str:
        return f"<BackwardFrames: {len(self.frames)} nodes ran>"

    def draw(self, k: int, *, max_nodes: int = 60, legend: bool = True) -> graphviz.Digraph:
        """The graph right after frame ``k`` (0-based; -1 for the last)."""
        frame = self.frames[k]
        done = {f.node_index: f.slots for f in self.frames[: frame.step]}

        def slots_of(i: int, node: Node) -> list[SavedSlot]:
            return list(done[i]) if i in done else self._before[i]

        freed = ", ".join(frame.freed) or "nothing saved"
        title = f"step {frame.step} of {len(self.frames)}: {frame.node_name} ran; freed: {freed}"
        return _render(self._roots, self._params, show_saved=True, max_nodes=max_nodes,
                       legend=legend, title=title, slots_of=slots_of, current=frame.node_index)

    def to_html(self, *, max_nodes: int = 60) -> str:
        """Every frame as inline SVG with a slider to step through them (no kernel needed)."""
        panes = []
        for k in range(len(self.frames)):
            svg = self.draw(k, max_nodes=max_nodes, legend=(k == 0)).pipe(format="svg").decode()
            svg = svg[svg.index("<svg"):]
            hidden = "" if k == 0 else ' style="display:none"'
            panes.append(f'<div class="al-frame" data-step="{k}"{hidden}>{svg}</div>')
        count = len(self.frames)
        caption = html.escape(f"{count} nodes ran; move the slider to replay the freeing")
        return (
            '<div class="al-frames">'
            f'<p>{caption}</p>'
            f'<input type="range" min="0" max="{count - 1}" value="0" aria-label="backward step" '
            'oninput="var f=this.parentNode.querySelectorAll(\'.al-frame\');'
            'for(var i=0;i<f.length;i++){f[i].style.display=(i==this.value)?\'\':\'none\';}">'
            + "".join(panes) + "</div>"
        )

    def _repr_html_(self) -> str:
        return self.to_html()


def backward_frames(root: Any, gradient: Any = None, *, retain_graph: bool | None = None,
                    params: Mapping[str, torch.Tensor] | None = None) -> BackwardFrames:
    """Run backward from ``root`` and record, node by node, which saved tensors it frees.

    A post-hook on each node runs after the node computes its gradients and before autograd
    releases its saved tensors; the hook of the next node (and a final look after backward)
    observes the release. The hooks are removed afterwards.

    Args:
        root: the tensor to run backward from (or a list of tensors).
        gradient: as in ``torch.autograd.backward`` (needed when root is not a scalar).
        retain_graph: as in ``backward``; with True nothing is freed and every frame says so.
        params: names for leaf tensors in the pictures.

    >>> import torch
    >>> x = torch.ones(3, requires_grad=True)
    >>> frames = backward_frames((x * x).sin().sum())
    >>> [(f.node_name, f.freed) for f in frames]
    [('SumBackward0', ()), ('SinBackward0', ('self',)), ('MulBackward0', ('other', 'self')), ('AccumulateGrad', ())]
    """
    roots = graph_roots(root)
    nodes = walk(roots)
    index = {node: i for i, node in enumerate(nodes)}
    before = [node_slots(node) for node in nodes]
    ran: list[int] = []
    observed: dict[int, list[SavedSlot]] = {}

    def hook(node):
        def after_node(grad_inputs, grad_outputs):
            if ran:
                observed[ran[-1]] = node_slots(nodes[ran[-1]])
            ran.append(index[node])
        return after_node

    handles = [node.register_hook(hook(node)) for node in nodes]
    try:
        torch.autograd.backward(roots, gradient, retain_graph=retain_graph)
    finally:
        for handle in handles:
            handle.remove()
    if ran:
        observed[ran[-1]] = node_slots(nodes[ran[-1]])
    frames = []
    for step, i in enumerate(ran, start=1):
        slots = tuple(observed[i])
        frames.append(Frame(step, node_name(nodes[i]), i,
                            tuple(s.name for s in slots if s.state == "freed"), slots))
    return BackwardFrames(roots, params, before, frames)
