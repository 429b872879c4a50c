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

import bisect
import sys
from typing import Any, Iterator

import torch

from ..lens.graph import _SAVED_PREFIX, breadth_first, children, node_name
from ..source.library_objects import made_state
from .record import Log, is_users, own_attributes, storage_key
from ..explain.writes import _parsed, stale_nodes

_ITEMS = 200  # entries of one container looked at
_NAMES = 5000  # names looked at in all
_ENTERED = 8  # statements where old values enter, listed
_MODULE_OWN = frozenset(vars(torch.nn.Module()))  # what every module's __dict__ holds


def _built(log: Log, number: int) -> dict | None:
    """Where the node numbered ``number`` was made, with the counts then: by the last operation
    that reached the mode with the counter past it (one that made ``number`` itself sees it at
    ``number + 1``; a node made after its operation returned, as the ``CopySlices`` of a write
    into a view, is that operation's, the one before the next operation that made a node)."""
    index = bisect.bisect_right(log.made, number + 1) - 1
    if index < 0:
        return None
    site = log.sites.resolve(log.made_site[index])
    return dict(site, backward_calls=log.made_counts[index], steps=log.made_steps[index])


def _stale(order: list[Any], kind: str) -> list[tuple[Any, str]]:
    """The nodes of the failing graph with a saved tensor in the error's state, root first."""
    return stale_nodes(order, "modified" if kind == "modified" else "freed")


def _freed_by(log: Log, node: Any, reached: dict[int, set] | None = None) -> dict | None:
    """The first backward call made after ``node`` that did not keep its graph and went
    through ``node`` (its roots are kept for the newest calls); None when none is known.
    ``reached``: the nodes each kept call's graph holds, by call number, filled as needed (one
    walk per call, however many nodes are asked about)."""
    number = node._sequence_nr()
    roots = dict(log.roots)
    reached = {} if reached is None else reached
    for call in log.backwards:
        if call["retained"] or call["sequence"] <= number:
            continue
        kept = roots.get(call["number"])
        if kept is not None:
            if call["number"] not in reached:
                reached[call["number"]] = _graph(kept)
            if node not in reached[call["number"]]:
                continue
        return {"number": call["number"], **log.sites.resolve(call["site"]),
                "known": kept is not None, "nested": call.get("nested", False)}
    return None


def _reaches(starts: list[Any], target: Any, floor: int) -> bool:
    """Whether ``target`` (numbered ``floor``; or one node of a frozenset, the lowest numbered
    ``floor``) lies in the graph of ``starts`` (a node numbered lower than ``floor`` is not
    walked past: it was made before ``target``)."""
    seen, todo = set(), list(starts)
    while todo:
        node = todo.pop()
        if node is target or (isinstance(target, frozenset) and node in target):
            return True
        if node in seen or node._sequence_nr() < floor:
            continue
        seen.add(node)
        todo += children(node)
    return False


def _graph(starts: list[Any]) -> set:
    """Every node of the graph of ``starts``."""
    seen, todo = set(), list(starts)
    while todo:
        node = todo.pop()
        if node not in seen:
            seen.add(node)
            todo += children(node)
    return seen


def _first_write(log: Log, facts: dict, number: int) -> tuple | None:
    """The first write after the node numbered ``number`` saved its tensor: the write after the
    node's creation that took a storage from the saved version to the next (writes before it,
    such as the node's own in-place operation or a custom Function's forward, led up to the
    saved version), of a storage whose last write took it to the version the error reports;
    among several, one outside a backward (a buffer the engine writes while the failing
    backward runs can take a freed tensor's memory and go through the same versions), then one
    of a storage the node's operation took or made, of the reported size."""
    first: dict[Any, tuple] = {}
    last: dict[Any, int] = {}
    for write in log.writes:
        if write[0] > number and write[1] is not None:
            if write[2] == facts["then"] + 1:
                first.setdefault(write[1], write)
            last[write[1]] = write[2]
    index = bisect.bisect_right(log.made, number)
    taken = log.made_storages[index] if index < len(log.made_storages) else frozenset()
    candidates = [w for key, w in first.items() if last[key] == facts["now"]]
    candidates.sort(key=lambda w: (w[9], w[1] not in taken, _numel(w[3]) != facts["numel"],
                                   w[0]))
    return candidates[0] if candidates else None


