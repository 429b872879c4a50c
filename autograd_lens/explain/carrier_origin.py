"""Where each carrier of the freed-graph error got the graph that was freed, from the replay's
recording (:mod:`autograd_lens.run.holders`: the user's names that hold a freed graph at the
failure, and the call chain of the statement that made each one's node), and whether the
recording shows losses of one forward backpropagated in turn. See
:func:`autograd_lens.explain.recorded.amend`, which uses them.
"""

from __future__ import annotations

import ast
import dataclasses
from typing import Any


def in_turn(carriers: list, evidence: dict, freed: dict) -> bool:
    """Whether the recording shows losses of one forward backpropagated in turn: the first
    carrier was made (``got``) in a loop whose body holds an inner loop, and the backward call
    of that inner loop both freed its graph and failed on it (each pass of the outer loop
    computes it once; each pass of the inner one backpropagates a loss over it)."""
    from ..source.source_file import Source

    got, at = (carriers[0].got if carriers else None), evidence.get("at")
    if not got or not at or not freed.get("user") or got["file"] != at["file"] or \
            (freed["user"]["file"], freed["user"]["line"]) != (at["file"], at["line"]):
        return False
    source = Source.read(at["file"])
    made = source.statement_at(got["line"]) if source else None
    failing = source.statement_at(at["line"]) if source else None
    outer = source.loop_of(made) if made is not None else None
    inner = source.loop_of(failing) if failing is not None else None
    return outer is not None and inner is not None and inner is not outer and \
        outer.lineno < inner.lineno and inner.end_lineno <= outer.end_lineno and \
        not (inner.lineno <= made.lineno <= inner.end_lineno)


def got(carrier: Any, holders: list[dict]) -> Any:
    """``carrier`` with the line where it got the graph that was freed, as recorded: the
    statement, in the scope that holds the name, that was running when the node its tensor
    holds was made; for an attribute, the innermost method of the attribute's object in the
    call chain that made that node (the carrier then named there: ``self.cache_k``); for a name handed
    in by a caller (its scope was not running then), the caller's name that holds the same
    tensor, in the scope that made it (for ``args`` of ``*args``, whose entries the recording
    lists, the entry's when they hold one node); for an attribute that no method of its object
    made, the statement of the function that made its node that gives it the attribute's own
    name (``w2c = ...`` for ``scene.w2c``). Unchanged when the recording shows none of
    these."""
    same = [h for h in holders if h["name"] == carrier.name and h.get("built")]
    if not same and carrier.name.startswith("self."):  # the same attribute path, from outside
        same = [h for h in holders if h["name"].endswith(carrier.name[4:]) and h.get("built")]
    if not same:  # a tuple or list of arguments (``*args``) whose entries hold one node
        same = [h for h in holders if h["name"].startswith(carrier.name + "[") and
                h["name"].count("[") == 1 and h.get("built") and h["scope"] ==
                f"{carrier.function}()"]
        # (one node, or one statement that made them all: an LSTM cell's (h, c))
        same = same if len({h.get("number") for h in same}) == 1 or len(
            {(h["built"]["file"], h["built"]["line"]) for h in same}) == 1 else []
    same.sort(key=lambda h: h["scope"] != f"{carrier.function}()")  # the carrier's scope first
    for holder in same:
        frames = [holder["built"], *holder.get("callers", [])]
        root = carrier.name.split("[")[0]
        if "." in root and holder.get("owner"):  # an attribute: the method that made its node
            # (or called the function that made it: a forward that stores what a helper made)
            methods = [f for f in frames
                       if f.get("qualname", "").rpartition(".")[0] == holder["owner"]]
            shown = "self." + root.rsplit(".", 1)[1] + carrier.name[len(root):]
            method = next((f for f in methods if _stores(f, shown)), None) or \
                next((f for f in methods if _stores_entry_later(f, shown)), None) or \
                next(iter(methods), None)  # the method whose statement stores it, if one does
            if method is not None:
                return _at_got(carrier, method, shown)
        site = _running(frames, holder)
        if site is not None and "." not in root:
            # a global's entry that a function it called stores, or a name that the function
            # which made the tensor gave it too (``stylecode = self.mapping(z)`` in ``forward``)
            site = next((f for f in frames[:frames.index(site)] if _stores(f, carrier.name) and
                         ("[" not in carrier.name and not _argument_of(f, root) or
                          site["function"] == "<module>" and _global_in(f, root))), site)
        if site is not None and root.startswith("self.") and holder.get("owner") and \
                ("[" not in carrier.name or '["' in carrier.name and
                 holder["name"].endswith(carrier.name[4:])) and \
                not holder["name"].startswith("self."):
            # (a dict's named entry too; a list's entry is named by its list, below)
            # no method of the attribute's object made it: named as the scope that did holds it,
            # by the name the making statement assigns when it holds the same tensor (``Y`` of
            # ``Y = X @ w``, later kept as ``loader.Y``)
            return _at_got(carrier, site, next(
                (o["name"] for o in holders if o is not holder and o.get("number") ==
                 holder.get("number") and _stores(site, o["name"])), holder["name"]))
        if site is not None and "." in carrier.name and not root.startswith("self.") and \
                not _stores(site, carrier.name):
            # named as the program wrote it: another attribute path of the same tensor, which
            # the making statement stores (``viewpoint_cam.pose = ...`` for ``cams[0].pose``)
            # or a later statement keeps (``sensor.offset = corrected``)
            aliases = list(dict.fromkeys(
                o["name"] for o in holders if "." in o["name"] and o["name"] != carrier.name and
                o.get("number") == holder.get("number")))
            stored = next((a for a in aliases if _stores(site, a)), None)
            if stored is not None:
                return _at_got(carrier, site, stored)
            later = [found for found in (_at_got(carrier, site, a) for a in aliases)
                     if found.kept is not None]
            if len(later) == 1:
                return later[0]
        if site is not None and "." in root and "[" not in carrier.name:
            # an attribute that no method of its object made: the function that made its node
            # gave it the attribute's own name there (``w2c = ...``, later kept as ``scene.w2c``)
            attribute = root.rsplit(".", 1)[1]
            inner = next((f for f in frames[:frames.index(site)] if _stores(f, attribute)), None)
            if inner is not None:
                return _at_got(carrier, inner, attribute)
        if site is not None:
            return _at_got(carrier, site, _whole(carrier.name, holder, holders, site))
        for other in holders:  # handed in: the name that holds it where it was made
            if other is not holder and other.get("number") == holder.get("number") and \
                    other["scope"] != holder["scope"] and \
                    (other.get("now") is not None or other["scope"].startswith("module ")) and \
                    "." not in other["name"].split("[")[0]:  # a caller's own name
                site = _running([other["built"], *other.get("callers", [])], other)
                if site is not None:
                    return _at_got(carrier, site, other["name"])
    return carrier


