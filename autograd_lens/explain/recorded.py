"""The diagnosis said from the replay's recorded evidence (see :mod:`autograd_lens.run.record`).

The first run's :class:`~autograd_lens.explain.situation.Finding` names the carriers from the live graph
and the source at the failure. :func:`amend` makes every statement about what *happened* from
what the replay recorded instead:

* the in-place error: the write (the first write of the saved tensor after the node saved it,
  during the forward), its line in the user's code and the library line under it, the tensor's
  name at that write, the node that saved it and the line that built it, and whether an optimizer
  step or a backward call lay between the save and the write; the pattern follows the write (a
  step's write: a weight changed by ``optimizer.step()``; the program's own: a tensor written in
  place);
* the freed-graph error: the node whose saved tensors were freed, the line and the step that
  built it, the backward call that freed it, and the user's names that still hold it; whether an
  optimizer step ran since that backward (the fix said across a step only then); each carrier
  given where it got the graph; the page of losses of one forward backpropagated in turn when
  the recording shows it (both in :mod:`autograd_lens.explain.carrier_origin`), and the pattern's own
  page, not a discriminator's, for a tensor it shows made once up front (and for a container
  of such tensors, the pattern of a tensor computed outside the loop, not a growing buffer's); a name that holds a freed node itself named first when the source's carriers hold only nodes the freeing call
  did not go through (:func:`holding_itself`); the carriers ordered by what the recording shows
  each holds, a list's entry named by the list (:mod:`autograd_lens.explain.held_names`); for a failing
  loss built before the call that freed its graph ran, the name through which the first loss
  took in the shared part, on the page of two losses of one forward
  (:mod:`autograd_lens.explain.second_loss`).

Without evidence (no replay, a replay that did not fail the same way, a notebook), :func:`amend`
marks the finding as read from the failure alone: the lines about a write, a step, a loop or an
earlier call then say they are a guess.
"""

from __future__ import annotations

import dataclasses
import re
from typing import Any

from .across_step import stale_carriers
from .carrier_origin import got, in_turn
from ..fixes.nonreentrant import ran_inside
from .held_names import (as_container, by_recording, function_of, held_as, held_in,
                         holds_freed, recorded_names)
from .old_graph import said
from ..source.places import place
from ..predict.report import PATTERNS
from .second_loss import is_second_loss, joining_carrier
from .writes import Write

GUESS = " (a guess from the source: not recorded)"


def _at(site: dict | None) -> str:
    return place(site["file"], site["line"]) if site else "an unknown line"


def _calls(count: int, word: str) -> str:
    return f"{count} {word}" + ("" if count == 1 else "s")


def _write_of(old: Write | None, evidence: dict) -> Write | None:
    """The write as recorded, in the first run's form (what the edits read)."""
    found, node = evidence.get("write"), evidence.get("node") or {}
    if found is None or found.get("user") is None:
        return None
    if old is not None and old.module and old.line and found.get("library") and \
            _stem(found["op"]) in _stem(old.text) and (old.name or old.by):
        return old  # the module made with inplace=True whose call made the recorded write
    user, step = found["user"], found.get("in_step") is not None
    names = found.get("names") or [w["name"] for w in evidence.get("written", [])]
    modules = found.get("module_names") or []
    by = modules[0] if found.get("module") and modules else ""  # the module's name
    # the tensor as the write's statement names it (``identity`` of ``identity =
    # self.act(identity)``, where ``x`` holds the same tensor too), else as first recorded
    names = sorted(names, key=lambda n: not _names_in(n, found["user"]["text"]))
    name = names[0] if names else "" if by else _target(found["user"]["text"], found.get("op", ""))
    held_by_none = not names and "(" in name  # a result no name holds, written, as recorded
    same = old is not None and (old.file, old.line) == (user["file"], user["line"])
    if (step and old is not None and old.weight) or (same and old.name and not held_by_none):
        name = old.name  # as the first run named it: a step's module, or the same write
    if step and found.get("parameter"):  # the module that holds the weight, as recorded
        name = _written(found["parameter"]).rsplit(".", 1)[0]
    name = _bound_result(found["user"]["text"], name) if not step and not by else name
    written = _target(user["text"], found.get("op", "")) if not step and not by else ""
    if written in names[1:]:  # views of one storage: the one the statement writes, as written
        name = written
    shares = tuple(n for n in names if n != name) if not step and not by and name in names \
        else ()
    if found.get("parameter") and not step and not by and name and "." not in name and \
            name not in [w["name"] for w in evidence.get("written", [])]:
        # a weight written under a local name of the function that wrote it (``p`` of a loop
        # over an optimizer's groups): named by its module's path, as the program holds it
        name = _written(found["parameter"])
    versions = old.versions if old is not None else (found["version"] - 1, found["version"])
    carrying = tuple(dict.fromkeys([*(old.carrying if old is not None else ()),
                                    *_held_in_frame(evidence)]))
    return Write(node.get("name", ""), node.get("slot", ""), name, bool(found.get("weight")),
                 "step" if step else "op", user["file"], user["line"], user["function"],
                 user["text"], versions,
                 carrying, old.reached if old is not None else 0,
                 module=found.get("library") is not None and not step,
                 maker=found.get("module") or "", by=by,
                 trained=old is not None and old.trained,
                 next_lines=tuple((w["file"], w["line"]) for w in evidence.get("next_writes", [])),
                 saved_at=_user_line((node.get("built") or {}).get("user")),
                 saved_from=tuple(filter(None, (_user_line(f) for f in
                                                (node.get("built") or {}).get("chain", [])))),
                 later_lines=tuple((w["file"], w["line"])
                                   for w in evidence.get("later_writes", [])),
                 shares=shares)


