"""The in-place write in the evidence of a failing call: the first write of a saved tensor after
its node saved it, the writes that changed it again, the first writes of the graph's other saved
tensors, and the write of a tensor held by a node out of Python's reach."""

from __future__ import annotations

import bisect
from typing import Any

from ..explain.writes import _parsed
from ..lens.graph import _SAVED_PREFIX
from .record import Log

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
                module_names=list(write[13]),
                module_made=log.sites.resolve(write[14]) if write[14] >= 0 else None)


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
