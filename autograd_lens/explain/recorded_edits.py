"""Candidate edits for the freed-graph error that follow from what the replay recorded: the name
that holds the freed graph and the statement that made its node (``got``), where it enters the
failing step, and the backward call that freed it (``freed_by``).

Each is only a candidate: it is run before it is called the fix (see :mod:`autograd_lens.run.verify`),
and one that fails is printed only as a failed attempt.

* :func:`fresh_name`: the carrier was made by ``name = EXPR`` before the earlier backward, and in
  the pass of the loop where it enters, another name was just assigned the same ``EXPR`` (a
  new graph): the line where it enters reads that name instead.
* :func:`fresh_total`: the carrier is an attribute that a method adds to in place
  (``self.out += f(x)``) and reads: the sum starts again from zero in each call, as a local
  name, so no call's graph reaches the next.
* :func:`without_earlier_backward`: the backward call that freed the graph is a statement of its
  own in another function than the failing call, and the recording shows it started from the
  very roots the failing call starts from (the same loss backwarded twice): without it, the
  failing call is the one backward of that loss.
* :func:`without_earlier_wrapper_call`: the freeing call and the failing call are the one
  backward statement of a thin wrapper (a function that does nothing else), the recording
  shows both started from the same loss, and the wrapper was called first from another line
  than the failing call's: that earlier call of the wrapper is left out.
* :func:`earlier_backward_retained`: the backward call that freed the graph is a statement of
  its own in another function than the failing call, the recording shows it started from
  other roots (another loss made from the same forward), and no optimizer step ran after it:
  it keeps the graph (``retain_graph=True``), so the failing call goes through it too.
* :func:`made_again_in_loop`: the carrier was made by ``name = EXPR`` before the loop in which
  it enters, and nothing ``EXPR`` reads is a name the recording lists as holding the freed
  graph, or each such name has one plain assignment before it there, outside every loop, whose
  names in turn hold none or are so made (``logits``, ``probs``, then ``loss``): the same
  statements run again at the top of that loop, so each pass builds its own
  graph from what it reads then (a static guess could not tell a module or a plain tensor,
  read there, from a kept output that would bring the old graph back). Not when ``name = EXPR``
  is itself in an outer loop and the recording shows an optimizer step between the building
  of the freed node and the failing call: the program makes it once per outer pass and keeps
  it across steps, a snapshot that made again would no longer be old.
* :func:`attribute_made_again`: the carrier is ``self.X`` (or ``obj.X``), recorded holding the
  freed graph, which one method of its class (for ``obj.X``, the class the recording names as
  its object's) assigns once (``self.X = EXPR``, ``EXPR`` reading nothing but ``self``, and no
  attribute of it that the recording shows holding the freed graph) and another method (or
  code outside the class) reads: the read gets ``EXPR`` in its place, ``self`` read as ``obj``,
  a new graph each time it runs (``EXPR`` may read the file's imported modules: ``torch.exp``);
  the reads of ``self.X`` in the class's other methods get it too (where it enters as ``obj.X``
  through a method's call, they are the only reads), so none goes on reading the value made once.
* :func:`start_again`: the carrier, recorded holding the freed graph, is read where it enters
  with a learned start for the first call (``self.W0 if self.state is None else self.state``,
  ``W0`` a parameter the program makes; a detach would leave it untrained): each call
  starts from that start again, so no call's graph reaches the next (and the state is no
  longer carried from one call to the next, which the text says).
* :func:`inner_call_retained`: the failing call is an ``autograd.grad`` that a custom
  Function's backward runs, and the recording shows the same statement, run the same way by an
  earlier backward, freed the graph; the program keeps the outer graph (a backward with
  ``retain_graph=True`` recorded) and no optimizer step ran since: the inner call keeps its
  graph too, so the outer graph's next pass finds it (not a ``backward()`` there: run again, it
  would add into the ``.grad`` that the Function returns, counting the first pass twice).
* :func:`appended_value_read`: the carrier is an entry of a list, kept by the statement that
  appends a name (``losses.append(loss)``), and the statement where it enters reads the list
  by an index (``losses[i].backward()``) after that append in the same pass of the same loop:
  it reads the name just appended instead, this pass's value with its own graph (the list,
  never emptied, holds earlier passes' entries at that index).
* :func:`taken_in_detached`: a statement of the recorded call chain that made the carrier's
  node (``surrogate(s, a, advantage)``, in the loop that also backwards a critic's loss
  through ``advantage``) reads names that the recording shows holding a graph an earlier
  backward freed (``carrying``), a backward of another statement than the failing one (another
  loss's, not an earlier pass of the same): it reads them detached, so the earlier backward
  alone trains what made them, and the carrier's graph no longer reaches theirs.
* :func:`clear_after_backward`: the carrier is an entry of a list that the program clears, after
  the backward that freed it, only under a condition, beside an optimizer's step (gradient
  accumulation that clears on the optimizer's steps; not a window it empties on purpose): the
  same clearing statement also runs right after that backward.
* :func:`~autograd_lens.explain.spent_value.none_after_backward`: the failing backward statement is the
  one that freed the graph (an earlier pass), its loss reads the carrier, and the program gives
  the carrier None elsewhere: it gets None right after that backward.
* :func:`~autograd_lens.explain.spent_value.memo_cleared_after_backward`: the carrier is a memo
  (``if self.X is None: self.X = ...``) that the failing backward statement freed in an earlier
  pass, listed under a name of the failing call's function: that name gets None after it.
* :func:`memo_stored_detached`: the carrier is such a memo: stored without its graph where the
  recording shows it filled (for a memo computed from a value made once, which the None does
  not make again), after the None.
* :func:`~autograd_lens.fixes.grads_in_turn.grad_retained_in_loop`: the failing ``autograd.grad`` in a
  loop is the call that freed the graph, an earlier pass from the same roots: it keeps the graph.
* :func:`~autograd_lens.fixes.nonreentrant.not_reentrant`: the recording shows the failing backward
  run inside another (a reentrant checkpoint's): the program's reentrant checkpoint calls run
  non-reentrant.
* :func:`~autograd_lens.fixes.cached_block.cached_per_step`: the carrier is a weight a
  parametrization's cache keeps, and the failing backward is in a loop that is the one statement
  of a ``parametrize.cached()`` block: the block goes inside the loop, one cache per step.
"""

