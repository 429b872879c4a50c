"""Gradients of one output taken in turn by ``autograd.grad`` in a loop (one per input): the
first pass frees the graph the next pass needs.

The recording shows the failing ``autograd.grad`` statement is the call that freed the graph, an
earlier pass of it started from the very same roots. ``autograd.grad`` returns its gradients and
adds nothing into any ``.grad``, so each pass keeping the graph (``retain_graph=True``) gives
every pass the gradient it means; the graph goes when its outputs do. (Not for ``backward()``: a
second pass through one graph would add its gradients into the weights' ``.grad`` again.) Only a
candidate: run before it is called the fix.
"""

from __future__ import annotations

from ..source.source_file import Source
from .rules import GRAD, Fix, one_fix
from .rules_in_turn import with_retained_graph


def grad_retained_in_loop(evidence: dict | None) -> list[Fix]:
    """``retain_graph=True`` added to the failing ``autograd.grad`` call, in a loop, where the
    recording shows an earlier pass of it, from the same roots, freed the graph."""
    freed = ((evidence or {}).get("node") or {}).get("freed_by") or {}
    site, at = freed.get("user") or {}, (evidence or {}).get("at") or {}
    if not site or freed.get("same_roots") is not True or freed.get("nested") or \
            (site.get("file"), site.get("line")) != (at.get("file"), at.get("line")):
        return []
    source = Source.read(site["file"])
    statement = source.statement_at(site["line"]) if source else None
    if statement is None or source.loop_of(statement) is None:
        return []
    calls = [c for s, c in source.calls(source.scope_at(statement.lineno), GRAD)
             if s is statement and not any(k.arg == "retain_graph" for k in c.keywords)]
    if len(calls) != 1:
        return []
    return one_fix("each pass of the loop keeps the graph for the next: autograd.grad adds "
                   "nothing into any .grad, so every pass gets the gradient it means; the graph "
                   "goes when its outputs do", with_retained_graph(source, calls[0]))