def _write_fields(log: Log, write: tuple, made: dict | None) -> dict:
    """A recorded write as the evidence gives it; the backward calls and steps between the
    node's creation and the write counted from ``made`` (None: the node is not known, nor
    are they)."""
    counts = (None, None) if made is None else (
        write[6] - made.get("backward_calls", write[6]), write[7] - made.get("steps", write[7]))
    return dict(log.sites.resolve(write[5]), op=write[4], shape=list(write[3]),
                version=write[2], backward_calls=counts[0], steps=counts[1], in_step=write[8],
                in_backward=write[9], weight=write[10], names=list(write[11]), module=write[12],
                module_names=list(write[13]))


def _hidden_write(log: Log, facts: dict) -> tuple | None:
    """The write of the tensor the error names when no node the graph shows holds it: a node
    kept inside a ``CopySlices`` (an in-place operation on a view, such as an in-place ReLU of
    a linear layer's 3-d output) is out of Python's reach. Of the storages whose last recorded
    write took them to the version the error reports, the write that took one of the reported
    size from the saved version to the next, outside a backward: the latest such (the backward
    meets the latest save first). A storage's history restarts where its version falls (a new
    tensor in a freed tensor's memory)."""
    first: dict[Any, tuple] = {}
    last: dict[Any, int] = {}
    for write in log.writes:
        key = write[1]
        if key is None:
            continue
        if write[2] <= last.get(key, 0):
            first.pop(key, None)
        if write[2] == facts["then"] + 1:
            first.setdefault(key, write)
        last[key] = write[2]
    found = [w for key, w in first.items() if last[key] == facts["now"] and not w[9] and
             _numel(w[3]) == facts["numel"]]
    return max(found, key=lambda w: w[0]) if found else None


_NEXT = 32  # the stale nodes nearest the root whose writes are looked up (each reads the log)


def _slot_facts(node: Any, slot: str) -> dict | None:
    """The versions and size that reading ``node``'s saved ``slot`` reports (the in-place
    error's, as backward would raise it); None for a slot read without an error, or one not
    read by its name (a custom Function's, a list's)."""
    try:
        getattr(node, _SAVED_PREFIX + slot)
    except RuntimeError as error:
        return _parsed(error)
    except AttributeError:
        return None
    return None


def _reported_first(stale: list[tuple[Any, str]], facts: dict) -> list[tuple[Any, str]]:
    """``stale`` with the node whose saved tensor is the one the error reports (its versions
    and size) first: several saved views of one tensor share its version counter, and the
    one the engine met is not always the first of the graph's order."""
    for index, entry in enumerate(stale):
        found = _slot_facts(*entry)
        if found is not None and all(found[k] == facts[k] for k in ("then", "now", "numel")):
            return [entry] + stale[:index] + stale[index + 1:]
    return stale


def _next_writes(log: Log, stale: list[tuple[Any, str]], first: dict | None) -> list[dict]:
    """The user's lines of the first writes after their save of the other saved tensors of the
    failing graph in the error's state (those the backward would meet next, the first
    ``_NEXT`` in the graph's order), each line once, not ``first``'s (the recorded write's user
    frame): found as the first one is, from the versions each slot's own error gives."""
    seen = {(first["file"], first["line"])} if first else set()
    found = []
    for node, slot in stale[:_NEXT]:
        facts = _slot_facts(node, slot)
        write = _first_write(log, facts, node._sequence_nr()) if facts else None
        user = log.sites.resolve(write[5])["user"] if write is not None else None
        if user and (user["file"], user["line"]) not in seen:
            seen.add((user["file"], user["line"]))
            found.append(user)
    return found


def _later_writes(log: Log, first: tuple, facts: dict) -> list[dict]:
    """The user's lines, each once, of the writes that took the storage ``first`` wrote on, from
    the version it left to the version the error reports (outside a backward), not ``first``'s
    line: each changed the saved tensor again (``widths /= c`` then ``heights /= c``, two views
    of one saved output)."""
    user = log.sites.resolve(first[5])["user"]
    seen, found = {(user["file"], user["line"])} if user else set(), []
    for write in log.writes:
        if write[1] == first[1] and write[0] >= first[0] and write is not first and \
                facts["then"] + 1 < write[2] <= facts["now"] and not write[9]:
            user = log.sites.resolve(write[5])["user"]
            if user and (user["file"], user["line"]) not in seen:
                seen.add((user["file"], user["line"]))
                found.append(user)
    return found


