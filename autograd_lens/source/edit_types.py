"""No edit calls a method that the carrier's value does not have.

A rule writes its edit from the source alone; the carrier's form (what its name held at the
failure: a tensor, a list, a dict, a tuple) says which methods exist. An edit calling
``total_loss.clear()`` on a tensor would fail as soon as it ran: such a fix is dropped, and the
next one (or none) is given instead.

>>> from types import SimpleNamespace as Carrier
>>> total = Carrier(name="total_loss", form="tensor")
>>> missing_method("    total_loss.clear()", [total])
'clear'
>>> missing_method("    losses.clear()", [Carrier(name="losses", form="list")]) is None
True
"""

from __future__ import annotations

import re
from typing import Any

import torch

_TYPES = {"tensor": torch.Tensor, "list": list, "dict": dict, "tuple": tuple,
          "nested tuple": tuple}


def missing_method(line: str, carriers: list[Any]) -> str | None:
    """The first method that ``line`` calls on a carrier whose form has no such method (None
    when every call fits, or the form is an object of a type not known here)."""
    for carrier in carriers:
        kind = _TYPES.get(getattr(carrier, "form", ""))
        if kind is None:
            continue
        pattern = rf"(?<![\w.]){re.escape(carrier.name)}\s*\.\s*(\w+)\s*\("
        for method in re.findall(pattern, line):
            if not hasattr(kind, method):
                return method
    return None


def fits(fix: Any, carriers: list[Any]) -> bool:
    """Whether no new line of ``fix`` calls a method the carrier's form does not have, or
    assigns a weight that a parametrization computes (its cache is what holds the graph). A
    call the replaced line already made is the program's own (``logits.append(...)`` on a
    list of that name in another function than the tensor's): it is not held against the
    edit."""
    computed = [c.name for c in carriers if getattr(c, "form", "") == "parametrized"]

    def new_call(line: str, old: str) -> bool:
        method = missing_method(line, carriers)
        return method is not None and method != missing_method(old, carriers)

    return not any(new_call(line, edit.old) or any(
        re.match(rf"\s*{re.escape(name)}\s*=[^=]", line) for name in computed)
        for edit in fix.edits for line in edit.new)
