"""Candidate edits for the freed-graph error where the recording shows a state or a store holding
the freed graph: a memo stored detached, a state detached where its object keeps it or where
the training loop holds the object, a list cleared right after the backward that freed its
entries, the value just appended read in place of an entry, names read detached where another
loss's backward went through them (see :mod:`autograd_lens.explain.recorded_edits`)."""

from __future__ import annotations

import ast
import dataclasses
from typing import Any

from ..source.edits import Plan
from ..source.source_file import Source, path_of
from ..fixes.rules import Fix, detach_lines, one_fix
from .held_names import held_as, held_in, recorded_names


def memo_stored_detached(top: Any, carriers: list, failed: tuple[str, int] | None) \
        -> list[Fix]:
    """A memo (``if self._cache is None:``) stored without its graph where the recording shows
    it filled, with every other carrier filled there: for one computed from a value made once,
    which giving it None after each backward (tried first) does not make again."""
    from ..fixes.rules import Case
    from ..fixes.kept_values import _detached_where_made
    from ..fixes.outside_loop import _memo

    if top.origin != "attribute" or not top.got or not _memo(top):
        return []
    return _detached_where_made(Case(tuple(c for c in carriers if not c.held), failed))


def state_detached_where_kept(carrier: Any, failed: tuple[str, int] | None) -> list[Fix]:
    """An attribute read before it is assigned, which the recording shows a method of its
    object made (``self.hidden = self.lstm(x, self.hidden)``): detached there, before that
    method reads it, so every call of it, wherever the step makes it, starts from a constant."""
    from ..fixes.rules import Case
    from ..fixes.carried_state import detach_state

    got = carrier.got
    if not got or not carrier.shown.startswith("self.") or carrier.entry != "read_first":
        return []
    inside = dataclasses.replace(carrier, name=carrier.shown, file=got["file"],
                                 line=got["line"], function=got["function"], shown="")
    return detach_state(Case((inside,), failed))


def state_detached_by_the_loop(carrier: Any, evidence: dict | None,
                               failed: tuple[str, int] | None) -> list[Fix]:
    """An attribute read before it is assigned (``self.X``), which the recording shows held, at
    the failure, by a name of the failing call's frame (``g.X``, ``g`` an object the training
    loop hands to the methods that read and assign it, maybe several times a step): detached
    there, in the loop of the failing call, before the first statement of the loop that reads
    that name, so the step starts from a constant and every call of the step keeps its graph."""
    if not carrier.name.startswith("self.") or carrier.entry not in ("read_first", "kept") or \
            not failed or _of_a_module(carrier):
        return []
    source = Source.read(failed[0])
    statement = source.statement_at(failed[1]) if source else None
    loop = source.loop_of(statement) if statement is not None else None
    if loop is None:
        return []
    here = [h["name"] for h in held_in(evidence) if held_as(carrier.name, h["name"])]
    simple = [s for s in source.statements(loop) if not hasattr(s, "body")]
    for name in here:
        root = name.split(".")[0]
        if not root.isidentifier() or name.count(".") != carrier.name.count("."):
            continue
        first = next((s for s in simple if source.reads(s, root)), None)
        if first is None or first.lineno > statement.lineno or \
                any(s.lineno <= first.lineno for s in source.stores(loop, root)):
            continue  # made in the loop before it is read: not the object the step hands on
        lines = detach_lines(source, name, carrier.form, source.indent(first.lineno))
        if lines:
            return one_fix("the state kept on the object comes into each step without its "
                           "graph (truncated backpropagation through time); every call in "
                           "the step keeps its own", Plan(source).before(first.lineno, *lines))
    return []


def _of_a_module(carrier: Any) -> bool:
    """Whether the class whose method holds the carrier's line derives from a module (its
    state has rules of its own: detached where the method stores it, or a learned start); True
    too when no class of the file holds it (not an object's state the loop hands on)."""
    source = Source.read(carrier.file)
    classes = [n for n in ast.walk(source.tree) if isinstance(n, ast.ClassDef) and
               n.lineno <= carrier.line <= n.end_lineno] if source else []
    inner = max(classes, key=lambda n: n.lineno) if classes else None
    return inner is None or any((path_of(b) or "").split(".")[-1] == "Module"
                                for b in inner.bases)


def _clears(node: ast.AST, last: str) -> bool:
    """Whether ``node`` clears a list named ``last`` (an attribute's last part or a name):
    ``X.last.clear()``, ``del X.last[:]``, ``X.last = []``, ``X.last[:] = []``."""
    def named(target: ast.AST) -> bool:
        return (isinstance(target, ast.Attribute) and target.attr == last) or \
            (isinstance(target, ast.Name) and target.id == last)

    if isinstance(node, ast.Expr) and isinstance(node.value, ast.Call) and \
            isinstance(node.value.func, ast.Attribute) and node.value.func.attr == "clear":
        return named(node.value.func.value)
    if isinstance(node, ast.Delete):
        return any(isinstance(t, ast.Subscript) and named(t.value) for t in node.targets)
    if isinstance(node, ast.Assign) and isinstance(node.value, ast.List) and not node.value.elts:
        return any(named(t) or (isinstance(t, ast.Subscript) and named(t.value))
                   for t in node.targets)
    return False


def _steps_beside(source: Source, statement: ast.stmt) -> bool:
    """Whether the block that holds ``statement`` also steps an optimizer (``opt.step()``):
    the list is emptied on the optimizer's steps (gradient accumulation), not as a window the
    program keeps over several updates on purpose."""
    return any(isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) and
               n.func.attr == "step" for s in source.block_of(statement) for n in ast.walk(s))