def _names_in(name: str, text: str) -> bool:
    """Whether ``text`` (a statement) reads or writes ``name`` as written."""
    return re.search(r"(?<![\w.])" + re.escape(name) + r"(?![\w])", text) is not None


def _user_line(site: dict | None) -> tuple[str, int] | tuple[()]:
    return (site["file"], site["line"]) if site and site.get("line") else ()


def _held_in_frame(evidence: dict) -> list[str]:
    """The names of the failing call's frame that the recording shows holding its graph
    (``losses`` for ``losses["wgan_g"]``), in the recording's order."""
    return [re.split(r"[\[.]", h["name"], maxsplit=1)[0] for h in held_in(evidence)]


def _stem(text: str) -> str:
    """An operation's name or a line, compared without case and underscores (``leaky_relu_``
    and ``nn.LeakyReLU(0.1, inplace=True)``)."""
    return text.split(".")[0].replace("_", "").lower() if "(" not in text else \
        text.replace("_", "").lower()


def _built_after_the_step(carrier: Any, evidence: dict) -> Any:
    """A carrier said to be built before the optimizer step that wrote the saved weight, where
    the recording shows its tensor built at that line after that step, and the node that saved
    the weight built before it: built from a value made before the step."""
    write, node = evidence.get("write") or {}, evidence.get("node") or {}
    step, built = write.get("in_step"), (node.get("built") or {}).get("steps")
    start = carrier.why.find("is built here, before `")
    if start < 0 or step is None or built is None or built >= step:
        return carrier
    after = [h for h in evidence.get("holders", []) if h["name"] == carrier.name and
             h.get("built") and (h.get("steps") or 0) >= step and
             any((f["file"], f["line"]) == (carrier.file, carrier.line)
                 for f in [h["built"], *h.get("callers", [])])]
    if not after:
        return carrier
    text = carrier.why[start + len("is built here, before "):].split(" changed in place")[0]
    return dataclasses.replace(carrier, why=(
        f"is built here, after {text} ran, from a value made before it (recorded): that step "
        "changed in place a weight the value's graph saved"))


def _unstepped(carrier: Any, write: Write | None, node: str) -> Any:
    """A carrier the first run said was built before an optimizer step that changed a weight
    its graph saved, where the recording shows no step did: said by what it holds."""
    if carrier.write is None or carrier.write.how != "step":
        return carrier
    holds = f"the graph of {node}, whose saved tensor" if node else "a graph whose saved tensor"
    return dataclasses.replace(carrier, write=write,
                               why=f"is built here and holds {holds} was written in place")


def _rewhy(carrier: Any, old: str, new: str) -> Any:
    return dataclasses.replace(carrier, why=carrier.why.replace(old, new)) if old in carrier.why \
        else carrier


