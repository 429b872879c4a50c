"""A container whose entries hold spent graphs like the old part of this one, when no name holds
that old part itself.

A program that keeps tensors with their graphs in a dict or list (a per-sample loss stored by
index, read back in a later epoch) may, by the time the backward fails, have replaced the very
entries that brought the old graph in: no name reaches the old nodes any more. Its other entries
still show what the container keeps: tensors made by the same operation as a node where the graphs
meet, whose graphs an earlier backward already went through (their saved tensors are freed). Such a
container is named, with that reason, rather than saying that no variable holds an old graph.
"""

from __future__ import annotations

from typing import Any

from ..source.candidates import Candidate
from ..lens.graph import breadth_first, node_name, stale_slots

_NEAR = 64  # nodes looked at below an entry for a freed saved tensor


def spent_kin(unrelated: list[Candidate], frontier: list[Any]) -> list[Candidate]:
    """The entries of containers among ``unrelated`` (candidates whose graph reaches no old node)
    made by the same operation as a node of ``frontier``, with a spent graph: one per
    container, in the order found."""
    kinds = {node_name(n) for n in frontier}
    found, containers = [], set()
    for candidate in sorted(unrelated, key=lambda c: c.path.count(".")):  # nearest name first
        if candidate.origin != "list" or id(candidate.container) in containers:
            continue
        node = candidate.tensor.grad_fn
        if node_name(node) in kinds and _spent(node):
            containers.add(id(candidate.container))
            found.append(candidate)
    return found


def _spent(node: Any) -> bool:
    """Whether a backward already went through ``node``'s graph: a node near it had its saved
    tensors freed."""
    for near in breadth_first([node])[:_NEAR]:
        try:
            if any(slot.state == "freed" for slot in stale_slots(near)[1]):
                return True
        except RuntimeError:
            continue
    return False


def spent_why(frontier: list[Any], graph: str) -> str:
    """The reason such a container is named."""
    kinds = ", ".join(sorted({node_name(n) for n in frontier}))
    return (f"keeps tensors with their graphs, which earlier backward calls already went "
            f"through, made by the same operation ({kinds}) as the old part of this graph; no "
            f"name holds that part now (its entries were likely replaced since), so this is "
            f"where {graph} most likely came from")
