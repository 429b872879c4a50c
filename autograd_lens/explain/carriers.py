"""Ranking the user's variables by how likely each carries a stale graph into the failed backward.

Given this backward's graph and its **old** nodes (those earlier calls already went through),
every tensor the program can reach by name is a candidate (:mod:`autograd_lens.source.candidates`).
Each is scored on two things, and none is dropped by a rule:

* how its graph relates to the **frontier**, the old nodes this step's graph enters: its node
  is a frontier node; it is old, below the frontier; it is in this backward's fresh part,
  nearer to or farther from the frontier; or it lies outside this backward's graph but its
  graph reaches the frontier (a tensor whose graph reaches no old node is no candidate);
* how the source brings it into the step (:mod:`autograd_lens.source.entry`): read before it is
  assigned, kept on an object and read by a method, assigned only before the loop, handed in
  by a caller, or assigned in the step before any read.

Among candidates scored alike, one that another was computed from comes first (the shared
``logits`` before the loss computed from them); among old ones, though, the one the earlier
backward entered through comes first (:mod:`autograd_lens.explain.entered_first`). The carriers are the candidates whose score
shows that the source brings them (or their old graph) in.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from ..lens.history import Call
from ..source.candidates import PARAMETRIZED, Candidate, find_candidates
from .carrier import Carrier
from .entered_first import entered_first
from ..source.entry import Entry, Step, entry_of
from .framework_objects import library_pass, set_aside_copies
from .graph_view import GraphView
from .old_graph import said as _graph
from .spent_entries import spent_kin, spent_why
from .writes import built_in_frame

_RELATION = {"frontier": 8.0, "old": 6.0, "fresh": 4.0, "outside": 2.0}
_HOW = {"read_first": 4.0, "kept": 4.0, "unread": 0.0, "assigned_first": -4.0}
_SHOWN = 5.0  # a carrier's least score: the source brings it (or an old graph) into the step
_CLOSE = 1.0
_SPREAD = 5.5  # carriers are shown down to this far below the first (a loop can have two bugs)
_ROOT = 3.0  # the new loss being backwarded ranks below what it was computed from
_BUILT = 8.0  # the in-place error: a value built before the step, where the step is


def _why(relation: str, entry: Entry, graph: str) -> str:
    if relation in ("frontier", "old"):
        return _why_old(entry, graph)
    if entry.how == "kept":
        return (f"is kept on an object and read here before it is assigned, so the value that "
                f"comes in was made earlier, and its graph reaches {graph}")
    if entry.how == "read_first" and entry.argument:
        return f"is handed in by the caller here, so it brings in {graph}"
    if entry.how == "read_first":
        return f"is read here before it is assigned, so it brings in {graph}"
    return f"is computed in this step from {graph}"


def _why_old(entry: Entry, graph: str) -> str:
    if entry.how == "kept":
        return f"is kept on an object and read here; it holds {graph}"
    if entry.argument:
        return f"is handed in by the caller and holds {graph}"
    if entry.how == "assigned_first":
        return f"is assigned in this step a tensor that holds {graph}; it is used here"
    if entry.how == "read_first":
        if entry.outside_loop:
            return (f"holds {graph}; it is assigned only before the loop, and enters this "
                    f"step's computation here")
        return f"holds {graph}; it enters this step's computation here"
    return f"holds {graph} (the step's source does not show where it is read)"


def _score(relation: str, entry: Entry, distance: int | None) -> float:
    if relation == "outside" and entry.how == "read_first" and entry.update == "assign":
        # Read, then bound again (``out, h = rnn(x, h)``): the value read fed this graph.
        relation = "fresh"
    score = _RELATION[relation] + _HOW[entry.how]
    if entry.how == "assigned_first" and relation in ("frontier", "old"):
        score += 2.0  # an old tensor bound in the step (``loss = step(batch)``): -2 in all
    if relation == "fresh" and distance is not None:
        score += 1.0 / (1 + distance)
    if entry.argument:
        score -= 2.0  # the caller's own variable for the same tensor comes first
    if relation in ("frontier", "old") and entry.outside_loop and entry.how == "read_first":
        score += 1.0
    return score


def _upstream_first(ranked: list[tuple[float, Candidate, Carrier]],
                    view: GraphView) -> list[tuple[float, Candidate, Carrier]]:
    """Among candidates scored alike, the one another was computed from goes first."""
    ranked = list(ranked)
    for i in range(min(len(ranked), 6) - 1):
        for j in range(i + 1, min(len(ranked), 6)):
            upper, lower = ranked[i], ranked[j]
            if upper[0] - lower[0] <= _CLOSE and lower[0] >= _SHOWN and \
                    upper[1].tensor is not lower[1].tensor and \
                    view.below(upper[1].tensor.grad_fn, lower[1].tensor.grad_fn):
                ranked[i], ranked[j] = lower, upper
    return ranked


def rank_candidates(view: GraphView, frames: list[Any], calls: list[Call], inplace: bool = False,
                    write: Any = None, inside: Any = ()) -> list[tuple[float, Candidate, Carrier]]:
    """Every candidate with a graph that reaches an old node of ``view`` (this backward's
    graph), as (score, the candidate, the carrier it would be), best first.

    ``frames``: the user's frames at the moment of failure, innermost first; ``calls``: the
    earlier calls that explain the old nodes, newest first; ``inplace``: the error is the
    in-place one (saved tensors modified since saved); ``write``: what modified them;
    ``inside``: the calls that the failing backward's outermost call ran inside itself."""
    if not view.old or not frames:
        return []
    latest = calls[0] if calls else None
    steps = [Step(frame, latest, index == 0) for index, frame in enumerate(frames)]
    graph = _graph(calls, inplace, write, inside)
    ranked, names, unrelated = [], set(), []
    for candidate in find_candidates(frames, [s.read for s in steps]):
        node = candidate.tensor.grad_fn
        relation = view.relation(node)
        if relation is None:
            unrelated.append(candidate)
            continue
        entry = entry_of(candidate, steps, relation in ("frontier", "old"))
        if (entry.name, entry.line) in names:
            continue
        names.add((entry.name, entry.line))
        kind = "old" if relation in ("frontier", "old") else "carried"
        why = _why(relation, entry, graph) if candidate.form != PARAMETRIZED else (
            f"is computed by a parametrization and kept in its cache (parametrize.cached()); "
            f"it holds {graph}")
        carrier = Carrier(entry.name, entry.file, entry.line, entry.function, why, kind,
                          candidate.origin,
                          entry.update, kind == "old" and entry.outside_loop, candidate.form,
                          entry.how, write)
        score = _score(relation, entry, view.distance.get(node))
        if write is not None and built_in_frame(write, frames[candidate.frame_index], entry.name):
            score += _BUILT  # built before the step, in the function that steps
        if relation == "fresh" and node in view.roots:
            score -= _ROOT  # the loss being backwarded: named only when nothing upstream is
        ranked.append((score, candidate, carrier))
    if write is None and not any(score >= _SHOWN for score, _, _ in ranked):
        ranked += _kept_spent(unrelated, view, steps, graph)
    ranked.sort(key=lambda item: -item[0])
    ranked = _one_per_tensor(set_aside_copies(ranked, view, graph))
    ranked = entered_first(_upstream_first(ranked, view), calls, _SHOWN)
    ranked = _object_first(library_pass(ranked, view, graph, frames, Carrier, _SHOWN))
    return ranked if write is not None else _where_graphs_meet(ranked, view, frames, latest)