def _stores(site: dict, path: str) -> bool:
    """Whether the statement at ``site`` assigns ``path``."""
    from ..source.source_file import Source, targets

    source = Source.read(site["file"])
    statement = source.statement_at(site["line"]) if source else None
    return statement is not None and path in targets(statement)


def _entry_stores(scope: ast.AST, source: Any, name: str) -> list[tuple[ast.stmt, str]]:
    """The statements of ``scope`` that store an entry of the container of ``name`` (an entry,
    ``self.cache["ade"]``) under a key the source computes (``self.cache[self.dataset]``),
    each with its target as written."""
    from ..source.source_file import path_of

    container = name.split("[")[0]
    found = []
    for statement in source.statements(scope) if "[" in name else ():
        for target in getattr(statement, "targets", []):
            if isinstance(target, ast.Subscript) and path_of(target.value) == container:
                found.append((statement, source.segment(target)))
    return found


def _stores_entry_later(site: dict, name: str) -> bool:
    """Whether the function running at ``site`` stores an entry of ``name``'s container after
    the line it runs at (``self.cache[key] = feats`` after ``feats = self.encode(...)``)."""
    from ..source.source_file import Source

    source = Source.read(site["file"])
    return source is not None and any(
        statement.lineno > site["line"]
        for statement, _ in _entry_stores(source.scope_at(site["line"]), source, name))


def _global_in(site: dict, name: str) -> bool:
    """Whether ``name`` is a global of the function running at ``site`` (neither an argument
    nor a local of it)."""
    from ..source.bound_names import binds
    from ..source.source_file import Source

    source = Source.read(site["file"])
    return source is not None and not binds(source.scope_at(site["line"]), name)


def _argument_of(site: dict, name: str) -> bool:
    """Whether ``name`` is an argument of the function running at ``site`` (a state handed in
    and bound again there is the caller's to change, where it hands it in)."""
    from ..source.bound_names import arguments_of
    from ..source.source_file import Source

    source = Source.read(site["file"])
    return source is not None and \
        name in arguments_of(source.scope_at(site["line"]), starred=False)