from __future__ import annotations

import ast
import dataclasses
import re
from typing import Any

from ..source.backward_calls import backward_subject
from ..source.edits import Plan, Source, path_of
from ..fixes.rules import BACKWARD, Fix, detach_lines, one_fix, with_keyword
from ..fixes.rules_in_turn import with_retained_graph
from .second_loss import detached_at_join, retained_first
from ..fixes.grads_in_turn import grad_retained_in_loop
from .held_names import held_as, held_in, recorded_names
from ..fixes.nonreentrant import not_reentrant
from ..fixes.cached_block import cached_per_step
from .spent_value import memo_cleared_after_backward, none_after_backward
from ..fixes.state_start import reads_parameter


def candidates(carriers: list, evidence: dict | None, failed: tuple[str, int] | None) \
        -> list[Fix]:
    """Every candidate of this module for the finding's carriers and recorded evidence."""
    fixes: list[Fix] = []
    top = next((c for c in carriers if not c.held), None)
    freed = ((evidence or {}).get("node") or {}).get("freed_by")
    if top is not None:
        fixes += fresh_name(top) + fresh_total(top) + clear_after_backward(top, freed)
        fixes += made_again_in_loop(top, evidence) + attribute_made_again(top, evidence)
        fixes += start_again(top, evidence) + state_detached_where_kept(top, failed)
        fixes += state_detached_by_the_loop(top, evidence, failed)
        fixes += appended_value_read(top) + taken_in_detached(top, evidence)
        fixes += none_after_backward(top, freed, failed) + cached_per_step(top, failed)
        fixes += memo_cleared_after_backward(top, evidence, freed, failed)
        fixes += memo_stored_detached(top, carriers, failed)
    fixes += without_earlier_backward(freed, failed) + without_earlier_wrapper_call(evidence)
    at = (evidence or {}).get("at") or {}
    inner = (at["file"], at["line"]) if (evidence or {}).get("nested") and at.get("line") \
        else failed  # a call that another backward ran fails at its own statement
    fixes += earlier_backward_retained(freed, inner, (evidence or {}).get("steps", []))
    fixes += inner_call_retained(evidence) + grad_retained_in_loop(evidence)
    fixes += [r for r in retained_first(evidence) if all(r.edits != f.edits for f in fixes)]
    files = [where[0] for where in (failed, inner) if where] + [c.file for c in carriers]
    return fixes + detached_at_join(carriers, evidence) + not_reentrant(evidence, files)


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


def _loop(source: Source, statement: ast.stmt) -> ast.stmt | None:
    return source.loop_of(statement)