def amend(finding: Any, evidence: dict | None, why_not: str = "") -> Any:
    """``finding`` with its statements made from ``evidence`` (None: marked as a guess, with
    ``why_not`` said: why there is no recording)."""
    if evidence is None:
        return dataclasses.replace(finding, recorded=False, why_not=why_not)
    changes: dict[str, Any] = {"recorded": True, "evidence": evidence}
    if evidence["kind"] == "modified":
        write = _write_of(finding.write, evidence)
        changes["write"] = write
        carriers = list(finding.carriers)
        if finding.write is not None:
            carriers = [c for c in carriers if not (
                c.kind == "written" and (write is None or (c.name, c.line) !=
                                         (write.name or write.by, write.line)))]
            old_said, new_said = said([], True, finding.write), said([], True, write)
            carriers = [_rewhy(c, old_said, new_said) for c in carriers]
        if write is not None and write.how == "op" and (write.name or write.by) and \
                not any(c.kind == "written" for c in carriers):
            carriers.insert(0, dataclasses.replace(
                carriers[0] if carriers else _blank(), name=write.name or write.by, file=write.file,
                line=write.line, function=write.function, kind="written",
                why=(f"runs here and writes in place what {write.saver()} saved"
                     if write.module and not write.name else f"is written in place here after {write.saver()} saved it"), write=write,
                origin="attribute" if "." in write.name and "(" not in write.name and
                not write.module else "variable",
                entry="written"))
        if write is not None:  # the first run's written carrier kept: with what was recorded
            carriers = [_rewhy(dataclasses.replace(c, write=write),
                               f"after {c.write.saver()} saved it", f"after {write.saver()} saved it")
                        if c.kind == "written" and c.write is not None and c.line == write.line
                        else c for c in carriers]
        if write is not None and write.how == "step":  # the step's line, as recorded
            carriers = [dataclasses.replace(c, write=write) if c.write is not None and
                        c.write.how == "step" else c for c in carriers]
            carriers = stale_carriers(carriers, evidence, got)  # made before it, as recorded
        carriers = [_unlooped(_built_after_the_step(c, evidence)) for c in carriers]
        unstepped = (write is not None and write.how == "op") or \
            (write is None and not evidence.get("steps_before"))  # no step wrote it
        if unstepped:
            carriers = [_unstepped(c, write, (evidence.get("node") or {}).get("name", ""))
                        for c in carriers]
        changes["carriers"] = carriers
        key = finding.pattern.key if finding.pattern else ""
        if unstepped and key == "modified_in_place":
            changes["pattern"] = PATTERNS["written_in_place"]
        elif write is not None and write.how == "step" and key == "written_in_place":
            changes["pattern"] = PATTERNS["modified_in_place"]
    else:
        freed = (evidence.get("node") or {}).get("freed_by")
        if freed is not None:
            number = freed["number"]
            changes["across_step"] = any(s["after_backward_calls"] >= number
                                         for s in evidence.get("steps", []))
            changes["carriers"] = [_earlier_said(c, freed) for c in finding.carriers]
        holders = recorded_names(evidence)
        carriers = changes.get("carriers", finding.carriers)
        changes["carriers"] = _once([as_container(got(c, holders), holders) for c in by_recording(
            holding_itself(carriers, evidence, freed) + list(carriers), evidence)])
        if freed is not None:
            changes["carriers"] = [_made_after(c, evidence, freed) for c in changes["carriers"]]
            changes["carriers"] = _entering_first(changes["carriers"], evidence, freed)
        key = finding.pattern.key if finding.pattern else ""
        if key == "accumulated_loss" and _accumulated_in_this_step(finding, changes["carriers"]):
            # the total the first run named was computed in this step, from a state an object
            # keeps from the step before: that state, not a total kept across steps
            changes["pattern"], key = PATTERNS["module_state"], "module_state"
        if ran_inside(evidence) and (evidence.get("node") or {}).get("name", "").startswith(
                "CheckpointFunction"):  # freed by the backward a reentrant checkpoint ran inside
            changes["situation"] = "18_checkpoint"  # the failing one
            return dataclasses.replace(finding, **changes)
        if is_second_loss(evidence) and changes["carriers"] and key != "gan_discriminator" \
                and finding.situation != "12_gan_discriminator":  # a GAN's own page stands
            changes["carriers"] = joining_carrier(changes["carriers"], evidence, got)
            changes["situation"] = "02_two_losses_one_forward"
            if key != "shared_trunk":  # (not two networks: the loss was made before the call)
                changes["pattern"] = PATTERNS["shared_trunk"]
            changes["across_step"] = bool(evidence["root"].get("stepped"))
            return dataclasses.replace(finding, **changes)
        if key == "outside_loop" and not finding.situation and \
                in_turn(changes["carriers"], evidence, freed):
            changes["situation"] = "02_two_losses_one_forward"
        if finding.situation == "12_gan_discriminator" and changes["carriers"] and \
                _made_before_training(changes["carriers"][0], evidence):
            changes["situation"] = ""  # the pattern's own page: a tensor made once, up front
        elif key == "shared_trunk" and not finding.situation and changes["carriers"] and \
                _made_before_training(changes["carriers"][0], evidence):
            changes["situation"] = "13_tensor_outside_loop"
        elif key in ("kept_value", "hidden_state", "growing_buffer") and changes["carriers"] \
                and _first_run_of_the_failing_call(changes["carriers"][0], evidence):
            # nothing was kept from an earlier step (no list grew across updates either):
            # another loss of this forward went first
            changes["pattern"] = PATTERNS["shared_trunk"]
            changes["situation"] = "02_two_losses_one_forward"
        elif key in ("shared_trunk", "two_networks", "kept_value", "hidden_state") and \
                changes["carriers"] and _kept_before_loop(changes["carriers"][0], evidence):
            changes["pattern"], changes["situation"] = PATTERNS["outside_loop"], ""
        elif key == "shared_trunk" and not finding.situation and changes["carriers"] and \
                _made_from_itself(changes["carriers"][0]):
            changes["pattern"] = PATTERNS["module_state" if changes["carriers"][0].origin ==
                                          "attribute" else "hidden_state"]
        elif key == "growing_buffer" and not finding.situation and changes["carriers"] and \
                _made_before_training(changes["carriers"][0], evidence):
            changes["pattern"] = PATTERNS["outside_loop"]  # made once, up front: no buffer grew
        elif key == "outside_loop" and changes["carriers"] and \
                _made_in_an_earlier_pass(changes["carriers"][0], evidence):
            # made by the loop itself, not before it: a value one pass kept for the next
            changes["pattern"] = PATTERNS["module_state" if changes["carriers"][0].origin ==
                                          "attribute" else "kept_value"]
            changes["situation"] = ""
    return dataclasses.replace(finding, **changes)


