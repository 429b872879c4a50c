"""The evidence of a failing backward call, made from what :mod:`autograd_lens.run.record` kept.

:func:`evidence` runs at the failing call of the replay and returns a JSON-able dict:

* ``kind`` (``"freed"`` or ``"modified"``), ``message``, ``call`` (its number: 1 for the first
  backward or ``autograd.grad`` call), ``at`` (the user's line that called it), ``callers``
  (the user's frames that called that line, innermost first), ``nested`` (whether another backward call, running, ran it: a custom Function's backward);
* ``node``: the node whose saved tensor was freed (or modified) that this backward met, with
  ``slot``, its sequence ``number``, ``built`` (the user's line that built it, with ``backward_calls`` and ``steps``: how
  many had run then) and, for the freed-graph error, ``freed_by`` (the backward call that freed
  it: its number and line, ``same_roots``: whether it started from the roots the failing
  call starts from, the same loss backwarded twice, and ``nested``: whether it was run by a
  backward call already running, as a custom Function's backward runs one); ``freed_nodes``: the sequence numbers of every node of the failing
  graph whose saved tensors were freed; ``entered``: the user's statements that made, after
  that call, a node of the failing graph whose input is a node made before it (where a value
  kept from before enters this step);
* ``write`` (the in-place error): the first write of the saved tensor after the node saved it,
  with its line in the user's code, the call chain and the library line under it, and the
  ``backward_calls`` and ``steps`` that lay between the save and the write (and ``in_step``:
  the write is an optimizer's step itself; then ``fresh_weights``: a node of the failing graph
  made after that step takes a weight itself), and for a weight its ``parameter`` path from a name
  of the user's that holds its module; ``written``: the user's names that hold the tensor;
  ``next_writes``: the user's lines of the same first writes of the graph's other saved
  tensors in the error's state (the ones the backward would meet next); ``later_writes``: the
  user's lines of the writes that changed the same saved tensor again, up to the reported
  version; where no node the
  graph shows holds a saved tensor in the error's state (the node of an in-place operation on
  a view is kept inside a ``CopySlices``, out of reach), ``node`` is None and ``write`` is the
  write of a tensor of the reported size that took it to the reported versions, with
  ``backward_calls`` and ``steps`` None (not known), and ``copy_slices`` counts the graph's
  ``CopySlices`` nodes;
* ``holders``: the user's names (locals of the user's frames, globals of the user's modules,
  attributes of the objects they hold, a custom Function's ``ctx`` among them, entries of
  containers one level deep) whose tensor's
  graph reaches that node, each with its ``scope``, the scope's ``file``, ``qualname`` and the
  line it runs at (``now``), the class it is an attribute of (``owner``, "" for none), for an
  entry of a list or a dict its length (``entries``, else None), the node
  its tensor holds (``node``, ``number``), and where that node was made: ``built`` (the
  innermost user frame), ``steps`` and ``backward_calls`` (run by then) and ``callers`` (the
  user frames that called it, innermost first), and
  ``went``: whether that node lies in the graph of the call that freed the failing node (when
  that call's graph is known), ``in_graph``: whether it lies in the failing call's own graph; ``carrying``: the same for
  the names whose graph reaches none of that node but another freed node of the failing graph;
* ``root`` (the freed-graph error): the failing call's first root node, its ``name``,
  ``number`` and ``built`` (as for ``node``): a loss built before the call that freed its
  graph ran, which that call did not go through (``went``, as for ``holders``), is a second
  loss of the same forward, backpropagated in turn; ``stepped``: whether
  an optimizer step after that call wrote a weight the failing graph reaches (None: that call
  is not known);
* ``backwards`` and ``steps``: every backward call and optimizer step, with their lines.
"""

from __future__ import annotations

from typing import Any

import torch

from ..lens.graph import breadth_first, children, node_name
from .holders import _holders, _parameter_path
from .node_history import _built, _freed_by, _stale
from .record import Log
from .tensor_names import storage_key
from .write_evidence import (_first_write, _hidden_write, _later_writes, _next_writes,
                             _reported_first, _write_fields)
from ..explain.writes import _parsed

_ENTERED = 8  # statements where old values enter, listed


