"""Values made before an optimizer step and read by a loss built after it, as the replay recorded.

An in-place error whose write is an optimizer's ``step()``, where the failing loss itself was
built after that step, from a value made before it whose graph saved a weight the step changed
(``outputs = model.segment(x)`` kept from a loop's first phase and read by its second phase's
loss; a critic's ``value`` made before the critic's step and read by the actor's loss after it):

* :func:`stale_holders`: the names of the failing call's function that hold such a value, a
  part of the failing call's graph: their node made before the step that wrote (the recording
  counts the steps run when each node was made), when the newest of them (the loss) was made
  after it and the failing graph runs a fresh forward through some weights after the step;
* :func:`stale_carriers`: the carriers said from them, each at the statement that made it (in
  place of a name the source reading gave that the recording shows built after the step);
* :func:`detached_after_step`: each of them read after the step as a constant (``outputs =
  outputs.detach()`` right before the first statement after the step that reads it): the later
  loss no longer reaches the graph the step made stale, and what made the value was trained by
  the losses before the step.

Where the step and the failing backward run in functions called from two statements of one
function (``update_params(q1_optim, q1_loss)`` then ``update_params(policy_optim,
policy_loss)``: the recorded call chains of the step and of the failing call run the same
statements above it and part there), with the loss built before the first of them:

* :func:`parting` finds those two statements, and :func:`stale_in_caller` the names of that
  function that hold the failing graph, their node made before the step;
* :func:`rebuilt_before_call`: the statements of that function that made them (and what they
  are made from that holds the graph) run again right before the failing call's statement,
  from the weights as the steps left them.

The edits are candidates, run before they are called the fix (see :mod:`autograd_lens.run.verify`).
"""

from __future__ import annotations

import ast
from typing import Any

from ..source.edits import Plan
from ..source.source_file import Source
from .held_names import held_in
from ..fixes.rules import Fix, one_fix


def _step(evidence: dict | None) -> dict | None:
    """The recorded write, when an optimizer step made it in the failing call's function."""
    write = (evidence or {}).get("write") or {}
    at, user = (evidence or {}).get("at") or {}, write.get("user") or {}
    if not write.get("in_step") or not user or not at or \
            (user.get("file"), user.get("qualname")) != (at.get("file"), at.get("qualname")):
        return None
    return write


def stale_holders(evidence: dict | None) -> list[dict]:
    """The failing function's plain names whose node the recording shows made before the step
    that wrote, oldest first, each once (see the module's docstring)."""
    write = _step(evidence)
    if write is None:
        return []
    found, seen = [], set()
    own = sorted((h for h in _in_frame(evidence) if h.get("in_graph")), key=lambda h: h["number"])
    if not own or own[-1]["steps"] < write["in_step"] or not write.get("fresh_weights"):
        return []  # the loss itself made before the step (it is built again after it instead),
        # or made after it from those values alone (detached, nothing would train)
    for holder in own:
        if holder["name"] in seen or not holder["name"].isidentifier():
            continue
        seen.add(holder["name"])
        if holder["steps"] < write["in_step"]:
            found.append(holder)
    return found


def _in_frame(evidence: dict, frame: dict | None = None) -> list[dict]:
    """The recorded holders that are names of the failing call's own frame (or of
    ``frame``), with the steps run when their node was made."""
    return [h for h in held_in(evidence, frame) if h.get("steps") is not None]


def _built_after(name: str, evidence: dict, write: dict) -> bool:
    return any(h["name"] == name and h["steps"] >= write["in_step"] for h in _in_frame(evidence))