def _once(carriers: list) -> list:
    """``carriers`` with each name at each place once, the first kept (a name the recording
    shows held at the failing call and the source's reading of the same name)."""
    seen: set = set()
    kept = []
    for carrier in carriers:
        if (carrier.name, carrier.file, carrier.line) not in seen:
            seen.add((carrier.name, carrier.file, carrier.line))
            kept.append(carrier)
    return kept


def write_entry(write: Write) -> dict[str, Any]:
    """The recorded write as the report's first entry of ``carriers`` (the in-place error's
    culprit is the write, not a variable that carries a graph): named by what wrote it as the
    line shows it: the optimizer whose ``step()`` it was, else the tensor as the program names
    it there, else the target the statement writes (``laterals[i - 1]`` in
    ``laterals[i - 1] += x``)."""
    name = (_stepped(write.text) if write.how == "step" else "") or write.by or write.name or \
        _target(write.text)
    how = "an optimizer step" if write.how == "step" else "an in-place write"
    return {"name": name, "file": write.file, "line": write.line, "function": write.function,
            "why": f"{how} here changed what {write.saver()} saved (recorded in a replay)",
            "kind": "write"}


def _stepped(text: str) -> str:
    """``opt`` in ``opt.step()`` (the last ``.step()`` call of the line)."""
    import ast

    try:
        tree = ast.parse(text.strip())
    except SyntaxError:
        return ""
    calls = [n for n in ast.walk(tree) if isinstance(n, ast.Call) and
             isinstance(n.func, ast.Attribute) and n.func.attr == "step"]
    return ast.unparse(calls[-1].func.value) if calls else ""


