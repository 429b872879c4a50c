"""A second loss of the same forward, as the replay recorded it.

The failing call's loss was built before the backward call that freed its graph ran: two losses
made from one forward and backpropagated in turn (one in each of two methods, or one helper
that calls backward, run once per loss). The source's reading then tends to name the failing
loss itself, which the freeing call never went through. What the recording shows instead:

* :func:`is_second_loss`: that order (the failing call's root built when fewer backward calls
  had run than the number of the call that freed the graph; that call not run by another
  backward, as a custom Function's backward runs one, not started from the same roots, and
  not gone through the failing root: a loss scaled and backwarded, then backwarded again
  itself, is the same loss twice);
* :func:`joining_carrier`: the name through which the first loss took in the shared part: of
  the names that hold a graph reaching the freed node and that the freeing call went through,
  the one whose node was made first (nearest the shared part), named first when the source's
  first carrier is a name that call did not go through, handed to another function that
  backwards it (a loss backwarded where it is made is named itself, the second of two backward
  calls); given at the statement that reads it into the first loss's computation;
* :func:`retained_first`: the freeing call keeps the graph (``retain_graph=True``), so the
  second loss goes through it too: each loss's gradients, in turn, as the program meant them;
* :func:`detached_at_join`: the first loss's computation reads the joining name detached, so
  its backward stops there and the second loss alone trains what made it.

Both edits are candidates, run before one is called the fix (see :mod:`autograd_lens.run.verify`).
"""

from __future__ import annotations

import ast
import dataclasses
from typing import Any

from ..source.edits import Plan
from ..source.source_file import Source
from .held_names import function_of, recorded_names
from ..fixes.rules import Fix, one_fix
from ..fixes.rules_in_turn import with_retained_graph


def is_second_loss(evidence: dict | None) -> bool:
    """Whether the recording shows the failing loss built before the call that freed it."""
    node, root = (evidence or {}).get("node") or {}, (evidence or {}).get("root") or {}
    freed, built = node.get("freed_by"), root.get("built")
    return bool(freed and built) and not freed.get("nested") and root.get("went") is False \
        and freed.get("same_roots") is False and built["backward_calls"] < freed["number"]


def _joining(evidence: dict) -> dict | None:
    gone = [h for h in evidence.get("holders", []) if h.get("went") is True and h.get("file")
            and "." not in h["name"] and "[" not in h["name"]]
    return min(gone, key=lambda h: h["number"]) if gone else None


def joining_carrier(carriers: list, evidence: dict, got: Any) -> list:
    """``carriers`` with the joining name first (see the module's docstring), made by ``got``
    (:func:`autograd_lens.explain.carrier_origin.got`) at the statement that made its node."""
    from .carrier import Carrier

    holders = recorded_names(evidence)
    if not is_second_loss(evidence) or not carriers:
        return carriers
    top, at = carriers[0], evidence.get("at") or {}
    holder, freed = _joining(evidence), evidence["node"]["freed_by"]
    if any(h.get("went") is True and h["name"] == top.name for h in holders):
        return carriers  # the source's first carrier is one the freeing call went through
    if holder is None:  # no name holds the shared part now (a local of a function that returned)
        return _made_as(carriers, evidence, freed)
    if top.got is not None and (top.got["file"], top.got.get("qualname", top.got["function"])) \
            == (at.get("file"), at.get("qualname", at.get("function"))):
        return carriers  # the failing loss backwarded where it is made: named itself
    carrier = got(Carrier(
        name=holder["name"], file=holder["file"], line=holder["now"],
        function=function_of(holder), kind="old", why=(f"holds the shared part of the graph: the loss of backward call "
                         f"{freed['number']} was computed from it, and that call went through "
                         "it before the failing loss (computed earlier, from the same forward) "
                         "was backpropagated")), holders)
    read = _join_line(carrier, holders)
    if read is not None:
        carrier = dataclasses.replace(carrier, line=read)
    return [carrier] + [c for c in carriers if c.name != carrier.name]


