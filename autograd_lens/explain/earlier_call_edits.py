"""Candidate edits for the freed-graph error that change the earlier backward call the recording
shows freed the graph: left out when it started from the very loss the failing call starts from
(or was an earlier call of the same thin wrapper), or keeping its graph when it started from
another loss of the same forward, or when a custom Function's backward ran it (see
:mod:`autograd_lens.explain.recorded_edits`)."""

from __future__ import annotations

import ast

from ..source.backward_calls import backward_subject
from ..source.edits import Plan
from ..source.source_file import Source, path_of
from ..fixes.rules import BACKWARD, Fix, one_fix, with_keyword
from ..fixes.rules_in_turn import with_retained_graph


def without_earlier_backward(freed: dict | None, failed: tuple[str, int] | None) -> list[Fix]:
    """See :mod:`autograd_lens.explain.recorded_edits`: the recorded freeing call, a ``X.backward()`` statement of
    its own, in another function than the failing call."""
    found = _freeing_statement(freed, failed)
    if found is None or not freed.get("same_roots"):  # another loss's: its gradients would go
        return []
    source, statement, scope = found
    calls = [c for s, c in source.calls(scope, BACKWARD) if s is statement]
    if not calls or calls[-1] is not statement.value or backward_subject(calls[-1]) is None:
        return []
    block = source.block_of(statement)
    plan = Plan(source).replace(statement.lineno, None if len(block) > 1 else
                                source.indent(statement.lineno) + "pass")
    return one_fix(f"the backward at line {statement.lineno} is left out: it started from the "
                   "same loss as the later one (recorded), so the later backward alone gives "
                   "that loss's gradients, once", plan)


def without_earlier_wrapper_call(evidence: dict | None) -> list[Fix]:
    """See :mod:`autograd_lens.explain.recorded_edits` (the wrapper's earlier caller, a call statement of its own on
    one line, left out; nothing when the recording does not show both callers)."""
    found = evidence or {}
    freed = (found.get("node") or {}).get("freed_by") or {}
    site, at = freed.get("user") or {}, found.get("at") or {}
    first, last = (freed.get("chain") or [None])[0], (found.get("callers") or [None])[0]
    if not freed.get("same_roots") or freed.get("nested") or not site or first is None or \
            last is None or (site.get("file"), site.get("line")) != \
            (at.get("file"), at.get("line")) or \
            (first["file"], first["line"]) == (last["file"], last["line"]):
        return []
    wrapper = Source.read(site["file"])
    function = wrapper.scope_at(site["line"]) if wrapper else None
    body = [s for s in getattr(function, "body", []) if not (
        isinstance(s, ast.Expr) and isinstance(s.value, ast.Constant))]  # (a docstring)
    if len(body) != 1 or not body[0].lineno <= site["line"] <= body[0].end_lineno:
        return []  # the wrapper does more than the backward: leaving a call out would lose it
    source = Source.read(first["file"])
    statement = source.statement_at(first["line"]) if source else None
    if statement is None or not isinstance(statement, ast.Expr) or \
            not isinstance(statement.value, ast.Call) or statement.lineno != statement.end_lineno:
        return []
    block = source.block_of(statement)
    plan = Plan(source).replace(statement.lineno, None if len(block) > 1 else
                                source.indent(statement.lineno) + "pass")
    return one_fix(f"the call at line {statement.lineno} is left out: it ran the backward of "
                   f"line {site['line']} from the same loss as the later call at line "
                   f"{last['line']} (recorded), so that later call alone gives that loss's "
                   "gradients, once", plan)