def _target(text: str, op: str = "") -> str:
    """What a statement writes in place: the object of the method the recorded ``op`` names
    (``add_`` in ``y[:, a:b] = lsm(t).add_(p)``: ``lsm(t)``, not ``y``), else the target of
    ``+=`` or of an index assignment, the object of a method ending in ``_``
    (``x.clamp_()``); "" for anything else."""
    import ast

    try:
        tree = ast.parse(text.strip())
    except SyntaxError:
        return ""
    method = op.split(".")[0]
    named = [node for node in ast.walk(tree) if isinstance(node, ast.Call) and
             isinstance(node.func, ast.Attribute) and method.endswith("_") and
             node.func.attr == method]
    if len(named) == 1:
        return ast.unparse(named[0].func.value)
    for node in ast.walk(tree):
        if isinstance(node, ast.AugAssign):
            return ast.unparse(node.target)
        if isinstance(node, ast.Assign) and isinstance(node.targets[0], ast.Subscript):
            return ast.unparse(node.targets[0].value)
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and \
                node.func.attr.endswith("_") and not node.func.attr.startswith("_"):
            return ast.unparse(node.func.value)
    return ""


def _bound_result(text: str, name: str) -> str:
    """The name a statement binds the written tensor to, when it writes in place a value no
    name holds (``fea = conv(x).unsqueeze_(1)``: an in-place method returns the tensor it
    wrote, so ``fea`` is that tensor); else ``name``."""
    import ast

    try:
        tree = ast.parse(text.strip())
    except SyntaxError:
        return name
    statement = tree.body[0] if tree.body else None
    if not isinstance(statement, ast.Assign) or len(statement.targets) != 1 or \
            not isinstance(statement.targets[0], ast.Name):
        return name
    call = statement.value
    if not (isinstance(call, ast.Call) and isinstance(call.func, ast.Attribute) and
            call.func.attr.endswith("_") and not call.func.attr.startswith("_")):
        return name
    receiver = call.func.value
    if isinstance(receiver, (ast.Name, ast.Attribute, ast.Subscript)) or \
            ast.unparse(receiver) != name:
        return name  # a name (or a part of one) written: named as itself
    return statement.targets[0].id


def _blank() -> Any:
    from .carriers import Carrier

    return Carrier("", "", 0, "", "", "written")


def _made_before_training(carrier: Any, evidence: dict) -> bool:
    """Whether the recording shows the carrier's graph made once, before any backward call or
    optimizer step, by a statement of the program's top level outside every loop, and the
    failing call in a loop of that file, or the failing call made by the same line as the call
    that freed the graph, as recorded (a training step's function called by a loop: a tensor
    computed up front and reused by the loop's steps, not a batch a generator makes in each
    round, nor two losses of one forward)."""
    from ..source.edits import Source

    built = ((evidence.get("node") or {}).get("built") or {})
    got = carrier.got
    if not got or built.get("backward_calls") != 0 or built.get("steps") != 0:
        return False
    source = Source.read(got["file"])
    statement = source.statement_at(got["line"]) if source else None
    at = evidence.get("at") or {}
    failing = source.statement_at(at["line"]) if source and at.get("file") == got["file"] and \
        at.get("line") else None
    freeing = (((evidence.get("node") or {}).get("freed_by") or {}).get("user") or {})
    number = (((evidence.get("node") or {}).get("freed_by") or {}).get("number"))
    stepped = number is not None and any(s["after_backward_calls"] >= number
                                         for s in evidence.get("steps", []))
    again = bool(at.get("line")) and stepped and \
        (freeing.get("file"), freeing.get("line")) == (at.get("file"), at.get("line"))
    # (a step between: the loop's next training step, not losses of one forward in turn)
    return statement is not None and source.scope_at(statement.lineno) is source.tree and \
        source.loop_of(statement) is None and (again or (
            failing is not None and source.loop_of(failing) is not None))
    # the failing call in a loop it was made before, or run again by the line that freed it


def _first_run_of_the_failing_call(carrier: Any, evidence: dict) -> bool:
    """Whether the recording shows the failing call's statement never run before, and the
    carrier made by the failing call's own function, before the call that freed its graph: a
    value of this very pass, which another backward (of a loss computed from it) went through
    first; no earlier step kept it."""
    got, at = carrier.got, evidence.get("at") or {}
    freed = (evidence.get("node") or {}).get("freed_by") or {}
    built = (evidence.get("node") or {}).get("built") or {}
    if not got or not at or not freed.get("number") or built.get("backward_calls") is None:
        return False
    earlier = [b for b in evidence.get("backwards", []) if b["number"] < evidence.get("call", 0)
               and (b.get("file"), b.get("line")) == (at.get("file"), at.get("line"))]
    return not earlier and built["backward_calls"] < freed["number"] and \
        (got["file"], got.get("qualname", got["function"])) == \
        (at["file"], at.get("qualname", at["function"]))


