"""The in-place error explained as what it is: which tensor a node saved, and which write changed it.

When backward meets a saved tensor whose version counter moved since the node saved it, autograd
raises the in-place error. The graph still tells which node saved it (its slot reads as
``"modified"``), and the error's message gives the tensor's shape and its two versions. From
those, :func:`find_write` names the tensor as the program does (a variable, an attribute, or a
weight of a module, found among the user's frames by its version and size) and finds in the
source the write that changed it after it was saved:

* an in-place operation on that name (``probs += 1e-6``, ``h.relu_()``, ``self.queue[i] = k``);
* for a weight, the ``step()`` of the optimizer that holds it.

Nothing here runs the program again or records anything while it runs: the version counters
and the source are read at the moment of the failure.
"""

from __future__ import annotations

import re
import dataclasses
from dataclasses import dataclass
from typing import Any, Iterator

import torch

from ..lens.graph import node_name
from ..source.places import place
from .optimizer_steps import step_after
from ..source.source_writes import built_before, op_on, op_recorded, own_write, step_of, weight_op
from ..source.write_order import module_made_in_place, op_after_build
from .written_nodes import (base_writers, leaves_under, past_views, reaches, writers,
                            written_after)

_MESSAGE = re.compile(r"\[(?P<kind>[\w.]+) \[(?P<shape>[\d, ]*)\]\](?:, which is output \d+ of "
                      r"(?P<op>[\w:]+),)? is at version (?P<now>\d+); expected version "
                      r"(?P<then>\d+)")


@dataclass(frozen=True)
class Write:
    """What changed a saved tensor after a node saved it.

    Attributes:
        node: the node that saved it (``"SigmoidBackward0"``) and ``slot``, the slot's name.
        name: the tensor as the program names it (``probs``, ``self.queue``), or, for a weight,
            its module's name (``critic``); empty when no name was found.
        weight: the tensor is a module's weight (a leaf that requires grad).
        how: ``"op"`` (an in-place operation of the program) or ``"step"`` (an optimizer's step).
        file, line, function: where that write is in the source (line 0: not found).
        text: the write's source (``probs += 1e-6``, ``critic_opt.step()``).
        versions: (the version the node saved, the version now).
        carrying: the names of the program whose graph reaches the node (set by the caller).
        reached: the line of the function that steps where the failing backward is reached
            (the backward itself, or the call that leads to it).
        module: the line makes a module (or calls a function) with ``inplace=True``, whose
            call wrote the tensor.
        maker, by: the class of the library module whose forward wrote, and that module as the
            program names it (``self.main[2]``), as recorded.
        made_at: (file, line) of the user's line that made that module (the
            ``nn.Dropout(0.25, inplace=True)`` in an ``nn.Sequential``), recorded in a replay,
            and ``made_text`` that line's source; empty when not recorded.
        trained: for a weight, an optimizer of the program holds it (a slow or target copy that
            no optimizer steps is a weight that is not trained).
        next_lines: (file, line) of the writes, recorded in a replay, of the graph's other saved
            tensors that the backward would meet next, in the same state.
        saved_at: (file, line) of the user's line that built the node that saved the tensor,
            recorded in a replay; empty when not recorded.
        saved_from: (file, line) of the user's lines whose calls led to ``saved_at`` (a
            helper's ``adj @ (x @ w)`` called with a part of the tensor as ``x``), innermost
            first, as recorded.
        later_lines: (file, line) of the writes, recorded in a replay, that changed the same
            saved tensor again after this one, up to the version the error reports.
        shares: the other names of the writing frame that held a tensor of the same storage
            when the write ran, as recorded (views share one version counter: ``z`` and ``z1``
            beside ``z2`` in ``z2 += shift`` after ``z1, z2 = z[:, :2], z[:, 2:]``).
    """

    node: str
    slot: str
    name: str
    weight: bool
    how: str
    file: str = ""
    line: int = 0
    function: str = ""
    text: str = ""
    versions: tuple[int, int] = (0, 0)
    carrying: tuple[str, ...] = ()
    reached: int = 0
    module: bool = False
    maker: str = ""
    by: str = ""
    made_at: tuple[str, int] | tuple[()] = ()
    made_text: str = ""
    trained: bool = False
    next_lines: tuple[tuple[str, int], ...] = ()
    saved_at: tuple[str, int] | tuple[()] = ()
    saved_from: tuple[tuple[str, int], ...] = ()
    later_lines: tuple[tuple[str, int], ...] = ()
    shares: tuple[str, ...] = ()

    def where(self) -> str:
        return place(self.file, self.line) if self.line else ""

    def made_entry(self) -> dict[str, Any]:
        """``{"made": {file, line, text}}`` for the report: where the library module whose
        forward wrote was made, as recorded; else nothing."""
        if not self.module or not self.made_at:
            return {}
        return {"made": {"file": self.made_at[0], "line": self.made_at[1],
                         "text": self.made_text}}

    def saver(self) -> str:
        """The node that saved the tensor, or "a node" where it is not known."""
        return self.node or "a node"