def clear_after_backward(carrier: Any, freed: dict | None) -> list[Fix]:
    """See :mod:`autograd_lens.explain.recorded_edits`: a statement after the recorded freeing backward, in its loop
    and under an ``if`` there, that clears the carrier's list, itself or through a method of
    the file whose body clears ``self.<list>``."""
    site = (freed or {}).get("user")
    root = carrier.shown if carrier.shown and carrier.name.startswith(carrier.shown + "[") \
        else ""
    if not site or not root:
        return []
    last = root.rsplit(".", 1)[-1]
    source = Source.read(site["file"])
    statement = source.statement_at(site["line"]) if source else None
    loop = source.loop_of(statement) if statement is not None else None
    if loop is None:
        return []
    methods = {f.name for f in ast.walk(source.tree) if isinstance(f, ast.FunctionDef) and
               f.args.args and f.args.args[0].arg == "self" and
               any(_clears(n, last) for n in ast.walk(f))}
    later = [s for s in source.statements(source.scope_at(statement.lineno))
             if s.lineno > statement.end_lineno and s.end_lineno <= loop.end_lineno and
             s.lineno == s.end_lineno and source.loop_of(s) is loop and
             (_clears(s, last) or (isinstance(s, ast.Expr) and isinstance(s.value, ast.Call) and
                                   isinstance(s.value.func, ast.Attribute) and
                                   s.value.func.attr in methods and not s.value.args))]
    block = source.block_of(statement)
    later = [s for s in later if not any(x is s for x in block) and _steps_beside(source, s)]
    if len(later) != 1:
        return []
    plan = Plan(source).after(statement.end_lineno, source.indent(statement.lineno) +
                              source.segment(later[0]))
    return one_fix(f"`{root}` is cleared right after each backward through its entries (as "
                   f"line {later[0].lineno} clears it, which runs only under a condition), so "
                   "the next pass fills it with entries of its own graph", plan)


def appended_value_read(carrier: Any) -> list[Fix]:
    """See :mod:`autograd_lens.explain.recorded_edits` (a carrier kept by an append: its ``kept`` statement)."""
    kept, root = carrier.kept, carrier.shown
    if not kept or not root or not carrier.name.startswith(root + "[") or \
            kept["file"] != carrier.file:
        return []
    source = Source.read(carrier.file)
    putting = source.statement_at(kept["line"]) if source else None
    enters = source.statement_at(carrier.line) if source else None
    if putting is None or enters is None or putting.lineno >= enters.lineno or \
            source.loop_of(putting) is None or \
            source.loop_of(putting) is not source.loop_of(enters):
        return []
    appended = [a.id for n in ast.walk(putting) if isinstance(n, ast.Call) and
                isinstance(n.func, ast.Attribute) and n.func.attr == "append" and
                path_of(n.func.value) == root for a in n.args if isinstance(a, ast.Name)]
    reads = [n for n in ast.walk(enters) if isinstance(n, ast.Subscript) and
             isinstance(n.ctx, ast.Load) and path_of(n.value) == root and
             not isinstance(n.slice, ast.Slice)]
    if len(appended) != 1 or not reads or any(r.lineno != r.end_lineno for r in reads):
        return []
    name = appended[0]
    scope = source.scope_at(enters.lineno)
    if any(putting.lineno < s.lineno < enters.lineno for s in source.stores(scope, name)):
        return []
    plan = Plan(source)
    for read in reads:
        plan.replace_span(read, name)
    return one_fix(f"line {enters.lineno} reads `{name}`, the value appended to `{root}` in "
                   "this pass, with its own graph: the list keeps every earlier pass's entries, "
                   "and the index read one whose graph an earlier backward went through", plan)


def taken_in_detached(carrier: Any, evidence: dict | None) -> list[Fix]:
    """See :mod:`autograd_lens.explain.recorded_edits`: the innermost statement of the chain that made the
    carrier's node reading such names, each read there as ``name.detach()``."""
    freed = (((evidence or {}).get("node") or {}).get("freed_by") or {}).get("user") or {}
    at = (evidence or {}).get("at") or {}
    if not freed or (freed.get("file"), freed.get("line")) == (at.get("file"), at.get("line")):
        return []  # freed by the failing statement itself, an earlier pass: not another loss's
    carrying = {(h["file"], h["qualname"], h["name"]) for h in (evidence or {}).get("carrying", [])
                if h["name"].isidentifier()}
    holder = next((h for h in recorded_names(evidence) if held_as(carrier.name, h["name"]) and
                   h.get("built")), None)
    if not carrying or holder is None:
        return []
    for frame in [holder["built"], *holder.get("callers", [])]:
        source = Source.read(frame["file"])
        statement = source.statement_at(frame["line"]) if source else None
        if statement is None or hasattr(statement, "body"):
            continue
        reads = [n for n in ast.walk(statement) if isinstance(n, ast.Name) and
                 isinstance(n.ctx, ast.Load) and
                 (frame["file"], frame["qualname"], n.id) in carrying]
        if not reads:
            continue
        plan = Plan(source)
        for read in reads:
            plan.replace_span(read, f"{read.id}.detach()")
        said = ", ".join(dict.fromkeys(f"`{r.id}`" for r in reads))
        return one_fix(f"{said}, holding a graph that an earlier backward went through, is read "
                       f"detached at line {statement.lineno}, where this loss takes it in: the "
                       "earlier backward alone trains what made it", plan)
    return []