def _entered_statements(evidence: dict) -> list[tuple[Any, Any]]:
    """(source, statement) of each statement where the recording shows an older value entering
    the failing graph, each file read once."""
    from ..source.edits import Source

    sources = {site["file"]: Source.read(site["file"]) for site in evidence.get("entered") or ()}
    return [(source, statement) for site in evidence.get("entered") or ()
            for source in [sources[site["file"]]] if source is not None
            for statement in [source.statement_at(site["line"])] if statement is not None]


def _read_where_entered(carrier: Any, entered: list[tuple[Any, Any]]) -> bool:
    """Whether one of the ``entered`` statements reads the carrier (by its name or the name the
    recording gives it)."""
    return any(source.reads(statement, name) for source, statement in entered
               for name in {carrier.name, carrier.shown} - {""})


def _entering_first(carriers: list, evidence: dict, freed: dict) -> list:
    """``carriers`` with those that a statement where the recording shows an older value enter
    the failing graph reads (``start = track.pose.inverse()``) first; a name that no such
    statement reads, which the recording shows given, where the report gives it, a tensor made
    after the call that freed the graph (``track.view``, computed in this step from the new
    pose), is left out: it did not bring the old graph in."""
    if any(holds_freed(c, evidence) for c in carriers):
        return carriers  # the recording names the holder of a freed node: it stands first
    entered = _entered_statements(evidence)
    read = [_read_where_entered(c, entered) for c in carriers]
    if not any(read):  # they enter inside a function the step calls: a name that brought an
        # older value into this step comes before one only computed in it from that value
        return sorted(carriers, key=lambda c: _DERIVED in c.why)
    if all(read):
        return carriers
    return [c for c, r in zip(carriers, read) if r] + \
        [c for c, r in zip(carriers, read) if not r and not _made_after_freeing(c, evidence, freed)]


def _accumulated_in_this_step(finding: Any, carriers: list) -> bool:
    """Whether the carrier the first run decided a running total from is, as recorded,
    computed in this step (made after the call that freed the graph) or no carrier at all, and
    the first carrier now is an attribute that its object keeps from earlier calls (a method
    reads it before it assigns it)."""
    first = finding.carriers[0] if finding.carriers else None
    said = next((c for c in carriers if first is not None and c.name == first.name and
                 c.line == first.line), None)
    top = carriers[0] if carriers else None
    return first is not None and (said is None or _DERIVED in said.why) and \
        top is not None and top is not said and top.name != first.name and \
        top.origin == "attribute" and top.entry == "kept"


def _made_after_freeing(carrier: Any, evidence: dict, freed: dict) -> bool:
    """Whether the recording shows the tensor the carrier's name holds made, by the statement
    the report gives it at, after the call that freed the graph."""
    made = carrier.got
    names = {carrier.name, carrier.shown} - {""}
    return made is not None and any(
        h["name"] in names and (h.get("backward_calls") or 0) >= freed["number"] and
        (h.get("built") or {}).get("line") == made["line"]
        for h in evidence.get("holders", []))


def _made_in_an_earlier_pass(carrier: Any, evidence: dict) -> bool:
    """Whether the recording shows the node whose saved tensors were freed made, before the
    call that freed them, by a statement of the innermost loop that runs the failing call (a
    frame of the call chain that made it runs that loop's body), and the carrier given at a
    statement of that loop too: a value of an earlier pass of that loop, kept into this one,
    not a tensor computed once before the loop (nor one made before it that computes a part
    lazily on its first use in the loop, as a distribution its logits)."""
    from ..source.edits import Source

    node, at = evidence.get("node") or {}, evidence.get("at") or {}
    built, freed = node.get("built") or {}, node.get("freed_by") or {}
    if not built.get("user") or not at.get("line") or not freed.get("number") or \
            built.get("backward_calls") is None or built["backward_calls"] >= freed["number"] or \
            not carrier.got:
        return False
    source = Source.read(at["file"])
    failing = source.statement_at(at["line"]) if source else None
    loop = source.loop_of(failing) if failing is not None else None
    if loop is None:
        return False
    scope = source.scope_at(loop.lineno)

    def in_loop(frame: dict) -> bool:
        return frame["file"] == at["file"] and loop.lineno < frame["line"] <= loop.end_lineno \
            and source.scope_at(frame["line"]) is scope

    return in_loop(carrier.got) and any(in_loop(frame) for frame in
                                        [built["user"], *built.get("chain", [])])