def stale_carriers(carriers: list, evidence: dict | None, got: Any) -> list:
    """``carriers`` with the recorded stale holders first, each given by ``got``
    (:func:`autograd_lens.explain.carrier_origin.got`) at the statement that made it; a carrier of
    the source's reading that the recording shows built after the step is left out."""
    from .carrier import Carrier

    stale = stale_holders(evidence)
    if not stale:
        return _stale_in_caller(carriers, evidence, got)
    write, at = evidence["write"], evidence["at"]
    step = f"`{write['user']['text']}` at line {write['user']['line']}"
    made = [got(Carrier(
        name=h["name"], file=at["file"], line=_read_line(evidence, h["name"]) or at["line"],
        function=at["function"],
        why=(f"was made before the optimizer step ({step}) that changed a weight its graph "
             "saved, and the failing loss, built after that step, is computed from it"),
        kind="old", entry="kept", write=next((c.write for c in carriers if c.write), None)),
        evidence["holders"]) for h in stale]
    names = {c.name for c in made}
    kept = [c for c in carriers if c.name not in names and
            not (c.kind != "written" and _built_after(c.name, evidence, write))]
    return made + kept


def _stale_in_caller(carriers: list, evidence: dict | None, got: Any) -> list:
    """``carriers`` with the names of :func:`stale_in_caller` first, each given by ``got`` at
    the statement that made it, entering at the statement whose call failed; a carrier of
    the failing call's own frame holding one of their tensors (the loss handed to a helper
    that backwards it) is left out, said through the caller's name."""
    from .carrier import Carrier

    stale = stale_in_caller(evidence)
    if not stale:
        return carriers
    (fail, step), write = parting(evidence), evidence["write"]
    numbers = {h["number"] for h in stale}
    inner = {h["name"] for h in held_in(evidence) if h.get("number") in numbers}
    said = (f"`{write['user']['text']}` at line {write['user']['line']}, run by the call at "
            f"line {step['line']}")
    made = [got(Carrier(
        name=h["name"], file=fail["file"], line=fail["line"], function=fail["function"],
        why=(f"was made before the optimizer step ({said}) that changed a weight its graph "
             "saved, and the backward that failed, run by the call here, goes through it"),
        kind="old", entry="kept", write=next((c.write for c in carriers if c.write), None)),
        evidence["holders"]) for h in stale]
    names = {c.name for c in made}
    return made + [c for c in carriers if c.name not in names and
                   not (c.kind != "written" and c.name in inner)]


def _step_statement(evidence: dict) -> tuple[Source, ast.stmt] | None:
    user = evidence["write"]["user"]
    source = Source.read(user["file"])
    step = source.statement_at(user["line"]) if source else None
    return (source, step) if step is not None else None


def _read_line(evidence: dict, name: str) -> int:
    """The line where ``name`` is first read after the step (0: not found)."""
    found = _step_statement(evidence)
    read = _first_read(*found, name, evidence["at"]["line"]) if found else None
    return read.lineno if read is not None else 0


def detached_after_step(evidence: dict | None) -> list[Fix]:
    """See the module's docstring: each name detached right before the first statement after
    the step that reads it (in source order up to the failing call, else from the top of the
    loop that holds the step: a loop's next pass); nothing when the step's statement cannot be
    read or no such statement is found."""
    stale = stale_holders(evidence)
    if not stale:
        return []
    found = _step_statement(evidence)
    if found is None:
        return []
    (source, step), plan, names = found, Plan(found[0]), []
    for name in dict.fromkeys(h["name"] for h in stale):
        read = _first_read(source, step, name, evidence["at"]["line"])
        if read is not None:
            plan.before(read.lineno, f"{source.indent(read.lineno)}{name} = {name}.detach()")
            names.append(name)
    if not names:
        return []
    said = ", ".join(f"`{n}`" for n in names)
    return one_fix(f"{said}, made before the step, comes in after it as a constant: the loss "
                   "built after the step no longer reaches the graph whose saved weight the "
                   "step changed, and the losses before the step still trained what made it",
                   plan)


