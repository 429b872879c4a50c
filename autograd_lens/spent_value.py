"""A value backpropagated where it is read, kept, and backpropagated again the next time: it is
given None right after its backward.

A program that computes an extra loss only every few steps (a lazy regulariser) and keeps it on an
object or in a name, to be backpropagated where it is read (``if self.reg is not None:
self.reg.backward()``), backpropagates it again in the steps that do not compute it anew: the
recording shows the failing backward statement is the one that freed the graph, an earlier pass
of it. Where the program already gives that name None (its "nothing to add" value), it gets None
right after the backward, so each value is backpropagated once. Only a candidate: run before it
is called the fix.
"""

from __future__ import annotations

import ast

from .backward_calls import backward_subject
from .edits import Plan, Source
from .rules import BACKWARD, Fix, one_fix


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