def evidence(log: Log, error: BaseException, outputs: Any, site: int, frame: Any) -> dict:
    """The evidence at the failing call (see the module's docstring)."""
    from ..lens.errors import error_kind

    kind = error_kind(error)
    roots = [t.grad_fn for t in outputs if getattr(t, "grad_fn", None) is not None]
    order = breadth_first(roots)
    stale = _stale(order, kind)
    reached: dict[int, set] = {}
    if kind == "freed":  # this call freed its own new nodes before meeting the old one
        stale = [(n, s) for n, s in stale if _freed_by(log, n, reached) is not None] or stale
    found: dict[str, Any] = {
        "kind": kind, "message": str(error).split("\n")[0], "call": log.backward_count + 1,
        "at": log.sites.resolve(site)["user"], "callers": log.sites.resolve(site)["chain"],
        "node": None, "write": None, "written": [],
        "holders": [], "carrying": [], "steps_before": log.step_count,
        "nested": log.depth > 1,
        "backwards": [dict(log.sites.resolve(c["site"])["user"] or {}, number=c["number"],
                           retained=c["retained"], steps_before=c["steps_before"])
                      for c in log.backwards[-50:]],
        "steps": [dict(log.sites.resolve(s["site"])["user"] or {}, number=s["number"],
                       optimizer=s["optimizer"], after_backward_calls=s["after_backward_calls"])
                  for s in log.steps[-50:]]}
    facts = _parsed(error) if kind == "modified" else None
    if not stale:
        hidden = _hidden_write(log, facts) if facts else None
        if hidden is not None:  # the node that saved it sits inside a write into a view
            found["write"] = _write_fields(log, hidden, None)
            found["copy_slices"] = sum(node_name(n) == "CopySlices" for n in order)
            found["written"] = _holders(log, frame, None, hidden[1], facts["now"])[1]
        return found
    if facts:
        stale = _reported_first(stale, facts)
    node, slot = stale[0]
    number = node._sequence_nr()
    found["node"] = {"name": node_name(node), "slot": slot, "built": _built(log, number),
                     "number": number}
    if kind == "freed":
        found["node"]["freed_by"] = freeing = _freed_by(log, node, reached)
        if freeing is not None:  # that call started from the very roots this one starts from
            kept = dict(log.roots).get(freeing["number"])
            freeing["same_roots"] = kept is not None and set(kept) == set(roots)
        found["freed_nodes"] = sorted(n._sequence_nr() for n, _ in stale)
        found["entered"] = _entered(log, order, freeing)
        if roots:  # the failing call's own loss: made before the freeing call ran, or after
            own = _own_loss(log, roots[0], found["at"])
            first = own._sequence_nr()
            found["root"] = {"name": node_name(own), "number": first,
                             "built": _built(log, first),
                             "stepped": _stepped_weights(log, order, freeing)}
    write = _first_write(log, facts, number) if facts else None
    if write is not None:
        found["write"] = _write_fields(log, write, _built(log, number) or {})
    if facts:
        found["next_writes"] = _next_writes(log, stale[1:], (found["write"] or {}).get("user"))
        found["later_writes"] = _later_writes(log, write, facts) if write is not None else []
    others = frozenset(n for n, _ in stale[1:]) if kind == "freed" else frozenset()
    holders, writers, carrying = _holders(log, frame, node, write[1] if write else None,
                                          facts["now"] if facts else -1, others)
    found["holders"], found["written"], found["carrying"] = holders, writers, carrying
    failing = {n._sequence_nr() for n in order}
    for holder in holders:  # a part of the failing call's own graph, or only reaching the node
        holder["in_graph"] = holder["number"] in failing
    freeing = (found["node"].get("freed_by") or {}) if kind == "freed" else {}
    if freeing.get("known") and freeing["number"] in reached:  # that call's graph, walked
        went = {n._sequence_nr() for n in reached[freeing["number"]]}
        for holder in holders + carrying + ([found["root"]] if "root" in found else []):
            holder["went"] = holder["number"] in went
    if found["write"] is not None and found["write"].get("in_step"):
        # a node made after that step that takes a weight itself: the failing loss runs a
        # fresh forward through some weights, not only values made before the step
        step = found["write"]["in_step"]
        found["write"]["fresh_weights"] = any(
            (_built(log, n._sequence_nr()) or {}).get("steps", -1) >= step and
            any(node_name(k) == "AccumulateGrad" for k in children(n)) for n in order)
    if found["write"] is not None and found["write"]["weight"]:
        found["write"]["parameter"] = _parameter_path(frame, write[1])
    return found


def _entered(log: Log, order: list[Any], freeing: dict | None) -> list[dict]:
    """Where values made before the call that freed the graph enter the failing call's graph:
    the user's statements that made, after that call, a node whose input is a node made
    before it (``start = track.pose.inverse()``, reading a pose kept from an earlier step)."""
    if not freeing or not freeing.get("number"):
        return []
    builts: dict[int, dict | None] = {}

    def built(node: Any) -> dict | None:  # None: not recorded (a leaf's accumulator)
        number = node._sequence_nr()
        if number not in builts:
            builts[number] = None if node_name(node) == "AccumulateGrad" else \
                _built(log, number)
        return builts[number]

    def made_after(node: Any) -> bool | None:
        made = built(node)
        return None if made is None else made["backward_calls"] >= freeing["number"]

    found: dict[tuple, dict] = {}
    for node in order:
        if made_after(node) and any(made_after(child) is False for child in children(node)):
            site = built(node).get("user")
            if site is not None:
                found.setdefault((site["file"], site["line"]), site)
    return list(found.values())[:_ENTERED]


def _own_loss(log: Log, root: Any, at: dict | None) -> Any:
    """The failing call's loss: its root, or, where the backward's own statement made the root
    from one tensor (``(w_rec_loss * weight).backward()``), the node of that tensor."""
    node = root
    while at:
        built = (_built(log, node._sequence_nr()) or {}).get("user") or {}
        if (built.get("file"), built.get("line")) != (at.get("file"), at.get("line")):
            return node
        made = [kid for kid in children(node) if _built(log, kid._sequence_nr())]
        if len(made) != 1:
            return node
        node = made[0]
    return node


def _stepped_weights(log: Log, order: list[Any], freeing: dict | None) -> bool | None:
    """Whether an optimizer step that ran after the call that freed the graph (``freeing``)
    wrote a weight that the failing graph reaches (a leaf it accumulates into); None when
    that call is not known."""
    if freeing is None:
        return None
    weights = {storage_key(v) for v in (getattr(n, "variable", None) for n in order)
               if isinstance(v, torch.Tensor)}
    return any(w[8] is not None and w[6] >= freeing["number"] and w[1] in weights
               for w in log.writes)

