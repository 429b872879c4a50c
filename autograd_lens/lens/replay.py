"""The frames of a backward pass: which node ran, and which saved tensors it freed.

:func:`backward_frames` runs backward with a hook on every node and records each step;
:class:`BackwardFrames` draws the graph as it was after each step (with the colours of
:func:`~autograd_lens.draw`), and replays them on a page with a slider and step buttons.
"""

from __future__ import annotations

import html
import json
import re
from dataclasses import dataclass, field
from typing import Any, Mapping

import graphviz
import torch
from torch.autograd.graph import Node

from ._inputs import graph_roots
from .draw import _render
from .focus import focused
from .graph import SavedSlot, node_name, node_slots, walk


# A node's box in Graphviz's SVG: its id and its contents (title, shape, labels).
NODE_BOX = re.compile(r'<g id="(node\d+)" class="node">(.*?)</g>', re.S)
# The slider's handler: frame k is frame 0 with the changes of frames 1..k applied, box by box.
SHOW_FRAME = (
    "var r=this.closest('.al-frames'),d=JSON.parse(r.querySelector('.al-states').textContent),"
    "k=+this.value,v={};for(var i=1;i<=k;i++){for(var id in d.changes[i])v[id]=d.changes[i][id];}"
    "for(var id in d.variants){var g=r.querySelector('svg g#'+id);"
    "if(g)g.innerHTML=d.variants[id][v[id]||0];}"
    "var f=r.querySelector('.al-frame');f.dataset.step=k;"
    "f.querySelector('.al-step').textContent=d.captions[k];"
)


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
    frame ``k``; ``to_html()`` (also how a notebook displays it) gives a page fragment with the
    picture once, each frame's changes as small data and a slider, so it works on a static site
    without a kernel. ``focus`` and ``legend`` (given to :func:`backward_frames`) are the
    drawings' own, as in :func:`~autograd_lens.draw`: with a focus every frame shows the same
    nodes in full and the rest in one box.
    """

    def __init__(self, roots: list[torch.Tensor], params: Mapping[str, torch.Tensor] | None,
                 before: list[list[SavedSlot]], frames: list[Frame], focus: Any = None,
                 legend: bool = True):
        self._roots, self._params, self._before, self.frames = roots, params, before, frames
        self.focus, self.legend = focus, legend

    def __len__(self) -> int:
        return len(self.frames)

    def __getitem__(self, k: int) -> Frame:
        return self.frames[k]

    def __repr__(self) -> str:
        return f"<BackwardFrames: {len(self.frames)} nodes ran>"

    def draw(self, k: int, *, max_nodes: int = 60, legend: bool | None = None,
             same_size: bool = False) -> graphviz.Digraph:
        """The graph right after frame ``k`` (0-based; -1 for the last).

        ``legend=None`` draws the legend if the frames were made with one (``legend`` of
        :func:`backward_frames`).

        ``same_size=True`` draws every saved tensor in a box of one fixed size and leaves the
        step out of the picture (:meth:`~autograd_lens.BackwardFrames.caption` says it), so
        that every frame of the pass has the same layout: the same node in the same place, and
        pictures of the same size. With a ``focus``, the box of the collapsed nodes counts the
        saved tensors freed so far among them, and is outlined as the node that ran when that
        node is one of them.
        """
        frame = self.frames[k]
        done = {f.node_index: f.slots for f in self.frames[: frame.step]}

        def slots_of(i: int, node: Node) -> list[SavedSlot]:
            return list(done[i]) if i in done else self._before[i]

        return _render(self._roots, self._params, show_saved=True, max_nodes=max_nodes,
                       legend=self.legend if legend is None else legend,
                       title=None if same_size else self.caption(k),
                       slots_of=slots_of, current=frame.node_index, focus=self.focus,
                       same_size=same_size)

    def caption(self, k: int) -> str:
        """What frame ``k`` shows: the step, the node that ran, what it freed."""
        frame = self.frames[k]
        freed = ", ".join(frame.freed) or "nothing saved"
        return f"step {frame.step} of {len(self.frames)}: {frame.node_name} ran; freed: {freed}"

    def states(self, *, max_nodes: int = 60) -> tuple[str, dict[str, list[str]], list[dict[str, int]]]:
        """The replay as one picture and small per-frame changes, for :meth:`to_html`.

        Returns the SVG of frame 0; for each node box that ever changes (by its SVG id) the
        contents it takes, first as in frame 0; and for each frame the boxes whose contents
        differ from the frame before (id: index into those contents). Only the boxes of saved
        tensors and of the node that ran change: the frames share one layout.
        """
        svgs = [self.draw(k, max_nodes=max_nodes, same_size=True).pipe(format="svg").decode()
                for k in range(len(self.frames))]
        svgs = [svg[svg.index("<svg"):] for svg in svgs]
        boxes = [dict(NODE_BOX.findall(svg)) for svg in svgs]
        for svg in svgs[1:]:   # one layout: everything but the boxes' contents is the same
            if NODE_BOX.sub("", svg) != NODE_BOX.sub("", svgs[0]):
                raise RuntimeError("the frames of a backward replay do not share one layout")
        variants: dict[str, list[str]] = {}
        changes: list[dict[str, int]] = [{}]
        for before, after in zip(boxes, boxes[1:]):
            changed = {}
            for key, body in after.items():
                if body != before[key]:
                    known = variants.setdefault(key, [boxes[0][key]])
                    if body not in known:
                        known.append(body)
                    changed[key] = known.index(body)
            changes.append(changed)
        return svgs[0], variants, changes

    def to_html(self, *, max_nodes: int = 60) -> str:
        """One picture of the graph and the frames as small data, with a slider and step buttons.

        The frames share one layout (see ``same_size`` in :meth:`~autograd_lens.BackwardFrames.draw`),
        so a frame differs from the one before only in a few boxes (the saved tensors just freed,
        the node that ran). The page carries the picture once and, per frame, those boxes'
        contents (:meth:`~autograd_lens.BackwardFrames.states`); a few lines of script in the controls apply them (no kernel
        needed). Stepping through the frames moves nothing but the colours and labels.
        """
        svg, variants, changes = self.states(max_nodes=max_nodes)
        count = len(self.frames)
        data = json.dumps({"variants": variants, "changes": changes,
                           "captions": [self.caption(k) for k in range(count)]},
                          separators=(",", ":")).replace("</", "<\\/")
        caption = html.escape(f"{count} nodes ran; step through them to replay the freeing")
        step = ("var s=this.parentNode.querySelector('input');s.value=+s.value+({});"
                "s.dispatchEvent(new Event('input'))")
        return (
            '<div class="al-frames">'
            f'<p>{caption}</p><div class="al-controls">'
            f'<button type="button" aria-label="previous step" onclick="{step.format(-1)}">&#9664;</button>'
            f'<input type="range" min="0" max="{count - 1}" value="0" aria-label="backward step" '
            f'oninput="{SHOW_FRAME}">'
            f'<button type="button" aria-label="next step" onclick="{step.format(1)}">&#9654;</button>'
            f'</div><div class="al-frame" data-frames="{count}">'
            f'<p class="al-step">{html.escape(self.caption(0))}</p>{svg}</div>'
            f'<script type="application/json" class="al-states">{data}</script></div>'
        )

    def _repr_html_(self) -> str:
        return self.to_html()


def backward_frames(root: Any, gradient: Any = None, *, retain_graph: bool | None = None,
                    params: Mapping[str, torch.Tensor] | None = None,
                    focus: Any = None, legend: bool = True) -> BackwardFrames:
    """Run backward from ``root`` and record, node by node, which saved tensors it frees.

    A post-hook on each node runs after the node computes its gradients and before autograd
    releases its saved tensors; the hook of the next node (and a final look after backward)
    observes the release. The hooks are removed afterwards.

    Args:
        root: the tensor to run backward from (or a list of tensors).
        gradient: as in ``torch.autograd.backward`` (needed when root is not a scalar).
        retain_graph: as in ``backward``; with True nothing is freed and every frame says so.
        params: names for leaf tensors in the pictures.
        focus: a tensor or node, or a list of them: every frame draws the paths from the
            root to them in full, as ``focus`` in :func:`~autograd_lens.draw`, and the other
            nodes in one box that counts how many of their saved tensors are freed so far, so a
            big graph's replay reads at a page's width. A bad focus fails before backward runs.
        legend: draw the legend of colours beside each frame (``False``: a narrower picture,
            for a page whose text says what the colours mean).

    >>> import torch
    >>> x = torch.ones(3, requires_grad=True)
    >>> frames = backward_frames((x * x).sin().sum())
    >>> [(f.node_name, f.freed) for f in frames]
    [('SumBackward0', ()), ('SinBackward0', ('self',)), ('MulBackward0', ('other', 'self')), ('AccumulateGrad', ())]
    """
    roots = graph_roots(root)
    nodes = walk(roots)
    if isinstance(focus, str):
        raise ValueError(f"focus={focus!r}: a replay runs backward, which a stale graph would stop "
                         "at once; focus a replay on tensors or nodes of the graph instead.")
    if focus is not None:
        focused(nodes, focus)   # a bad focus fails here, before backward frees anything
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
    return BackwardFrames(roots, params, before, frames, focus, legend)