def _object_first(ranked: list[tuple[float, Candidate, Carrier]]) -> list:
    """A distribution named as the program holds it (``prior``) comes right before the first of
    its cached tensors (``prior.logits``), with that one's score."""
    ranked = list(ranked)
    for i, (score, found, carrier) in enumerate(ranked):
        if found.form != "object":
            continue
        first = next((j for j, item in enumerate(ranked[:i])
                      if item[1].path.startswith(found.path + ".")), None)
        if first is not None:
            ranked.insert(first, (ranked[first][0], found, carrier))
            del ranked[i + 1]
    return ranked


def _kept_spent(unrelated: list[Candidate], view: GraphView, steps: list[Step],
                graph: str) -> list[tuple[float, Candidate, Carrier]]:
    """When no name holds an old node: a container that keeps spent graphs like the old part
    (see :mod:`autograd_lens.explain.spent_entries`), named where the step reads it."""
    found = []
    for candidate in spent_kin(unrelated, view.frontier)[:1]:
        entry = entry_of(candidate, steps, True)
        name = candidate.path.rsplit("[", 1)[0] if entry.name == candidate.path else entry.name
        found.append((_SHOWN, candidate, Carrier(
            name.rsplit("[", 1)[0] if name.endswith("]") else name, entry.file, entry.line,
            entry.function, spent_why(view.frontier, graph), "old", "list", entry.update,
            False, "dict" if isinstance(candidate.container, dict) else "list", entry.how)))
    return found