def kept(carrier: Any) -> Any:
    """``carrier`` with the statement that keeps its recorded tensor under its name, when the
    statement that made the tensor's node (``got``) assigned it to another name: the one
    assignment, in the same function, of that name's value to the carrier's name (``state =
    pred`` after ``pred = state + step(state)``; ``self.h = h`` after the loop that made
    ``h``); where ``got`` assigns no name (``net(x)``, whose forward hook keeps the output on
    an object), the one later assignment of the name in that function (``feats =
    hook.features``), and so where the name is assigned later from an object whose method
    ``got`` called (``int_mat = data.frac.int_mat`` after ``x = data.next_batch()``). Unchanged when ``got`` assigns the name itself, or when no one such
    assignment is found."""
    from ..source.source_file import Source, path_of, targets

    got, name = carrier.got, carrier.shown or carrier.name
    source = Source.read(got["file"]) if got else None
    made = source.statement_at(got["line"]) if source else None
    if made is None or name in targets(made) or "[" in name and not _entry_stores(
            source.scope_at(made.lineno), source, name):
        return carrier
    made_names = set(targets(made))
    # objects whose method the statement called (``data`` of ``data.next_batch()``), which
    # may have kept what it made on them, read back later (``w = data.frac.w``)
    called = {(path_of(n.func.value) or "").split(".")[0] for n in ast.walk(made)
              if isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute)} - {""}
    stores = [s for s in source.stores(source.scope_at(made.lineno), name)
              if isinstance(s, ast.Assign) and len(s.targets) == 1 and s.lineno == s.end_lineno
              and (path_of(s.value) in made_names or s.lineno > made.lineno and (
                  not made_names or "." in (path_of(s.value) or "") and
                  path_of(s.value).split(".")[0] in called))]
    written = None
    if not stores and "[" in name:  # an entry stored under a key the source computes
        entries = [(s, text) for s, text in _entry_stores(source.scope_at(made.lineno), source,
                                                          name)
                   if s.lineno > made.lineno and isinstance(s, ast.Assign) and
                   len(s.targets) == 1 and path_of(s.value) in made_names]
        stores, written = [s for s, _ in entries], (entries[0][1] if len(entries) == 1 else None)
    if len(stores) != 1:
        return carrier
    keep = stores[0]
    kept_at = {"file": got["file"], "line": keep.lineno, "function": got["function"],
               "text": source.segment(keep)}
    return dataclasses.replace(carrier, kept=dict(kept_at, name=written) if written else kept_at)


def _whole(name: str, holder: dict, holders: list[dict], site: dict) -> str:
    """The list (or the dict of several entries) for its entry ``name`` when every entry of it
    holds a graph freed by now and its nodes were made by the one statement ``site``
    (``targ_styles`` for ``targ_styles[0]`` in ``targ_styles = [gram(f) for f in feats]``),
    else ``name``."""
    root = name.split("[")[0]
    if name == root or name[len(root):].count("[") != 1 or "." in root or \
            not holder.get("entries") or (holder["entries"] < 2 and '["' in name):
        return name  # (a dict of one entry: its key says more than the dict's name)
    made = {h["name"] for h in holders if h["name"].split("[")[0] == root and
            h["name"].count("[") == 1 and h["scope"] == holder["scope"] and
            _running([h["built"], *h.get("callers", [])], h) == site}
    return root if len(made) == holder["entries"] else name


def _running(frames: list[dict], holder: dict) -> dict | None:
    """The frame of ``frames`` that runs the code of ``holder``'s scope, or None."""
    return next((f for f in frames if f.get("qualname", f["function"]) ==
                 holder.get("qualname", holder["scope"][:-2]) and
                 (not holder.get("file") or f["file"] == holder["file"])), None)


def _entry_written_at(site: dict, name: str) -> str:
    """The target as the statement at ``site`` writes it when it stores the entry ``name``
    (``self.ab["cpu"]``) under a key it computes (``self.ab[device_key] = ...``), else ""."""
    from ..source.source_file import Source

    source = Source.read(site["file"]) if "[" in name else None
    made = source.statement_at(site["line"]) if source else None
    if made is None:
        return ""
    written = [text for statement, text in _entry_stores(source.scope_at(made.lineno), source,
                                                         name) if statement is made]
    return written[0] if len(written) == 1 and written[0] != name else ""


def _at_got(carrier: Any, site: dict, shown: str) -> Any:
    shown = _entry_written_at(site, shown) or shown
    found = kept(dataclasses.replace(carrier, got=site,
                                     shown=shown if shown != carrier.name else ""))
    if found.kept is None and \
            (site["file"], site["line"], shown) == (carrier.file, carrier.line, carrier.name):
        return carrier
    return found