def _parsed(error: BaseException) -> dict[str, Any] | None:
    match = _MESSAGE.search(str(error))
    if match is None:
        return None
    shape = [int(s) for s in match.group("shape").replace(" ", "").split(",") if s]
    numel = 1
    for size in shape:
        numel *= size
    return {"numel": numel, "now": int(match.group("now")), "then": int(match.group("then")),
            "op": (match.group("op") or "").split("::")[-1]}  # torch::autograd::CopySlices


def _matches(tensor: Any, facts: dict[str, Any]) -> bool:
    return isinstance(tensor, torch.Tensor) and tensor._version == facts["now"] and \
        tensor.numel() == facts["numel"]


def _named(frames: list[Any]) -> Iterator[tuple[str, Any, Any]]:
    """(path, value, frame) for each frame's locals, and the tensors and modules one or two
    attributes below them (``self.queue``, ``model.encoder.weight``)."""
    for frame in frames:
        for name, value in list(frame.f_locals.items()):
            if name.startswith("__"):
                continue
            yield name, value, frame
            for attr, item in _attributes(value):
                yield f"{name}.{attr}", item, frame
                for inner, deeper in _attributes(item):
                    yield f"{name}.{attr}.{inner}", deeper, frame


def _attributes(value: Any) -> list[tuple[str, Any]]:
    if isinstance(value, torch.nn.Module):
        return list(value._buffers.items()) + list(value._modules.items()) + [
            (k, v) for k, v in vars(value).items()
            if isinstance(v, (torch.Tensor, torch.optim.Optimizer))]  # its own optimizer too
    if hasattr(value, "__dict__") and not isinstance(value, type) and \
            not (getattr(type(value), "__module__", "") or "").startswith(("torch", "builtins")):
        try:
            return [(k, v) for k, v in vars(value).items()
                    if isinstance(v, (torch.Tensor, torch.nn.Module, torch.optim.Optimizer))]
        except TypeError:
            return []
    return []


def _holder(leaf: torch.Tensor, frames: list[Any]) -> tuple[str, Any]:
    """The module that holds ``leaf`` as a parameter (its name in the frames), and the
    optimizer that steps it (its name, or "")."""
    module, optimizer = "", ""
    for path, value, _ in _named(frames):
        if not module and isinstance(value, torch.nn.Module) and \
                any(p is leaf for p in value.parameters(recurse=True)):
            module = path
        if not optimizer and isinstance(value, torch.optim.Optimizer) and any(
                p is leaf for group in value.param_groups for p in group["params"]):
            optimizer = path
    return module, optimizer


def _makers(node: Any) -> set[Any]:
    """The nodes that made the tensors ``node`` takes (not leaves), reached past views."""
    return {c for c in past_views(node) if not hasattr(c, "variable")}


