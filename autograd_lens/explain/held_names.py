"""The freed-graph error's carriers ordered and named by what the replay recorded.

:mod:`autograd_lens.run.holders` lists, at the failing call, the user's names whose graph
reaches a node whose saved tensors were freed (``holders``, ``carrying``), and for each whether
its own node lies in the graph of the call that freed them (``went``). The source's reading
(:mod:`autograd_lens.explain.carriers`) ranks every name that enters the step; the recording then
decides (:func:`by_recording`):

* a carrier the recording shows holding a freed node, or a node the freeing call went through,
  comes before one it shows holding only a later node (the loss being backwarded), and both
  before one it does not list;
* a plain name of the failing call's own scope that holds a tensor, which the recording walked
  and does not list, is dropped: its graph reaches no freed node, so "it holds a graph that
  the earlier backward went through" would be false.

An entry of a list that carries the graph is named by the list the program holds
(:func:`as_container`: ``self.memory`` for ``self.memory[1]``, the entry kept as detail), at
the one statement of the file that puts entries into that list when the source has exactly
one (``self.memory.append(...)``), and when the replay recorded where the entry's node was
made, only if it is that statement, or if that statement is in a module's forward hook (the
hook keeps what the module's call made), or appends the name the statement that made the node
assigned, later in the same function (``buffer.append(loss)`` after ``loss = ...``): named there,
as the statement that keeps it; the edits keep the entry's own name and line.
"""

from __future__ import annotations

import ast
import dataclasses
import re
from typing import Any

_ENTRY = re.compile(r"([A-Za-z_]\w*(?:\.[A-Za-z_]\w*)*)\[(\d+)\]")
_PUTS = ("append", "extend", "insert")
_HOOKS = ("register_forward_hook", "register_forward_pre_hook")


def recorded_names(evidence: dict | None) -> list[dict]:
    """Every name the recording lists: those holding the failing node's graph (``holders``),
    then those reaching only another freed node of it (``carrying``)."""
    return list((evidence or {}).get("holders") or []) + \
        list((evidence or {}).get("carrying") or [])


def held_in(evidence: dict | None, frame: dict | None = None) -> list[dict]:
    """The recorded holders that are names of one frame (``frame``: a recorded site with
    ``file``, ``qualname`` and ``line``; the failing call's, ``at``, by default), as it ran at
    the failure."""
    frame = frame if frame is not None else (evidence or {}).get("at") or {}
    return [h for h in (evidence or {}).get("holders", []) if
            (h.get("file"), h.get("qualname"), h.get("now")) ==
            (frame.get("file"), frame.get("qualname"), frame.get("line"))]


def function_of(holder: dict) -> str:
    """The function whose frame holds a recorded name (its ``scope`` without the ``()``)."""
    return holder["scope"][:-2] if holder["scope"].endswith("()") else holder["scope"]


def held_as(name: str, recorded: str) -> bool:
    """Whether a carrier of the source (``self.scale``, ``net[2].weight``) is the recorded name
    (``model.1.scale``: the same attribute seen from outside; ``net.2.weight``)."""
    recorded = re.sub(r"\.(\d+)(?=\.|$|\[)", r"[\1]", recorded)
    return name == recorded or (name.startswith("self.") and recorded.endswith(name[4:]))


def holds_freed(carrier: Any, evidence: dict) -> bool:
    """Whether the recording shows the carrier's name holding a freed node, or one the call
    that freed the graph went through."""
    return _rank(carrier, recorded_names(evidence), set(evidence.get("freed_nodes") or ())) == 0


def _rank(carrier: Any, holders: list[dict], freed: set) -> int:
    """0: held with a freed node or one the freeing call went through; 1: held with a later
    node only; 2: not listed by the recording."""
    same = [h for h in holders if held_as(carrier.name, h["name"])]
    if any(h.get("went") is True or h.get("number") in freed for h in same):
        return 0
    return 1 if same else 2


def by_recording(carriers: list, evidence: dict) -> list:
    """``carriers`` ordered by what the recording shows each holds (see the module's
    docstring); unchanged when the recording lists none of them."""
    holders = recorded_names(evidence)
    freed = set(evidence.get("freed_nodes") or ())
    ranks = [_rank(c, holders, freed) for c in carriers]
    if not carriers or min(ranks) > 1:
        return list(carriers)
    at = evidence.get("at") or {}
    kept = [(rank, i, c) for i, (rank, c) in enumerate(zip(ranks, carriers))
            if not (rank == 2 and c.form == "tensor" and re.fullmatch(r"[A-Za-z_]\w*", c.name)
                    and (c.file, c.function) == (at.get("file"), at.get("function")))]
    return [c for _, _, c in sorted(kept, key=lambda t: t[:2])]


