"""Drawing an autograd graph with its saved tensors (the frames of a backward pass: replay.py).

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

from typing import Any, Callable, Mapping

import graphviz
import torch
from torch.autograd.graph import Node

from ._inputs import graph_roots, leaf_names
from .describe import describe
from .focus import focused
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
# Saved tensors in frames of a backward pass: one box size whatever the state, so the layout stays.
SAME_SIZE = dict(fixedsize="true", width="1.7", height="0.5")
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


def _collapsed(dot: graphviz.Digraph, nodes: list[Node], shown: list[Node],
               index: dict[Node, int], slots_of: Callable[[int, Node], list[SavedSlot]],
               current: int | None, same_size: bool) -> None:
    """The nodes a focused drawing leaves out, as one box joined to the nodes that lead into them.

    In a frame of a backward pass (``same_size``) the box counts the saved tensors freed so far
    and is outlined as the node that ran when that node is one of the collapsed ones; its label
    keeps one width in every frame, so the layout stays."""
    hidden = [(j, node) for j, node in enumerate(nodes) if node not in index]
    slots = [slot for j, node in hidden for slot in slots_of(j, node)]
    if same_size:
        freed = sum(slot.state == "freed" for slot in slots)
        label = (f"{len(hidden)} more nodes, collapsed\n"
                 f"{freed:{len(str(len(slots)))}d} of {len(slots)} saved tensors freed")
        ran = current in {j for j, _ in hidden}
        style = dict(color=CURRENT, penwidth="3") if ran else dict(color="black", penwidth="1")
    else:
        stale = sum(slot.stale for slot in slots)
        label, style = f"{len(hidden)} more nodes, collapsed\n({stale} stale saved tensors)", {}
    dot.node("more", label, shape="box3d", fillcolor="lightyellow", **style)
    for i, node in enumerate(shown):
        if any(child not in index for child in children(node)):
            dot.edge("more", f"n{i}", style="dashed")


def _render(root: Any, params: Mapping[str, torch.Tensor] | None, *, show_saved: bool,
            max_nodes: int, legend: bool, title: str | None,
            slots_of: Callable[[int, Node], list[SavedSlot]] | None = None,
            current: int | None = None, focus: Any = None,
            same_size: bool = False) -> graphviz.Digraph:
    roots = graph_roots(root)
    names = leaf_names(params)
    if not isinstance(max_nodes, int) or isinstance(max_nodes, bool) or max_nodes < 1:
        raise ValueError(f"max_nodes must be a positive int, got {max_nodes!r}.")
    nodes = walk(roots)
    shown = focused(nodes, focus)[:max_nodes]
    index = {node: i for i, node in enumerate(shown)}
    position = {node: j for j, node in enumerate(nodes)}   # what slots_of and current count in
    slots_of = slots_of or (lambda j, node: node_slots(node))

    # The graph's name is its description: the SVG's <title>, which pages use as alt text.
    dot = graphviz.Digraph(name=describe(roots, params, shown=len(shown)), node_attr=NODE_ATTR,
                           graph_attr=dict(size="12,12"))
    if title:
        dot.attr(label=title, labelloc="t", fontname="monospace", fontsize="12")
    for r, tensor in enumerate(roots):
        label = names.get(id(tensor), "root" if len(roots) == 1 else f"root {r}")
        dot.node(f"r{r}", f"{label}\n {_shape(tensor.shape)}", fillcolor=ROOT)
        if tensor.grad_fn in index:
            dot.edge(f"n{index[tensor.grad_fn]}", f"r{r}")
        elif focus is not None and tensor.grad_fn is not None:   # its node is in the collapsed box
            dot.edge("more", f"r{r}", style="dashed")

    for i, node in enumerate(shown):
        key = f"n{i}"
        ran = position[node] == current
        style = dict(color=CURRENT, fillcolor=NODE, penwidth="3") if ran else {}
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
            for k, slot in enumerate(slots_of(position[node], node)):
                dot.node(f"s{i}_{k}", **_slot_style(slot), **(SAME_SIZE if same_size else {}))
                dot.edge(key, f"s{i}_{k}", dir="none", style="dashed", color="gray40")
    if len(nodes) > len(shown) and focus is not None:
        _collapsed(dot, nodes, shown, index, slots_of, current, same_size)
    elif len(nodes) > len(shown):
        dot.node("more", f"... {len(nodes) - len(shown)} more nodes not drawn\n"
                         f"(max_nodes={max_nodes})", shape="note", fillcolor="lightyellow")
    if legend:
        _legend(dot, with_current=current is not None)
    from torchviz.dot import resize_graph  # here: its 0.3 s import would slow every CLI run

    resize_graph(dot)
    if focus is not None and len(shown) < len(nodes):   # narrow: readable at a page's width
        dot.graph_attr.update(size="11.5,100", nodesep="0.12")
    return dot


def draw(root: Any, params: Mapping[str, torch.Tensor] | None = None, *, show_saved: bool = True,
         max_nodes: int = 60, legend: bool = True, title: str | None = None,
         focus: Any = None) -> graphviz.Digraph:
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
        focus: ``"stale"`` draws only the path from the root into the stale part of the graph
            (down to the first nodes whose saved tensors are freed or modified, see
            :func:`~autograd_lens.lens.focus.stale_path`) and collapses every other node into one
            box that says how many it holds; a tensor or node, or a list of them, draws the
            paths from the root to those targets (a parameter stands for its ``AccumulateGrad``
            node, see :func:`~autograd_lens.lens.focus.paths_to`) and collapses the rest the same
            way; ``None`` (the default) draws every node.

    Returns:
        A ``graphviz.Digraph``, named with :func:`~autograd_lens.describe` of the graph (its
        SVG's title: the alt text of the picture); in a notebook it displays as SVG.

    >>> import torch
    >>> x = torch.ones(3, requires_grad=True)
    >>> loss = (x * x).sum()
    >>> draw(loss, legend=False).name
    'Autograd graph of 3 nodes. 2 saved tensors: 2 alive, 0 freed.'
    >>> loss.backward()
    >>> draw(loss, legend=False).name
    'Autograd graph of 3 nodes. 2 saved tensors: 0 alive, 2 freed (MulBackward0 other, MulBackward0 self).'
    >>> old = (x.exp() * 2).sin()
    >>> old.sum().backward()
    >>> step_two = (old * 3).sum()      # reaches old's freed graph
    >>> print(draw(step_two, focus="stale", legend=False).name)
    Autograd graph of 6 nodes. 4 saved tensors: 1 alive, 3 freed (SinBackward0 self, MulBackward0 other, ExpBackward0 result). Drawn in full: 3 of the nodes; the other 3 in one box.
    """
    return _render(root, params, show_saved=show_saved, max_nodes=max_nodes, legend=legend,
                   title=title, focus=focus)
