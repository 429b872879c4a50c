"""How a carrier's reason says what made its graph old: an earlier call (where the program made
it), a call the failing backward ran itself, or an in-place write."""

from __future__ import annotations

from typing import Any

from ..lens.history import Call
from ..source.places import place


def _earlier(call: Call | None) -> str:
    what = "autograd.grad" if call is not None and call.kind == "grad" else "backward"
    if call is None or not call.where[0]:  # not recorded where (the command's first run)
        return f"an earlier {what}"
    return f"the {what} at {place(call.where[0], call.where[2], call.cell)}"


def said(calls: list[Call], inplace: bool, write: Any, inside: Any = ()) -> str:
    """The old graph, said as what made it old: an earlier call, or an in-place write; a call
    among ``inside`` was run by the failing backward's outermost call itself (a reentrant
    checkpoint's backward, a custom Function's autograd.grad)."""
    if write is not None:  # the tensor by its name, the write by its line
        what = "a graph one of whose saved tensors" if not write.name else \
            f"a graph one of whose saved tensors, a weight of `{write.name}`," \
            if write.weight and write.how != "op" else \
            f"a graph whose saved tensor `{write.name}`"
        by = f" by `{write.text}` at {write.where()}" if write.line else ""
        return f"{what} was changed in place afterwards{by}"
    since = " (its saved tensors were modified in place since)" if inplace else ""
    latest = calls[0] if calls else None
    if latest is not None and any(latest is call for call in inside):
        return (f"a graph that an earlier backward run inside this one (by a checkpoint or a "
                f"custom Function) already went through{since}")
    return f"a graph that {_earlier(latest)} already went through{since}"
