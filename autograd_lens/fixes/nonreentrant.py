"""A backward that a reentrant checkpoint ran inside the failing one: the checkpoint made
non-reentrant.

A reentrant checkpoint (``use_reentrant=True``, the default when it is not passed) runs its block
without a graph in the forward and builds the block's graph again in the backward, where it runs a
backward of its own through it. Two such backward calls, one per checkpointed block, that go
through one graph made outside the blocks (features a reference network wrote into both blocks'
memories) each free it for the other: the second fails inside the step's backward; or a block
that reads the previous block's output by a closure, not as an input, runs the previous block's
backward inside its own, and the step's backward then meets it freed. A
non-reentrant checkpoint (``use_reentrant=False``) builds no backward of its own: the step's one
backward goes through the shared graph once. Only a candidate: run before it is called the fix.
"""

from __future__ import annotations

import ast

from ..source.edits import Plan
from ..source.source_file import Source, path_of
from .rules import Fix, one_fix, with_keyword

_CHECKPOINTS = ("checkpoint", "checkpoint_sequential")


def _reentrant_calls(source: Source) -> list[tuple[ast.Call, ast.keyword | None]]:
    """The one-line calls of ``checkpoint`` (or ``checkpoint_sequential``) in ``source`` that run
    reentrant: with ``use_reentrant=True``, or without the keyword (its default), each with that
    keyword (None: not passed)."""
    found = []
    for node in ast.walk(source.tree):
        if not (isinstance(node, ast.Call) and node.lineno == node.end_lineno and
                (path_of(node.func) or "").split(".")[-1] in _CHECKPOINTS):
            continue
        if any(k.arg is None for k in node.keywords):
            continue  # **kwargs: the source does not show what is passed
        keyword = next((k for k in node.keywords if k.arg == "use_reentrant"), None)
        if keyword is None or (isinstance(keyword.value, ast.Constant) and
                               keyword.value.value is True):
            found.append((node, keyword))
    return found


def ran_inside(evidence: dict | None) -> bool:
    """Whether the recording shows the graph freed by a backward that ran inside the failing
    call's outermost one: the failing call is run inside another (``nested``), or the call that
    freed it is, and no call returned after it (its outer call is still running: the failing
    one). Not a graph kept from an earlier step, which any backward frees."""
    evidence = evidence or {}
    freed, outer = (evidence.get("node") or {}).get("freed_by"), evidence.get("backwards") or []
    return bool((evidence.get("nested") or freed and freed.get("nested")) and freed and outer and
                freed["number"] >= outer[-1]["number"])


def not_reentrant(evidence: dict | None, files: list[str]) -> list[Fix]:
    """Where the recording shows the graph freed by a backward run inside the failing call's
    outermost one (see :func:`ran_inside`): every reentrant checkpoint call of ``files`` made
    with ``use_reentrant=False``."""
    if not ran_inside(evidence):
        return []
    fixes: list[Fix] = []
    for file in dict.fromkeys(files):
        source = Source.read(file)
        calls = _reentrant_calls(source) if source is not None else []
        if not calls:
            continue
        plan = Plan(source)
        for call, keyword in calls:
            if keyword is not None:
                plan.replace_span(keyword.value, "False")
            else:
                with_keyword(plan, source, call, "use_reentrant", "False")
        fixes += one_fix("the checkpoint runs non-reentrant: it builds no backward of its own "
                         "inside the step's, so the step's one backward goes once through the "
                         "graph its blocks share", plan)
    return fixes
