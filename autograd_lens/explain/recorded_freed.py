"""The freed-graph error's carriers as the replay recorded them: a name that holds a freed node
itself, the earlier call said as recorded, a value said to be read before it is assigned that the
recording shows made in this step, the names through which an older value enters first; and what
the recording shows of where a carrier was made (once before training, before the loop, in an
earlier pass of the loop, from its own earlier value), which decides the pattern and the page."""

from __future__ import annotations

import dataclasses
from typing import Any

from .carrier_origin import got
from .held_names import function_of, held_as, holds_freed, recorded_names
from .recorded_lines import _at
from .recorded_write import _written


_READ_FIRST = "is read here before it is assigned, so it brings in "


_DERIVED = "is computed in this step from "


def _rewhy(carrier: Any, old: str, new: str) -> Any:
    return dataclasses.replace(carrier, why=carrier.why.replace(old, new)) if old in carrier.why \
        else carrier


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


def _made_before_training(carrier: Any, evidence: dict) -> bool:
    """Whether the recording shows the carrier's graph made once, before any backward call or
    optimizer step, by a statement of the program's top level outside every loop, and the
    failing call in a loop of that file, or the failing call made by the same line as the call
    that freed the graph, as recorded (a training step's function called by a loop: a tensor
    computed up front and reused by the loop's steps, not a batch a generator makes in each
    round, nor two losses of one forward)."""
    from ..source.source_file import Source

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
    from ..source.source_file import Source

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
    from ..source.source_file import Source

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
    from ..source.source_file import Source

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
    from .scene_lines import self_fed

    made = carrier.got
    return made is not None and self_fed(made["file"], made["line"], carrier.shown or carrier.name)


def holding_itself(carriers: list, evidence: dict, freed: dict | None) -> list:
    """Carriers for the names that hold, at the failing call, a node whose saved tensors were
    freed (the node itself, not a later one computed from it), when each of ``carriers`` (the
    source's) holds a node that the call which freed them did not go through (a loss computed
    before it from the shared part, as recorded): each named where its scope runs at the failure, marked ``held``
    (no edit is derived from it). None when the recording shows no such name, or when the
    backward that freed the graph is not known."""
    from .carrier import Carrier

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