def fresh_name(carrier: Any) -> list[Fix]:
    """See the module's docstring (None without a recorded ``got`` in the same file)."""
    got = carrier.got
    if not got or got["file"] != carrier.file or "." in carrier.name or "[" in carrier.name:
        return []
    source = Source.read(carrier.file)
    made = source.statement_at(got["line"]) if source else None
    enters = source.statement_at(carrier.line) if source else None
    if made is None or enters is None or made is enters or not isinstance(made, ast.Assign) or \
            [path_of(t) for t in made.targets] != [carrier.name]:
        return []
    loop = _loop(source, enters)
    if loop is None or source.scope_at(made.lineno) is not source.scope_at(enters.lineno):
        return []
    value = ast.dump(made.value)
    again = [s for s in source.statements(source.scope_at(enters.lineno))
             if isinstance(s, ast.Assign) and len(s.targets) == 1 and
             isinstance(s.targets[0], ast.Name) and s.targets[0].id != carrier.name and
             made.end_lineno < s.lineno and s.end_lineno < enters.lineno and
             _loop(source, s) is loop and ast.dump(s.value) == value]
    if not again:
        return []
    other = again[-1].targets[0].id
    reads = source.reads(enters, carrier.name)
    if not reads or any(r.lineno != r.end_lineno for r in reads):
        return []
    plan = Plan(source)
    for read in reads:
        plan.replace_span(read, other)
    return one_fix(f"line {enters.lineno} reads `{other}`, the same computation as `"
                   f"{carrier.name}` made again in this pass of the loop (a new graph), "
                   "not the one the earlier backward went through", plan)


def fresh_total(carrier: Any) -> list[Fix]:
    """See the module's docstring: ``self.X += v`` in one method that also reads ``self.X``,
    and no other assignment of it there."""
    if not carrier.name.startswith("self.") or carrier.name.count(".") != 1 or \
            "[" in carrier.name:
        return []
    source = Source.read(carrier.file)
    if source is None:
        return []
    scope = source.scope_at(carrier.line)
    if not isinstance(scope, (ast.FunctionDef, ast.AsyncFunctionDef)):
        return []
    statements = source.statements(scope)
    adds = [s for s in statements if isinstance(s, ast.AugAssign) and
            isinstance(s.op, ast.Add) and path_of(s.target) == carrier.name]
    others = [s for s in source.stores(scope, carrier.name) if s not in adds]
    if not adds or others or any(s.lineno != s.end_lineno for s in adds):
        return []
    local = carrier.name[len("self."):]
    used = {n.id for n in ast.walk(scope) if isinstance(n, ast.Name)} | \
        {a.arg for a in ast.walk(scope) if isinstance(a, ast.arg)}
    while local in used:
        local += "_sum"
    top = next(s for s in scope.body if s.lineno <= adds[0].lineno <= s.end_lineno)
    plan = Plan(source).before(top.lineno, source.indent(top.lineno) + f"{local} = 0")
    for add in adds:
        plan.replace(add.lineno, source.indent(add.lineno) +
                     f"{local} = {local} + {source.segment(add.value)}")
    added = {a.lineno for a in adds}
    for statement in statements:
        if statement.lineno in added:
            continue
        reads = source.reads(statement, carrier.name)
        if any(r.lineno != r.end_lineno for r in reads):
            return []
        for read in reads:
            plan.replace_span(read, local)
    return one_fix(f"each call of {scope.name}() adds up its own `{local}` from zero, so no "
                   "call's graph reaches the next; the attribute is no longer kept", plan)


def made_again_in_loop(carrier: Any, evidence: dict | None) -> list[Fix]:
    """See the module's docstring (None without a recorded ``got`` in the same file, and
    without the recorded holders)."""
    got, holders = carrier.got, (evidence or {}).get("holders")
    if not got or holders is None or got["file"] != carrier.file or \
            not re.fullmatch(r"[A-Za-z_]\w*", carrier.name):
        return []
    source = Source.read(carrier.file)
    made = source.statement_at(got["line"]) if source else None
    enters = source.statement_at(carrier.line) if source else None
    if made is None or enters is None or not isinstance(made, ast.Assign) or \
            [path_of(t) for t in made.targets] != [carrier.name] or \
            not source.reads(enters, carrier.name):  # it enters through another name
        return []
    loop = _loop(source, enters)
    if loop is None or made.end_lineno >= loop.lineno or \
            source.scope_at(made.lineno) is not source.scope_at(enters.lineno):
        return []
    held = {h["name"] for h in recorded_names(evidence)}
    chain = _made_from(source, made, held)
    if chain is None:  # computed again, it would read the old graph back in
        return []
    if _loop(source, made) is not None and _stepped_since_built(evidence):
        return []  # a snapshot the program makes once per pass, kept across steps on purpose
    plan = Plan(source)
    indent, first = source.indent(loop.body[0].lineno), loop.body[0].lineno
    plan.before(first, *(indent + line.lstrip() if n == 0 else line
                         for statement in chain + [made]
                         for n, line in enumerate(source.segment(statement).splitlines())))
    names = ", ".join(f"`{path_of(s.targets[0])}`" for s in chain)
    return one_fix(f"`{carrier.name}` is computed again at the top of the loop of line "
                   f"{loop.lineno}" + (f", with {names} that it is made from" if chain else "") +
                   ", so each pass builds its own graph and its backward trains what computes "
                   "it; " + ("the names they read held no freed graph at the failure, as "
                             "recorded" if chain else "none of the names it reads held the freed "
                             "graph at the failure, as recorded"), plan)


