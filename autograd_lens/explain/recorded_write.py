"""The in-place error's write as the replay recorded it: the tensor's name at the write (as the
statement writes it), what wrote it (the program's own operation, a module made with
``inplace=True``, an optimizer's step), the node that saved it and the line that built it; and the
carriers that the first run said were built before a step that, as recorded, did not write them."""

from __future__ import annotations

import dataclasses
import re
from typing import Any

from .held_names import held_in
from .writes import Write


def _write_of(old: Write | None, evidence: dict) -> Write | None:
    """The write as recorded, in the first run's form (what the edits read)."""
    found, node = evidence.get("write"), evidence.get("node") or {}
    if found is None or found.get("user") is None:
        return None
    made = (found.get("module_made") or {}).get("user") if found.get("module") else None
    if old is not None and old.module and old.line and found.get("library") and \
            _stem(found["op"]) in _stem(old.text) and (old.name or old.by):
        # the module made with inplace=True whose call made the recorded write
        return dataclasses.replace(old, made_at=_user_line(made), made_text=_call_text(made))
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
                 made_at=_user_line(made), made_text=_call_text(made),
                 trained=old is not None and old.trained,
                 next_lines=tuple((w["file"], w["line"]) for w in evidence.get("next_writes", [])),
                 saved_at=_user_line((node.get("built") or {}).get("user")),
                 saved_from=tuple(filter(None, (_user_line(f) for f in
                                                (node.get("built") or {}).get("chain", [])))),
                 later_lines=tuple((w["file"], w["line"])
                                   for w in evidence.get("later_writes", [])),
                 shares=shares)


def _call_text(site: dict | None) -> str:
    """A recorded line's source as one call reads (``nn.Dropout(0.25, inplace=True)``, an
    argument of a call that spans lines, without the comma that ends it), else ""."""
    return (site.get("text") or "").rstrip(",").strip() if site else ""


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
            "kind": "write", **write.made_entry()}


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
    from .carrier import Carrier

    return Carrier("", "", 0, "", "", "written")


def _written(name: str) -> str:
    """A recorded name as the source writes it: ``net.2.weight`` is ``net[2].weight``."""
    return re.sub(r"\.(\d+)(?=\.|$|\[)", r"[\1]", name)