def as_container(carrier: Any, holders: list[dict] = ()) -> Any:
    """A list entry's carrier (``self.memory[1]``) shown as its list, with the statement that
    puts entries into it when the file has exactly one such statement; with a recorded
    ``got``, only when that statement is in the recorded call chain that made the entry's node
    (``holders``), which then gives the line."""
    found = _ENTRY.fullmatch(carrier.name)
    if found is None or carrier.origin != "list" or carrier.shown:
        return carrier
    root = found.group(1)
    put = put_in(carrier.file, root, carrier.line)
    if carrier.got is None:
        return dataclasses.replace(carrier, shown=root, put=put)
    if put is None:
        return carrier
    chain = [f for h in holders if held_as(carrier.name, h["name"]) and h.get("built")
             for f in [h["built"], *h.get("callers", [])]]
    site = next((f for f in chain if (f["file"], f["line"]) == (put["file"], put["line"])),
                None)
    if site is None and chain and (in_a_hook(put) or _appends_made(put, carrier.got)):
        return dataclasses.replace(carrier, shown=root, kept=put)  # the statement keeping it
    if site is None:
        return carrier  # recorded as made elsewhere: named where it was made
    return dataclasses.replace(carrier, shown=root, put=put, got=site)


def _appends_made(put: dict, made: dict) -> bool:
    """Whether the statement ``put`` appends (extends, inserts) the very name that the
    statement ``made`` assigned, later in the same function (``buffer.append(loss)`` after
    ``loss = criterion(out, y)``), no other assignment of that name coming between."""
    from ..source.source_file import Source, path_of, targets

    source = Source.read(put["file"])
    if source is None or made["file"] != put["file"] or made["line"] >= put["line"]:
        return False
    putting, making = source.statement_at(put["line"]), source.statement_at(made["line"])
    if putting is None or making is None or \
            source.scope_at(putting.lineno) is not source.scope_at(making.lineno):
        return False
    calls = [n for n in ast.walk(putting) if isinstance(n, ast.Call) and
             isinstance(n.func, ast.Attribute) and n.func.attr in _PUTS and n.args]
    names = {path_of(a) for c in calls for a in c.args} & set(targets(making))
    return bool(names) and not any(
        making.lineno < s.lineno < putting.lineno
        for n in names for s in source.stores(source.scope_at(putting.lineno), n))


def in_a_hook(site: dict) -> bool:
    """Whether the statement ``site`` lies in a function that its file registers as a module's
    forward hook (``layer.register_forward_hook(keep)``; ``self.keep`` for a method): torch
    runs it after the module's forward, on what that call made."""
    from ..source.source_file import Source, path_of

    source = Source.read(site["file"])
    scope = source.scope_at(site["line"]) if source else None
    if not isinstance(scope, (ast.FunctionDef, ast.AsyncFunctionDef)):
        return False
    return any(isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) and
               n.func.attr in _HOOKS and n.args and
               path_of(n.args[0]) in (scope.name, f"self.{scope.name}")
               for n in ast.walk(source.tree))


def put_in(file: str, root: str, line: int = 0) -> dict | None:
    """The one statement of ``file`` that appends to, extends or inserts into the list
    ``root`` (an attribute matched by its last part, from any object: ``writer.bank`` for
    ``self.bank``; a plain name in the scope of ``line``), as a site dict, with the list's
    ``name`` as that statement writes it; None when there is none or more than one."""
    from ..source.source_file import Source, path_of

    source = Source.read(file)
    if source is None:
        return None
    last = root.rsplit(".", 1)[-1]
    sites: list[dict] = []
    for node in ast.walk(source.tree if "." in root else source.scope_at(line)):
        if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and
                node.func.attr in _PUTS):
            continue
        target = node.func.value
        if ("." in root and isinstance(target, ast.Attribute) and target.attr == last) or \
                ("." not in root and isinstance(target, ast.Name) and target.id == root):
            statement = source.statement_at(node.lineno)
            if statement is not None and statement.lineno not in [s["line"] for s in sites]:
                scope = source.scope_at(statement.lineno)
                sites.append({"file": file, "line": statement.lineno,
                              "function": getattr(scope, "name", "<module>"),
                              "text": source.text(statement.lineno).strip(),
                              "name": path_of(target) or root})
    return sites[0] if len(sites) == 1 else None