def _freeing_statement(freed: dict | None, failed: tuple[str, int] | None,
                       wrapped: bool = False) -> tuple | None:
    """The recorded freeing call's statement (a call on one line of its own, in another
    function than the failing call: in the same one the pattern's own rules read it, and not
    run by another backward, as a custom Function's backward runs one: that call is the
    Function's own gradient), with its source and scope; else None. ``wrapped``: in the same
    function too, when both are in one loop and the failing call stands above the freeing one
    (the next pass of the loop fails), and the failing statement itself, run again by another
    backward (a custom Function's backward that runs one per block)."""
    site = (freed or {}).get("user")
    again = wrapped and site and failed is not None and freed.get("nested") and \
        (site["file"], site["line"]) == tuple(failed)  # (never a loop's own backward kept:
    # each pass would then go through every earlier pass's graph too)
    if not site or failed is None or (not again and (
            (site["file"], site["line"]) == tuple(failed) or
            freed.get("nested"))):  # part of another backward (a custom Function's own pass)
        return None
    source = Source.read(site["file"])
    statement = source.statement_at(site["line"]) if source else None
    if statement is None or not isinstance(statement, ast.Expr) or \
            statement.lineno != statement.end_lineno:
        return None
    scope = source.scope_at(statement.lineno)
    if site["file"] == failed[0] and source.scope_at(failed[1]) is scope and not again and \
            not (wrapped and failed[1] < statement.lineno and _in_loop(source, statement, failed[1])):
        return None
    return source, statement, scope


def _in_loop(source: Source, statement: ast.stmt, line: int) -> bool:
    """Whether the innermost loop around ``statement`` holds ``line`` too."""
    loop = source.loop_of(statement)
    return loop is not None and loop.lineno < line <= loop.end_lineno


def earlier_backward_retained(freed: dict | None, failed: tuple[str, int] | None,
                              steps: list[dict]) -> list[Fix]:
    """See :mod:`autograd_lens.explain.recorded_edits`: ``steps``, the recorded optimizer steps before the failing
    call (none may have run after the freeing call: the graph kept would hold weights a step
    changed)."""
    found = _freeing_statement(freed, failed, wrapped=True)
    if found is None or freed.get("same_roots") is not False or \
            any(s["after_backward_calls"] >= freed["number"] for s in steps):
        return []
    source, statement, scope = found
    call = statement.value
    if isinstance(call, ast.Call) and backward_subject(call) is not None:
        passed = _passed_on(call, scope)
        if passed:  # backward(retain_graph=retain_graph), the caller's argument
            return _retained_by_caller(freed, source, scope, passed)
    if not isinstance(call, ast.Call) or backward_subject(call) is None or \
            len(call.args) > 1 or any(isinstance(a, ast.Starred) for a in call.args) or \
            any(k.arg in ("retain_graph", "create_graph") for k in call.keywords):
        return []  # (a gradient given first is kept: backward(grad, retain_graph=True))
    if (failed[0], failed[1]) == (freed["user"]["file"], statement.lineno):
        return one_fix(f"the backward at line {statement.lineno} keeps the graph (recorded: "
                       "the run of it that freed the graph started from another output than "
                       "the run that failed, and no optimizer step ran between them), so its "
                       "next run goes through the part they share again",
                       with_retained_graph(source, call))
    if failed[0] == freed["user"]["file"] and source.scope_at(failed[1]) is scope:
        return one_fix(f"the backward at line {statement.lineno} keeps the graph (recorded: "
                       "it started from another loss than the call at line "
                       f"{failed[1]}, and no optimizer step ran between them), so the next "
                       "pass of the loop goes through the part they share again",
                       with_retained_graph(source, call))
    return one_fix(f"the backward at line {statement.lineno} keeps the graph (recorded: it "
                   "started from another loss than the later backward, and no optimizer step "
                   "ran between them), so the later backward goes through it too: each loss's "
                   "gradients, accumulated in turn, as one backward of their sum gives them up "
                   "to round-off", with_retained_graph(source, call))