def _where_graphs_meet(ranked: list[tuple[float, Candidate, Carrier]], view: GraphView,
                       frames: list[Any], latest: Call | None) -> list:
    """When the earlier call was made in a function that has returned (a forward that took a
    gradient) and no name shows how the old graph comes in: the tensor right above it first."""
    if not ranked or ranked[0][0] >= _SHOWN or latest is None or any(latest.where[:2] == (
            f.f_code.co_filename, f.f_code.co_firstlineno) for f in frames):
        return ranked
    for i, (_, found, carrier) in enumerate(ranked):
        node = found.tensor.grad_fn
        if carrier.kind == "carried" and view.distance.get(node) == 1 and node not in view.roots:
            return [(_SHOWN, found, carrier)] + ranked[:i] + ranked[i + 1:]
    return ranked


def _one_per_tensor(ranked: list[tuple[float, Candidate, Carrier]]) -> list:
    """A tensor named several ways (an alias, a caller's variable) keeps its best name; a
    distribution's cached tensor keeps two: the distribution's (what the program made) and the
    tensor's own (where the graph sits)."""
    seen: set[tuple[int, bool]] = set()
    kept = []
    for item in ranked:
        key = (id(item[1].tensor), item[1].form == "object")
        if key not in seen:
            seen.add(key)
            kept.append(item)
    return kept


def shown(ranked: list[tuple[float, Candidate, Carrier]],
          roots: Any = ()) -> list[tuple[Carrier, Candidate]]:
    """The carriers among ranked candidates, with their candidates: those whose score says the
    source brings them (or their old graph) into the step, and close to the best one; the new
    loss being backwarded (one of ``roots``) only when it comes first."""
    if not ranked:
        return []
    def is_root(found: Candidate, carrier: Carrier) -> bool:
        return carrier.kind != "old" and found.tensor.grad_fn in roots

    best = ranked[0][0] + (_ROOT if is_root(ranked[0][1], ranked[0][2]) else 0.0)
    least = max(_SHOWN, best - _SPREAD)
    return _collapse([(carrier, found) for i, (score, found, carrier) in enumerate(ranked)
                      if (best if i == 0 else score) >= least
                      and (i == 0 or not is_root(found, carrier))])


def shown_in_turn(ranked: list[tuple[float, Candidate, Carrier]],
                  roots: Any = ()) -> list[tuple[Carrier, Candidate]]:
    """For losses of one forward backpropagated in turn, when no name holds the shared part (it
    stays inside the model's forward): the tensors computed in this step over it, best first,
    as :func:`shown` would show them if the best reached the least score."""
    if not ranked:
        return []
    lift = max(0.0, _SHOWN - ranked[0][0])
    return shown([(score + lift, found, carrier) for score, found, carrier in ranked], roots)


def _collapse(pairs: list[tuple[Carrier, Any]]) -> list[tuple[Carrier, Any]]:
    """One carrier per line and container: ``buffer[0]`` stands for ``buffer[0..9]``."""
    groups: dict[tuple[str, str, int], list[tuple[Carrier, Any]]] = {}
    for carrier, node in pairs:
        key = (carrier.name.split("[")[0], carrier.file, carrier.line)
        groups.setdefault(key, []).append((carrier, node))
    result = []
    for (first, node), *more in groups.values():
        if more and "[" in first.name:
            entries = "entry" if len(more) == 1 else "entries"
            first = dataclasses.replace(first, why=f"{first.why} (and {len(more)} more "
                                        f"{entries} of it)")
        result.append((first, node))
    return result
