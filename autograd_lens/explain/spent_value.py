"""A value backpropagated where it is read, kept, and backpropagated again the next time: it is
given None right after its backward.

A program that computes an extra loss only every few steps (a lazy regulariser) and keeps it on an
object or in a name, to be backpropagated where it is read (``if self.reg is not None:
self.reg.backward()``), backpropagates it again in the steps that do not compute it anew: the
recording shows the failing backward statement is the one that freed the graph, an earlier pass
of it. Where the program already gives that name None (its "nothing to add" value), it gets None
right after the backward, so each value is backpropagated once.

A memo works the same way from the other side: an attribute an object computes only when it is
None (``if self._cache is None: self._cache = f(weights)``) keeps the first computation's graph
for every later read, and a loop that backpropagates through it again fails. Where the recording
shows the failing backward statement freed it in an earlier pass and lists the memo under a name
of the failing call's own function (``model.strategy._cache``), that name is given None right
after the backward: the next read computes it again, with a graph of its own, the numbers and
gradients as without a memo. Only a candidate: run before it is called the fix.
"""

from __future__ import annotations

import ast

from ..source.backward_calls import backward_subject
from .held_names import held_in, recorded_names
from ..source.edits import Plan
from ..source.source_file import Source, is_none_test, targets
from ..fixes.rules import BACKWARD, Fix, one_fix


def none_after_backward(carrier: object, freed: dict | None,
                        failed: tuple[str, int] | None) -> list[Fix]:
    """The carrier given None right after the backward statement that freed its graph and then
    failed on it, where that statement's loss reads it and the program gives it None elsewhere."""
    site = (freed or {}).get("user")
    name = getattr(carrier, "shown", "") or getattr(carrier, "name", "")
    if not site or failed is None or (site["file"], site["line"]) != tuple(failed) or \
            "[" in name:
        return []
    source = Source.read(site["file"])
    statement = source.statement_at(site["line"]) if source else None
    if statement is None or not isinstance(statement, ast.Expr) or \
            statement.lineno != statement.end_lineno or not source.may_be_none(name):
        return []
    subjects = [backward_subject(call) for holder, call in source.calls(
        source.scope_at(statement.lineno), BACKWARD) if holder is statement]
    if not any(subject is not None and source.reads(subject, name) for subject in subjects):
        return []
    plan = Plan(source).after(statement.lineno, f"{source.indent(statement.lineno)}{name} = None")
    return one_fix(f"`{name}` is given None right after its backward, as the program gives it "
                   "when there is nothing to add: each value it holds is backpropagated once",
                   plan)


def memo_cleared_after_backward(carrier: object, evidence: dict | None, freed: dict | None,
                                failed: tuple[str, int] | None) -> list[Fix]:
    """A memo attribute (``self.X``, computed only under ``if self.X is None:``) given None
    right after the backward statement that freed its graph in an earlier pass and then failed,
    under the name the recording lists for it in the failing call's function."""
    site = (freed or {}).get("user")
    name = getattr(carrier, "name", "")
    if not site or failed is None or (site["file"], site["line"]) != tuple(failed) or \
            not name.startswith("self.") or "[" in name:
        return []
    source, memo = Source.read(getattr(carrier, "file", "")), None
    for node in ast.walk(source.tree) if source else ():
        if isinstance(node, ast.If) and is_none_test(node.test, name) and \
                any(name in targets(s) for s in ast.walk(node)):
            memo = node
    here = {h["name"] for h in held_in(evidence)} | {
        h["name"] for h in recorded_names(evidence) if h.get("now") == failed[1]}
    paths = sorted(p for p in here if p.endswith(name[4:]) and "." in p and "[" not in p)
    target = Source.read(site["file"])
    statement = target.statement_at(site["line"]) if target else None
    if memo is None or len(paths) != 1 or statement is None or \
            not isinstance(statement, ast.Expr) or statement.lineno != statement.end_lineno:
        return []
    plan = Plan(target).after(statement.lineno,
                              f"{target.indent(statement.lineno)}{paths[0]} = None")
    return one_fix(f"`{paths[0]}`, computed only when it is None, is given None right after the "
                   "backward: the next read computes it again, with a graph of its own, as "
                   "without the memo", plan)