def _numel(shape: tuple) -> int:
    total = 1
    for size in shape:
        total *= size
    return total


def _named(frame: Any) -> Iterator[tuple[str, str, Any, dict]]:
    """(name, scope, value, where) for the user's names: each user frame's locals, the globals
    of the user's modules, the attributes of the objects these hold and the entries of
    containers, one level deep; ``where``: the scope's ``file``, ``qualname`` and the line it
    runs at now (``now``, None for a module's globals), and for an attribute the class of the
    object it is an attribute of (``owner``)."""
    frames, modules = [], {}
    while frame is not None:
        if is_users(frame.f_code.co_filename):
            frames.append(frame)
            modules.setdefault(frame.f_globals.get("__name__"), frame.f_globals)
        frame = frame.f_back
    spaces = [(f"{f.f_code.co_name}()", dict(f.f_locals),
               {"file": f.f_code.co_filename, "now": f.f_lineno,
                "qualname": getattr(f.f_code, "co_qualname", f.f_code.co_name)}) for f in frames]
    spaces += [(f"module {name}", dict(space),
                {"file": space.get("__file__") or "", "now": None, "qualname": "<module>"})
               for name, space in modules.items()]
    for scope, space, where in spaces:
        for name, value in space.items():
            if name.startswith("__") or isinstance(value, type(sys)):
                continue
            yield name, scope, value, where
            for inner, item in _inside(value):
                yield name + inner, scope, item, dict(where, owner=_owner(value)) \
                    if inner.startswith(".") else dict(where, entries=len(value)) \
                    if isinstance(value, dict) else where  # a dict's entry: of how many


def _owner(value: Any) -> str:
    return type(value).__qualname__


def _keyed(key: Any) -> str:
    """A dict's entry as the source reads it: ``["text"]``, ``[3]``."""
    return f'["{key}"]' if isinstance(key, str) else f"[{key!r}]"


def _inside(value: Any) -> Iterator[tuple[str, Any]]:
    if isinstance(value, (list, tuple)):
        for index, item in enumerate(value[:_ITEMS]):
            yield f"[{index}]", item
    elif isinstance(value, dict):
        for index, (key, item) in enumerate(value.items()):
            if index >= _ITEMS:
                break
            yield _keyed(key), item
    elif isinstance(value, torch.nn.Module):
        for key, item in list(value._parameters.items()) + list(value._buffers.items()) + \
                list(value._modules.items()):
            yield f".{key}", item
        for key, item in vars(value).items():  # (private ones too, ``self._cache``; not
            # the attributes every module has, its dicts of parameters and hooks)
            if key not in _MODULE_OWN and (
                    isinstance(item, (torch.Tensor, list, tuple, dict)) or made_state(item) or
                    _program_object(item)):
                yield f".{key}", item
    elif own_attributes(value) and not isinstance(value, torch.Tensor) and (
            _program_object(value)
            or isinstance(value, torch.autograd.function.BackwardCFunction)):  # a Function's ctx
        for key, item in list(own_attributes(value).items())[:_ITEMS]:
            yield f".{key}", item


def _program_object(value: Any) -> bool:
    """Whether ``value`` is an object of a class of the program's own (not a module, a
    tensor or a class), with attributes of its own."""
    return not isinstance(value, (torch.Tensor, torch.nn.Module, type)) and \
        bool(own_attributes(value)) and \
        is_users(getattr(sys.modules.get(type(value).__module__), "__file__", "") or "")


