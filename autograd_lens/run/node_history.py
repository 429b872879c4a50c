"""A node of the failing graph as the replay's recording knows it: where it was made, the backward
call that freed it, and whether a graph reaches it."""

from __future__ import annotations

import bisect
from typing import Any

from ..explain.written_nodes import stale_nodes
from ..lens.graph import children
from .record import Log

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
