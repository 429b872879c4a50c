"""Candidate edits for the freed-graph error where the recording shows what made the carrier's
graph, so that the step can make it again: the same computation read under the name just
assigned it, a method's running sum started from zero, a value made once before the loop made
again at its top, an attribute computed once computed again where it is read, a state started
again from its learned start (see :mod:`autograd_lens.explain.recorded_edits`)."""

from __future__ import annotations

import ast
import re
from typing import Any

from ..source.edits import Plan
from ..source.source_file import Source, path_of
from ..fixes.rules import Fix, one_fix
from .held_names import held_as, recorded_names
from ..fixes.state_start import reads_parameter


def _loop(source: Source, statement: ast.stmt) -> ast.stmt | None:
    return source.loop_of(statement)


def fresh_name(carrier: Any) -> list[Fix]:
    """See :mod:`autograd_lens.explain.recorded_edits` (None without a recorded ``got`` in the same file)."""
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
    """See :mod:`autograd_lens.explain.recorded_edits`: ``self.X += v`` in one method that also reads ``self.X``,
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
    """See :mod:`autograd_lens.explain.recorded_edits` (None without a recorded ``got`` in the same file, and
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
    """See :mod:`autograd_lens.explain.recorded_edits`."""
    holders = (evidence or {}).get("holders") or []
    held = {h["name"] for h in recorded_names(evidence)}
    path = re.fullmatch(r"([A-Za-z_][\w.]*)\.(\w+)", carrier.name)  # (``model.kernel.X``)
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
    """See :mod:`autograd_lens.explain.recorded_edits`."""
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