def find_write(error: BaseException, written: list[tuple[Any, str]],
               frames: list[Any], order: list[Any] = (), steps: Any = None) -> Write | None:
    """What changed the saved tensor of the in-place ``error``: its node, its name in the
    program, and the write's line (``written``: see :func:`written_nodes`; None when empty).
    ``order``: the failing graph's nodes, to find a write in a function that has returned;
    ``steps``: the optimizer steps recorded while the program ran (see
    :mod:`autograd_lens.explain.optimizer_steps`; None: not recorded)."""
    facts = _parsed(error)
    if not written or facts is None:
        return None
    node, slot = written[0]
    versions = (facts["then"], facts["now"])
    for leaf in leaves_under(node):
        if _matches(leaf, facts) and leaf.requires_grad:
            module, optimizer = _holder(leaf, frames)
            if steps is not None:
                return dataclasses.replace(_weight_write(node, slot, leaf, module, frames, steps,
                                                         versions), trained=bool(optimizer))
            # Steps not recorded (the command's first run): the program's own write of the
            # weight, where the source shows one, before a step read from the source (the
            # replay's recording then says which ran).
            own = _weight_write(node, slot, leaf, module, frames, (), versions)
            if own.line:
                return dataclasses.replace(own, trained=bool(optimizer))
            found = step_of(optimizer, frames) if optimizer else None
            found = found[:4] if found else None
            return Write(node_name(node), slot, module, True, "step", *(found or ("", 0, "", "")),
                         versions, trained=bool(optimizer))
    held = None  # a name of the program that holds the written tensor, with no write of its own
    makers = _makers(node)
    for path, value, frame in _named(frames):
        if _matches(value, facts) and (value.grad_fn is None or reaches(value, node) or
                                       written_after(value, node, makers)):
            leaf = bool(value.requires_grad and value.is_leaf)
            found = op_after_build(path, frames) or op_on(path, frames)
            if found is not None:  # named as the line that writes it does (self.queue)
                return Write(node_name(node), slot, found[4] or path, leaf, "op", *found[:4],
                             versions)
            held = held or Write(node_name(node), slot, path, leaf, "op", versions=versions)
    # written under another name, in a function that has returned (squashed = gate.sigmoid_())
    found = op_recorded(writers(order, facts["op"]) | base_writers(order, node, makers), frames)
    if found is not None:
        return Write(node_name(node), slot, found[4], False, "op", *found[:4], versions)
    found = module_made_in_place(facts["op"], frames)
    if found is not None:  # the write runs inside a module made with inplace=True
        return Write(node_name(node), slot, held.name if held else "", held.weight if held
                     else False, "op", *found, versions, module=True)
    if held is not None:
        return held
    return Write(node_name(node), slot, "", False, "op", versions=versions)


def _weight_write(node: Any, slot: str, leaf: torch.Tensor, module: str, frames: list[Any],
                  steps: Any, versions: tuple[int, int]) -> Write:
    """A weight's write, as the run shows it: a step of an optimizer that holds the weight,
    recorded after the node saved it; else the program's own in-place write of the weight
    (``p.clamp_``), where the source shows one that ran before the failing line; else no line."""
    step = step_after(steps, leaf, node)
    if step is not None:
        return Write(node_name(node), slot, module, True, "step", step.file, step.line,
                     step.function, step.text(), versions)
    path, owner, attribute = _owner(leaf, frames)
    found = own_write(type(owner), attribute) if owner is not None else None
    if found is not None:  # the module's own code writes it (a max-norm in its forward)
        return Write(node_name(node), slot, path, True, "op", *found[:4], versions)
    found = weight_op(module, frames)
    if found is not None:
        return Write(node_name(node), slot, found[4], True, "op", *found[:4], versions)
    return Write(node_name(node), slot, module, True, "op", versions=versions)


def _owner(leaf: torch.Tensor, frames: list[Any]) -> tuple[str, Any, str]:
    """The module whose own parameter ``leaf`` is, as the frames reach it: the weight's path
    (``net.hidden.weight``), the module, and the parameter's attribute name."""
    for path, value, _ in _named(frames):
        if isinstance(value, torch.nn.Module):
            for name, module in value.named_modules():
                for attribute, parameter in module._parameters.items():
                    if parameter is leaf:  # as the program writes it: net[2].weight
                        inner = "".join(f"[{p}]" if p.isdigit() else f".{p}"
                                        for p in f"{name}.{attribute}".split(".") if p)
                        return path + inner, module, attribute
    return "", None, ""


def reached_from(write: Write, frames: list[Any]) -> int:
    """The line, in the function that steps, where the program was when backward failed."""
    for frame in frames:
        lines = [line for _, _, line in frame.f_code.co_lines() if line]
        if write.how == "step" and frame.f_code.co_filename == write.file and lines and \
                min(lines) <= write.line <= max(lines):
            return frame.f_lineno
    return 0


def built_in_frame(write: Write, frame: Any, name: str) -> int:
    """For a step's write: the line where ``frame``'s function, the one that steps, assigns
    ``name`` before the step (0: another function, or not assigned before it)."""
    code = frame.f_code
    if write.how != "step" or not write.line or code.co_filename != write.file or \
            "." in name or name not in code.co_varnames + code.co_names:
        return 0
    lines = [line for _, _, line in code.co_lines() if line]
    if not lines or not min(lines) <= write.line <= max(lines):
        return 0
    return built_before(write.file, name, write.line)
