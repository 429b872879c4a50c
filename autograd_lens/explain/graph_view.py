"""The failing backward's graph seen from its frontier (the old nodes this step's graph enters):
which nodes reach an old one, and how far, as the ranking of carriers reads it."""

from __future__ import annotations

from typing import Any

from ..lens.graph import breadth_first, children


class GraphView:
    """This backward's graph seen from its frontier: which nodes reach an old one, how far."""

    def __init__(self, order: list[Any], kids: dict[Any, list[Any]], old: set[Any],
                 roots: list[Any]) -> None:
        self.old, self.kids, self.roots = old, kids, set(roots)
        parents: dict[Any, list[Any]] = {}
        for node in order:
            for child in kids.get(node, ()):
                parents.setdefault(child, []).append(node)
        self.frontier = [r for r in roots if r in old]
        for node in order:
            if node not in old:
                self.frontier += [c for c in kids[node] if c in old and c not in self.frontier]
        self.distance: dict[Any, int] = {node: 0 for node in self.frontier}
        start = object()  # one walk up from every frontier node at once: nearest first

        def up(node: Any) -> list[Any]:
            above = self.frontier if node is start else parents.get(node, ())
            for parent in above:
                self.distance.setdefault(parent, 0 if node is start else self.distance[node] + 1)
            return above

        self.reaching = set(breadth_first([start], follow=up)) - {start}
        self.reaching |= old
        self.known = {node: node in self.reaching for node in order}
        self.budget = 50000

    def reaches(self, start: Any) -> bool:
        """Whether ``start``'s graph reaches an old node (walked for a node outside this graph)."""
        if start in self.known:
            return self.known[start]

        def stop(node: Any) -> bool:  # below a node of this graph the answer is known
            self.budget -= 1
            return node in self.known or self.budget <= 0

        reached = [n for n in breadth_first([start], stop=stop) if n not in self.known]
        value = dict.fromkeys(reached, False)
        changed = True
        while changed:  # a node reaches an old one when one of its children does
            changed = False
            for node in reversed(reached):
                if not value[node] and any(self.known.get(c) or value.get(c) for c in children(node)):
                    value[node] = changed = True
        self.known.update(value)
        return value[start]

    def relation(self, node: Any) -> str | None:
        """"frontier", "old", "fresh", "outside", or None (its graph reaches no old node)."""
        if node in self.distance and self.distance[node] == 0 and node in self.old:
            return "frontier"
        if node in self.old:
            return "old"
        if node in self.known:
            return "fresh" if self.known[node] else None
        return "outside" if self.reaches(node) else None

    def below(self, upper: Any, lower: Any) -> bool:
        """Whether ``lower`` is in the graph of ``upper`` (walking no further than old nodes)."""
        return lower in breadth_first([upper], stop=lambda n: n in self.old or n is lower)