def _made_from(source: Source, made: ast.Assign, held: set[str]) -> list[ast.stmt] | None:
    """The assignments, before ``made`` in its function and outside every loop, of the names
    it reads that the recording shows holding the freed graph, and of theirs in turn, in source
    order (``logits = x @ W``, ``probs = logits.softmax(1)`` for ``loss = -probs[...].log()``);
    None when such a name has no one plain assignment there."""
    scope, chain, wanted = source.scope_at(made.lineno), [], [made]
    while wanted:
        statement = wanted.pop()
        for name in sorted({n.id for n in ast.walk(statement.value)
                            if isinstance(n, ast.Name)} & held):
            stores = [s for s in source.stores(scope, name) if s.lineno < statement.lineno]
            if not stores or not isinstance(stores[-1], ast.Assign) or \
                    len(stores[-1].targets) != 1 or path_of(stores[-1].targets[0]) != name or \
                    _loop(source, stores[-1]) is not None:
                return None
            if stores[-1] not in chain:
                chain.append(stores[-1])
                wanted.append(stores[-1])
    return sorted(chain, key=lambda s: s.lineno)


def _stepped_since_built(evidence: dict) -> bool:
    """Whether the recording shows an optimizer step between the building of the freed node
    and the failing call (True when it does not say when the node was built)."""
    built = ((evidence.get("node") or {}).get("built") or {}).get("steps")
    before = evidence.get("steps_before")
    return built is None or before is None or before > built


def attribute_made_again(carrier: Any, evidence: dict | None) -> list[Fix]:
    """See the module's docstring."""
    holders = (evidence or {}).get("holders") or []
    held = {h["name"] for h in recorded_names(evidence)}
    path = re.fullmatch(r"([A-Za-z_]\w*)\.(\w+)", carrier.name)
    if path is None:
        return []
    prefix, attribute = path.groups()
    source = Source.read(carrier.file)
    enters = source.statement_at(carrier.line) if source else None
    reader = source.scope_at(carrier.line) if enters is not None else None
    owner = _owner(source, reader, prefix, carrier.name, holders) if reader is not None else None
    if owner is None or not (carrier.name in held or prefix == "self" and any(
            h["name"].endswith("." + attribute) and h.get("owner") == owner.name
            for h in holders)):  # held at the failure through its object's owner's name
        return []
    stores = [(f, s) for f in owner.body if isinstance(f, ast.FunctionDef)
              for s in source.stores(f, "self." + attribute)]
    if len(stores) != 1 or stores[0][0] is reader or not isinstance(stores[0][1], ast.Assign) \
            or len(stores[0][1].targets) != 1:
        return []
    value = stores[0][1].value
    if isinstance(value, ast.Constant):  # ``self.cached = None``: the graph is made elsewhere
        return []
    names = {n.id for n in ast.walk(value) if isinstance(n, ast.Name)}
    paths = {prefix + path_of(n)[4:] for n in ast.walk(value) if isinstance(n, ast.Attribute)
             and (path_of(n) or "").startswith("self.")}
    # Every read gets it: where it enters, and in the class's other methods (self.X), so that
    # none of them goes on reading the value made once (a policy's sample as well as its loss).
    reads = {(r.lineno, r.col_offset): (r, prefix) for r in source.reads(enters, carrier.name)}
    for f in owner.body:
        for r in source.reads(f, "self." + attribute) if isinstance(f, ast.FunctionDef) and \
                f is not stores[0][0] else ():
            reads.setdefault((r.lineno, r.col_offset), (r, "self"))
    if names - {"self"} - _imported(source) or paths & held or not reads or \
            value.lineno != value.end_lineno or \
            any(r.lineno != r.end_lineno for r, _ in reads.values()):
        return []
    plan, texts = Plan(source), {}
    for read, reader_prefix in reads.values():
        text = _on(source, value, reader_prefix)
        if not isinstance(value, (ast.Call, ast.Attribute, ast.Name)):
            text = f"({text})"
        plan.replace_span(read, text)
        texts.setdefault(read.lineno, text)
    lines = sorted(texts)
    text = texts[lines[0]]
    where = f"line {lines[0]}" if len(lines) == 1 else \
        "lines " + ", ".join(map(str, lines[:-1])) + f" and {lines[-1]}"
    return one_fix(f"{where} compute{'s' if len(lines) == 1 else ''} `{text}` again, as "
                   f"{stores[0][0].name}() did once for `self.{attribute}`, so each time it "
                   "runs it builds a new graph; the recording shows the kept value holding the "
                   "graph the earlier backward freed", plan)