def _tensors(value: Any) -> Iterator[tuple[str, torch.Tensor, str]]:
    """The tensors a value holds: itself, the entries of a list or a dict, or a module's tensors
    kept as plain attributes, as entries of its lists and dicts (``self.cache["ade"]``) and its
    buffers (an inference cache: ``self.attention.cache_k``), each with the class it is an
    attribute of ("" for none)."""
    if isinstance(value, torch.Tensor):
        yield "", value, ""
    elif isinstance(value, (list, tuple)):
        for index, item in enumerate(value[:_ITEMS]):
            if isinstance(item, torch.Tensor):
                yield f"[{index}]", item, ""
    elif isinstance(value, dict):  # (an object's dict of features: ``frame.feats["text"]``)
        for index, (key, item) in enumerate(value.items()):
            if index >= _ITEMS:
                break
            if isinstance(item, torch.Tensor):
                yield _keyed(key), item, ""
    elif _program_object(value):  # a module's helper object (a cache of predictions)
        for key, item in list(own_attributes(value).items())[:_ITEMS]:
            if isinstance(item, torch.Tensor):
                yield f".{key}", item, _owner(value)
    elif made_state(value):  # a distribution: its cached ``logits`` are held through it
        for item in list(own_attributes(value).values())[:_ITEMS]:
            if isinstance(item, torch.Tensor):
                yield "", item, ""
    elif isinstance(value, torch.nn.Module):
        kept = list(value._buffers.items()) + [(k, v) for k, v in vars(value).items()
                                               if k not in _MODULE_OWN]
        for key, item in kept[:_ITEMS]:
            if isinstance(item, torch.Tensor):
                yield f".{key}", item, _owner(value)
            elif isinstance(item, (list, tuple, dict)):  # a submodule's cache of features
                for entry, tensor, _ in _tensors(item):
                    yield f".{key}{entry}", tensor, _owner(value)


def _holders(log: Log, frame: Any, node: Any, written: int | None,
             now: int, others: frozenset = frozenset()) -> tuple[list, list, list]:
    """The user's names whose graph reaches ``node``, those that hold the written storage (at
    the version the error reports), and those whose graph reaches none of ``node`` but one of
    ``others`` (the failing graph's other freed nodes)."""
    floor, memo = (node._sequence_nr() if node is not None else 0), {}
    low = min([floor] + [n._sequence_nr() for n in others])
    holders, writers, carrying, seen, said = [], [], [], 0, set()
    for name, scope, value, where in _named(frame):
        seen += 1
        if seen > _NAMES or (scope, name, id(value)) in said:
            if seen > _NAMES:
                break
            continue
        said.add((scope, name, id(value)))  # a caller's name too: handed in under the same one
        for suffix, tensor, owner in _tensors(value):
            if (name + suffix, scope, id(tensor)) in said:
                continue
            said.add((name + suffix, scope, id(tensor)))
            start = tensor.grad_fn
            place = dict(where, owner=owner) if owner else where
            if suffix.startswith("["):  # an entry: of how many
                place = dict(place, entries=len(value))
            if start is not None and node is not None and \
                    _reaches_memo(start, node, floor, memo):
                holders.append(_holder(log, name + suffix, scope, place, start))
            elif start is not None and others and \
                    _reaches_memo(start, others, low, memo, "others"):
                carrying.append(_holder(log, name + suffix, scope, place, start))
            if written is not None and not owner and storage_key(tensor) == written and \
                    getattr(tensor, "_version", None) == now:
                writers.append({"name": name + suffix, "scope": scope})
    return holders, writers, carrying


def _holder(log: Log, name: str, scope: str, where: dict, start: Any) -> dict:
    built = _built(log, start._sequence_nr()) or {}
    return {"name": name, "scope": scope, "file": where["file"], "qualname": where["qualname"],
            "now": where["now"], "owner": where.get("owner", ""), "node": node_name(start),
            "number": start._sequence_nr(), "entries": where.get("entries"),
            "built": built.get("user"), "steps": built.get("steps"),
            "backward_calls": built.get("backward_calls"),
            "callers": built.get("chain", [])}


def _reaches_memo(start: Any, target: Any, floor: int, memo: dict, key: str = "") -> bool:
    if (start, key) not in memo:
        memo[start, key] = _reaches([start], target, floor)
    return memo[start, key]


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


def _parameter_path(frame: Any, storage: Any) -> str:
    """The path of the parameter whose storage is ``storage`` from a name of the user's that
    holds its module (``backbone.2.weight``), or ""."""
    for name, _, value, _ in _named(frame):
        if isinstance(value, torch.nn.Module):
            for path, parameter in value.named_parameters():
                if storage_key(parameter) == storage:
                    return f"{name}.{path}"
    return ""