def _first_read(source: Source, step: ast.stmt, name: str, failed: int) -> ast.stmt | None:
    """The first statement after ``step`` that reads ``name`` as it was when the step ran (no
    store of it runs first on the way there)."""
    scope = source.scope_at(step.lineno)
    simple = [s for s in source.statements(scope)
              if not isinstance(s, _COMPOUND) and source.reads(s, name)]
    stores = source.stores(scope, name)
    after = [s for s in simple if step.end_lineno < s.lineno <= failed and
             not _stored_on_the_way(source, stores, step.end_lineno, s)]
    if after:
        return after[0]
    loop = source.loop_of(step)
    if loop is None:
        return None
    again = [s for s in simple if loop.lineno < s.lineno < step.lineno and _inside(loop, s)
             and not _stored_on_the_way(source, stores, loop.lineno, s)]
    return again[0] if again else None


def _stored_on_the_way(source: Source, stores: list, start: int, read: ast.stmt) -> bool:
    """Whether a store after line ``start`` always runs before ``read`` (its block holds it)."""
    return any(start < store.lineno < read.lineno and
               any(later is read or _inside(later, read) for later in source.block_of(store)
                   if later.lineno > store.lineno) for store in stores)


def _inside(loop: ast.stmt, statement: ast.stmt) -> bool:
    return any(node is statement for node in ast.walk(loop))


_COMPOUND = (ast.If, ast.For, ast.While, ast.With, ast.Try, ast.FunctionDef, ast.ClassDef,
             ast.AsyncFor, ast.AsyncWith, ast.AsyncFunctionDef)


def parting(evidence: dict | None) -> tuple[dict, dict] | None:
    """The frames where the recorded call chains of the step that wrote and of the failing
    call part, as (failing call's, step's): one function, the same statements running above
    it, the step's statement first; None when they part in the innermost frame of both (the
    step and the backward in one function's run) or not at all."""
    write = (evidence or {}).get("write") or {}
    at, user = (evidence or {}).get("at"), write.get("user")
    if not write.get("in_step") or not at or not user:
        return None
    failing = [at, *evidence.get("callers", [])][::-1]
    stepping = [user, *write.get("chain", [])][::-1]
    for depth, (fail, step) in enumerate(zip(failing, stepping)):
        if (fail["file"], fail["qualname"]) != (step["file"], step["qualname"]):
            return None
        if fail["line"] != step["line"]:
            innermost = depth == len(failing) - 1 and depth == len(stepping) - 1
            return None if innermost or step["line"] > fail["line"] else (fail, step)
    return None


def stale_in_caller(evidence: dict | None) -> list[dict]:
    """The names of the function where the chains part (:func:`parting`) that hold the
    failing graph, their node made before the step that wrote, each once."""
    parted = parting(evidence)
    if parted is None:
        return []
    found: dict[str, dict] = {}
    for holder in _in_frame(evidence, parted[0]):
        if holder.get("in_graph") and holder["steps"] < evidence["write"]["in_step"] and \
                holder["name"].isidentifier():
            found.setdefault(holder["name"], holder)
    return list(found.values())


def rebuilt_before_call(evidence: dict | None) -> list[Fix]:
    """See the module's docstring: the assignments before the step's statement that made the
    stale names the failing call's statement reads (and the values they are made from that
    hold the graph), put again right before that statement."""
    from ..fixes.built_again import _built_before, reindented

    stale = stale_in_caller(evidence)
    if not stale:
        return []
    fail, step = parting(evidence)
    source = Source.read(fail["file"])
    failed = source.statement_at(fail["line"]) if source else None
    stepped = source.statement_at(step["line"]) if source else None
    if failed is None or stepped is None or \
            source.scope_at(failed.lineno) is not source.scope_at(stepped.lineno):
        return []
    copies = _built_before(source, stepped, failed, None, {h["name"] for h in stale})
    if not copies:
        return []
    moved = reindented(source, copies, source.indent(failed.lineno))
    said = ", ".join(f"`{h['name']}`" for h in stale)
    return one_fix(f"{said} is built again right before the call whose backward failed, from "
                   "the weights as the optimizer steps run before it left them: that backward "
                   "goes through a new graph", Plan(source).before(failed.lineno, *moved))