def _made_as(carriers: list, evidence: dict, freed: dict) -> list:
    """``carriers`` with the name the freed node's output was given where the recording shows
    it made first: the innermost statement of the program's, in the chain that made the node,
    that assigns one plain name (``value = self.critic(obs, actions)`` around the layer that
    made it), when the source's first carrier is the failing loss itself (its backward reads
    it: ``losses["critic"].backward()``); else ``carriers``."""
    from ..source.backward_calls import backward_subject
    from .carrier import Carrier
    from ..source.source_file import targets
    from ..fixes.rules import BACKWARD

    built, at = (evidence.get("node") or {}).get("built") or {}, evidence.get("at") or {}
    source = Source.read(at.get("file", "")) if at else None
    failing = source.statement_at(at["line"]) if source and at.get("line") else None
    subjects = [backward_subject(c) for holder, c in source.calls(
        source.scope_at(failing.lineno), BACKWARD) if holder is failing] if failing else []
    root = carriers[0].name.split("[")[0].split(".")[0]  # (a loss in a dict: its dict)
    if not any(s is not None and _reads(s, root) for s in subjects):
        return carriers
    for frame in [built.get("user"), *built.get("chain", [])]:
        made = Source.read(frame["file"]) if frame else None
        statement = made.statement_at(frame["line"]) if made else None
        names = targets(statement) if isinstance(statement, ast.Assign) else []
        if len(names) == 1 and "." not in names[0] and "[" not in names[0]:
            carrier = Carrier(
                name=names[0], file=frame["file"], line=frame["line"],
                function=frame["function"], kind="old", why=(
                    f"was the shared part of the graph, made by this statement (recorded in a "
                    f"replay): the loss of backward call {freed['number']} was computed from it, "
                    "and that call went through it before the failing loss (computed earlier, "
                    "from the same forward) was backpropagated"))
            return [carrier] + carriers
    return carriers


def _join_line(carrier: Any, holders: list[dict]) -> int | None:
    """The first statement after the one that made the carrier's node, in the same function,
    that reads its name into a name the freeing call went through (recorded): where the first
    loss's computation takes it in."""
    if carrier.got is None or carrier.got["file"] != carrier.file:
        return None
    source = Source.read(carrier.file)
    made = source.statement_at(carrier.got["line"]) if source else None
    if made is None:
        return None
    scope = source.scope_at(made.lineno)
    gone = {h["name"] for h in holders if h.get("went") is True and
            h["scope"] == f"{carrier.function}()"}
    for statement in source.statements(scope):  # simple statements: the innermost that reads
        if statement.lineno > made.end_lineno and not hasattr(statement, "body") and \
                _reads(statement, carrier.name) and \
                any(isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store) and n.id in gone
                    for n in ast.walk(statement)):
            return statement.lineno
    return None


def _reads(statement: ast.stmt, name: str) -> bool:
    return any(isinstance(n, ast.Name) and n.id == name and isinstance(n.ctx, ast.Load)
               for n in ast.walk(statement))


def retained_first(evidence: dict | None) -> list[Fix]:
    """The freeing call's statement with ``retain_graph=True`` (see the module's docstring);
    not when the recording shows a step after it writing a weight the second loss reaches."""
    if not is_second_loss(evidence) or evidence["root"].get("stepped") is not False:
        return []
    site = evidence["node"]["freed_by"].get("user")
    source = Source.read(site["file"]) if site else None
    statement = source.statement_at(site["line"]) if source else None
    call = statement.value if isinstance(statement, ast.Expr) else None
    if not isinstance(call, ast.Call) or not isinstance(call.func, ast.Attribute) or \
            call.func.attr != "backward" or call.args or \
            any(k.arg in ("retain_graph", "create_graph") for k in call.keywords):
        return []
    stepped = any(s["after_backward_calls"] >= evidence["node"]["freed_by"]["number"]
                  for s in evidence.get("steps", []))
    return one_fix(
        f"the backward at line {statement.lineno} keeps the graph, so the later loss, computed "
        "from the same forward before it ran (recorded), goes through the shared part too: each "
        "loss's gradients, in turn" + (
            "; the optimizer step between them changed no weight the later loss reaches "
            "(recorded)" if stepped else ""), with_retained_graph(source, call))


def detached_at_join(carriers: list, evidence: dict | None) -> list[Fix]:
    """The joining name read detached where the first loss's computation takes it in."""
    if not is_second_loss(evidence) or not carriers or carriers[0].got is None:
        return []
    carrier = carriers[0]
    line = _join_line(carrier, recorded_names(evidence))
    source = Source.read(carrier.file)
    statement = source.statement_at(line) if source and line else None
    if statement is None:
        return []
    plan = Plan(source)
    for node in ast.walk(statement):
        if isinstance(node, ast.Name) and node.id == carrier.name and \
                isinstance(node.ctx, ast.Load):
            plan.replace_span(node, f"{carrier.name}.detach()")
    return one_fix(f"`{carrier.name}` is read detached at line {line}: the first loss's "
                   "backward stops there, and the later loss alone trains what made it", plan)