def _kept_before_loop(carrier: Any, evidence: dict) -> bool:
    """Whether the recording shows the carrier kept under its name by a statement that assigns
    it (``targ = hook.features``) at the program's top level, outside every loop, and the
    failing call in a loop of that file after it: one tensor, assigned once, that every pass of
    the loop reads again (whatever made its node, earlier)."""
    from ..source.edits import Source

    kept, at = carrier.kept, evidence.get("at") or {}
    if not kept or kept["file"] != at.get("file") or not at.get("line"):
        return False
    source = Source.read(kept["file"])
    statement = source.statement_at(kept["line"]) if source else None
    failing = source.statement_at(at["line"]) if source else None
    loop = source.loop_of(failing) if failing is not None else None
    return statement is not None and loop is not None and \
        source.scope_at(statement.lineno) is source.tree and \
        source.loop_of(statement) is None and statement.lineno < loop.lineno


def _made_from_itself(carrier: Any) -> bool:
    """Whether the statement the replay recorded as making ``carrier``'s graph computes it
    from its own earlier value (``self.hidden = self.lstm(x, self.hidden)``): a state carried
    from one call into the next, not a part shared by two losses of one forward."""
    from .scene import self_fed

    made = carrier.got
    return made is not None and self_fed(made["file"], made["line"], carrier.shown or carrier.name)


def holding_itself(carriers: list, evidence: dict, freed: dict | None) -> list:
    """Carriers for the names that hold, at the failing call, a node whose saved tensors were
    freed (the node itself, not a later one computed from it), when each of ``carriers`` (the
    source's) holds a node that the call which freed them did not go through (a loss computed
    before it from the shared part, as recorded): each named where its scope runs at the failure, marked ``held``
    (no edit is derived from it). None when the recording shows no such name, or when the
    backward that freed the graph is not known."""
    from .carriers import Carrier

    freed_nodes = set(evidence.get("freed_nodes") or ())
    holders = recorded_names(evidence)
    itself = [h for h in holders if h.get("number") in freed_nodes and h.get("file")]
    if freed is None or not itself:
        return []
    for carrier in [] if evidence.get("nested") else carriers:
        # a carrier of the source's whose node that call went through (the source reads the
        # program around the failing call; not for a call a custom Function's backward runs)
        same = [h for h in holders if held_as(carrier.name, h["name"])]
        if not same or any(h.get("went") is not False for h in same):
            return []  # (or one the recording cannot place): the source's reading stands
    found, seen = [], set()
    for holder in itself:
        name = _written(holder["name"])
        if name in seen:
            continue
        seen.add(name)
        carrier = got(Carrier(
            name=holder["name"], file=holder["file"], line=holder["now"],
            function=function_of(holder), kind="old",
            why=(f"is held here, at the failing call, and its tensor's node is itself one whose "
                 f"saved tensors backward call {freed['number']} at {_at(freed['user'])} "
                 "freed"),
            origin="attribute" if "." in name.split("[")[0] else
            "list" if "[" in name else "variable", held=True), holders)
        found.append(dataclasses.replace(carrier, name=name, shown=_written(carrier.shown)))
    return found


def _written(name: str) -> str:
    """A recorded name as the source writes it: ``net.2.weight`` is ``net[2].weight``."""
    return re.sub(r"\.(\d+)(?=\.|$|\[)", r"[\1]", name)


def _earlier_said(carrier: Any, freed: dict) -> Any:
    """A carrier's reason with the earlier call that freed the graph as recorded, and no claim
    about where the source assigns it (a loop) that the recording does not show."""
    why = carrier.why
    start = why.find("the backward at ")
    if start < 0:
        start = why.find("the autograd.grad at ")
    if start >= 0:
        end = why.find(" already went through", start)
        if end > 0:
            why = why[:start] + f"the backward at {_at(freed['user'])}" + why[end:]
    return _unlooped(dataclasses.replace(carrier, why=why))


def _unlooped(carrier: Any) -> Any:
    """A carrier's reason without the claim that the source assigns it only before a loop: the
    recording does not show loops."""
    return _rewhy(carrier, "; it is assigned only before the loop, and enters", "; it enters")


_READ_FIRST = "is read here before it is assigned, so it brings in "
_DERIVED = "is computed in this step from "