def _imported(source: Source) -> set[str]:
    """The names the file's top level binds by ``import`` (``torch``, ``F``, ``math``): modules,
    which hold no graph, so an expression may read them and still be built again anywhere."""
    return {(alias.asname or alias.name).split(".")[0] for node in source.tree.body
            if isinstance(node, (ast.Import, ast.ImportFrom)) for alias in node.names}


def _owner(source: Source, reader: ast.AST, prefix: str, name: str,
           holders: list[dict]) -> ast.ClassDef | None:
    """The class whose methods assign the attribute ``name``: for ``self.X``, the class of the
    method that reads it; for ``obj.X``, the one class of the file named as the recorded
    holder's object's class."""
    classes = [c for c in ast.walk(source.tree) if isinstance(c, ast.ClassDef)]
    if prefix == "self":
        return next((c for c in classes if any(f is reader for f in c.body)), None)
    owned = {h.get("owner") for h in holders if h["name"] == name} - {"", None}
    found = [c for c in classes if c.name in owned]
    return found[0] if len(owned) == 1 and len(found) == 1 else None


def _on(source: Source, value: ast.expr, prefix: str) -> str:
    """``value``'s text (one line) with each ``self`` read as ``prefix``."""
    text, start = source.segment(value), value.col_offset
    spots = sorted((n.col_offset - start for n in ast.walk(value)
                    if isinstance(n, ast.Name) and n.id == "self"), reverse=True)
    for spot in spots:
        text = text[:spot] + prefix + text[spot + 4:]
    return text


def start_again(carrier: Any, evidence: dict | None) -> list[Fix]:
    """See the module's docstring."""
    held = {h["name"] for h in recorded_names(evidence)}
    if not any(held_as(carrier.name, h) for h in held):
        return []
    source = Source.read(carrier.file)
    enters = source.statement_at(carrier.line) if source else None
    for node in ast.walk(enters) if enters is not None else ():
        start = _start_of(node, carrier.name)
        if start is not None and node.lineno == node.end_lineno and \
                reads_parameter(source, start):  # a learned start, trained by each call
            text = source.segment(start)
            plan = Plan(source).replace_span(node, text)
            return one_fix(f"each call starts from `{text}` again, as the first one did, so no "
                           "call's graph reaches the next; the state is no longer carried from "
                           "one call to the next", plan)
    return []


def _start_of(node: ast.AST, name: str) -> ast.expr | None:
    """``A`` of ``A if name is None else name`` (or ``name if name is not None else A``), when
    ``A`` does not read ``name``; else None."""
    if not isinstance(node, ast.IfExp) or not isinstance(node.test, ast.Compare) or \
            len(node.test.ops) != 1 or path_of(node.test.left) != name or \
            not (isinstance(node.test.comparators[0], ast.Constant) and
                 node.test.comparators[0].value is None):
        return None
    op = node.test.ops[0]
    start, kept = (node.body, node.orelse) if isinstance(op, ast.Is) else \
        (node.orelse, node.body) if isinstance(op, ast.IsNot) else (None, None)
    if start is None or path_of(kept) != name or \
            any(path_of(n) == name for n in ast.walk(start)):
        return None
    return start


def without_earlier_backward(freed: dict | None, failed: tuple[str, int] | None) -> list[Fix]:
    """See the module's docstring: the recorded freeing call, a ``X.backward()`` statement of
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
    """See the module's docstring (the wrapper's earlier caller, a call statement of its own on
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
    """See the module's docstring: ``steps``, the recorded optimizer steps before the failing
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
    """See the module's docstring (the keyword ``retain_graph=False`` made True, or
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
    """See the module's docstring: a statement after the recorded freeing backward, in its loop
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
    """See the module's docstring (a carrier kept by an append: its ``kept`` statement)."""
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
    """See the module's docstring: the innermost statement of the chain that made the
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