def _passed_on(call: ast.Call, scope: ast.AST) -> str:
    """The parameter of ``scope`` (a function) that ``call`` passes on as its ``retain_graph``
    (``def backward(self, retain_graph=False): self.loss.backward(retain_graph=retain_graph)``),
    when it is one with a default; else ""."""
    given = next((k.value for k in call.keywords if k.arg == "retain_graph"), None)
    if not isinstance(given, ast.Name) or not isinstance(scope, (ast.FunctionDef,
                                                                 ast.AsyncFunctionDef)):
        return ""
    arguments = scope.args
    defaulted = [a.arg for a in (arguments.posonlyargs + arguments.args)[
        len(arguments.posonlyargs + arguments.args) - len(arguments.defaults):]]
    defaulted += [a.arg for a, d in zip(arguments.kwonlyargs, arguments.kw_defaults) if d]
    return given.id if given.id in defaulted else ""


def _retained_by_caller(freed: dict, source: Source, scope: ast.AST, parameter: str) \
        -> list[Fix]:
    """The recorded caller's statement of the function whose backward freed the graph (the
    first of the freeing call's recorded chain), where it calls that function by name on one
    line, without the parameter: the call gets ``parameter=True``."""
    chain = [f for f in freed.get("chain") or [] if f.get("file") == freed["user"]["file"]]
    statement = source.statement_at(chain[0]["line"]) if chain else None
    calls = [n for n in ast.walk(statement) if isinstance(n, ast.Call) and
             (path_of(n.func) or "").split(".")[-1] == scope.name and
             n.lineno == n.end_lineno] if statement is not None else []
    if len(calls) != 1 or any(k.arg in (parameter, None) for k in calls[0].keywords):
        return []
    plan = with_keyword(Plan(source), source, calls[0], parameter, "True")
    return one_fix(f"the call at line {statement.lineno} passes {parameter}=True to the "
                   f"backward at line {freed['user']['line']}, which keeps the graph (recorded: "
                   "it started from another loss than the later backward, and no optimizer "
                   "step ran between them), so the later backward goes through it too: each "
                   "loss's gradients, accumulated in turn, as one backward of their sum gives "
                   "them up to round-off", plan) if plan is not None else []


def inner_call_retained(evidence: dict | None) -> list[Fix]:
    """See :mod:`autograd_lens.explain.recorded_edits` (the keyword ``retain_graph=False`` made True, or
    ``retain_graph=True`` added; nothing when the statement holds no one such call)."""
    found = evidence or {}
    freed = (found.get("node") or {}).get("freed_by") or {}
    site, at = freed.get("user") or {}, found.get("at") or {}
    if not (found.get("nested") and freed.get("nested") and site and
            (site.get("file"), site.get("line")) == (at.get("file"), at.get("line"))) or \
            not any(b.get("retained") for b in found.get("backwards", [])) or \
            any(s["after_backward_calls"] >= freed["number"] for s in found.get("steps", [])):
        return []
    source = Source.read(site["file"])
    statement = source.statement_at(site["line"]) if source else None
    calls = [n for n in ast.walk(statement) if isinstance(n, ast.Call) and
             isinstance(n.func, (ast.Attribute, ast.Name)) and
             getattr(n.func, "attr", getattr(n.func, "id", "")) == "grad"] \
        if statement is not None else []
    if len(calls) != 1:
        return []
    keyword = next((k for k in calls[0].keywords if k.arg == "retain_graph"), None)
    if keyword is None:
        plan = with_retained_graph(source, calls[0])
    elif isinstance(keyword.value, ast.Constant) and keyword.value.value is False and \
            keyword.value.lineno == keyword.value.end_lineno:
        plan = Plan(source)
        plan.replace_span(keyword.value, "True")
    else:
        return []
    return one_fix(f"the call at line {statement.lineno}, run inside a custom Function's "
                   "backward, keeps its graph (recorded: an earlier run of it freed the graph, "
                   "and the program runs the outer backward through the Function again, "
                   "keeping the outer graph), so that next run finds the graph it needs", plan)