def _made_after(carrier: Any, evidence: dict, freed: dict) -> Any:
    """A carrier said to be read before it is assigned (a value from before this step), where
    the recording shows the tensor its function's name holds made after the call that freed the
    graph, by a statement before the line it is read at: it was assigned in this step, and
    computed from the old graph."""
    made = carrier.got
    if _READ_FIRST not in carrier.why or made is None or made["file"] != carrier.file or \
            made["line"] >= carrier.line:  # (``out, h = rnn(x, h)``: the line that reads it
        return carrier  # made the value it holds now; what it read came from before)
    later = [h for h in evidence.get("holders", []) if h["name"] == carrier.name and
             h["file"] == carrier.file and h.get("qualname", "").split(".")[-1] ==
             carrier.function and (h.get("backward_calls") or 0) >= freed["number"]]
    return dataclasses.replace(carrier, why=carrier.why.replace(_READ_FIRST, _DERIVED)) \
        if later else carrier


def _library_line(write: dict) -> list[str]:
    lib = write.get("library")
    return [f"The write runs in a library, at {_at(lib)} in {lib['function']} "
            f"(`{lib['text']}`), called from your line above."] if lib else []


def _held_line(evidence: dict) -> list[str]:
    held = [w["name"] for w in evidence.get("written", [])]
    return ["The tensor written is held by: " + ", ".join(
        f"`{n}`" for n in dict.fromkeys(held)) + "."] if held else []


def _hidden_lines(evidence: dict) -> list[str]:
    """The recorded write when no node the graph shows holds the saved tensor (see
    :func:`autograd_lens.run.record_evidence.evidence`): what was recorded, and what was not."""
    write, pieces = evidence["write"], evidence.get("copy_slices", 0)
    views = (f"; the graph has {_calls(pieces, 'CopySlices node')} (in-place writes into "
             "views), which keep the node of the operation they wrap out of reach"
             if pieces else "")
    shape = ", ".join(str(n) for n in write["shape"])
    return [f"Recorded in a replay: a write took a tensor of the reported size [{shape}] from "
            f"version {write['version'] - 1} to {write['version']}, and its last write left it "
            f"at the version the error reports; no node the recording can read holds the "
            f"saved tensor{views}, so the save itself is not recorded."] + \
        _library_line(write) + \
        ([f"That write is optimizer step {write['in_step']} itself."]
         if write.get("in_step") is not None else []) + _held_line(evidence)


def recorded_lines(finding: Any) -> list[str]:
    """What the replay recorded, as lines for the text (empty without a recording)."""
    evidence = getattr(finding, "evidence", None)
    if not getattr(finding, "recorded", False) or evidence is None:
        return []
    node = evidence.get("node")
    if node is None and evidence.get("write") is not None:
        return _hidden_lines(evidence)
    if node is None:
        return ["Recorded in a replay: the failing call, but no node of its graph holds a "
                "saved tensor in the error's state."]
    built = node.get("built") or {}
    made = (f"built at {_at(built.get('user'))} (`{built['user']['text']}`) after "
            f"{_calls(built['backward_calls'], 'backward call')} and "
            f"{_calls(built['steps'], 'optimizer step')}") if built.get("user") else \
        "built where the recording does not show"
    lines = []
    if evidence["kind"] == "modified":
        lines.append(f"Recorded in a replay: {node['name']} (slot {node['slot']}) was {made}.")
        write = evidence.get("write")
        if write is None:
            return lines + ["The recording shows no write of the saved tensor after the save."]
        lines += _library_line(write)
        if write.get("in_step") is not None:
            lines.append(f"That write is optimizer step {write['in_step']} itself.")
        else:
            lines.append(f"Between the save and that write: "
                         f"{_calls(write['backward_calls'], 'backward call')} and "
                         f"{_calls(write['steps'], 'optimizer step')} ran.")
        return lines + _held_line(evidence)
    freed = node.get("freed_by")
    lines.append(f"Recorded in a replay: {node['name']} (slot {node['slot']}) was {made}; " + (
        f"backward call {freed['number']} at {_at(freed['user'])} (`{freed['user']['text']}`) "
        f"freed its saved tensors." if freed and freed.get("user") else
        "the recording does not show which backward call freed it."))
    holders = list(dict.fromkeys(h["name"] for h in evidence.get("holders", [])))
    if holders:
        lines.append("Still held, at the failing call, by: " +
                     ", ".join(f"`{n}`" for n in holders[:6]) + ".")
    return lines
