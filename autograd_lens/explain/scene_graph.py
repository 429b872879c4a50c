"""The facts of a scene read from the graph and the frames: an earlier call in a function still
running, an inner step's adapted weights in the old graph, a critic's network in the new part or
its own step through the generator, a module's attribute holding the old graph, a backward run by
a reentrant checkpoint."""

from __future__ import annotations

import inspect
import types
from typing import Any

import torch
import torch.utils.checkpoint

from ..lens.graph import node_name
from ..lens.history import Call
from ..lens.sequence_numbers import sequence
from ..predict.verdict import _VIEWS, _weights, leaves_of

_MODULES_LIMIT = 2000  # modules looked into for a holder of the old graph


def after_inner_step(history: Any, latest: Call, frame: Any, old: set[Any]) -> bool:
    """Whether the failing call's function took a gradient with ``create_graph=True`` (a
    retained ``autograd.grad``) before the earlier backward, and the old graph holds nodes made
    after that gradient (weights adapted by it): two backward calls through one inner step."""
    if latest.kind != "backward":
        return False
    here = (frame.f_code.co_filename, frame.f_code.co_firstlineno)
    inner = [c for c in history if c.kind == "grad" and c.retained and c.where[:2] == here
             and c.sequence < latest.sequence]
    # made after the gradient and no later than the earlier backward's loss (a leaf's node,
    # counted as newest, is no such node)
    return bool(inner) and any(inner[-1].sequence < sequence(n) <= latest.sequence for n in old)


def _earlier_in(call: Call, frame: Any) -> bool:
    """Whether ``call`` ran in ``frame``'s function, on a line before the one it runs now."""
    code = frame.f_code
    return call.where[:2] == (code.co_filename, code.co_firstlineno) and \
        call.where[2] < frame.f_lineno


def critic(order: list[Any], kids: dict[Any, list[Any]], old: set[Any], reaches: Any) -> bool:
    """Whether, in the new part of the graph, weights are taken both by a node whose graph
    reaches the old part and by one whose graph does not (one network on the kept tensor and on
    other inputs), the old part was made by weights, and none of those weights is among them."""
    taking, not_taking = set(), set()
    for node in order:
        if node in old or node_name(node).startswith(_VIEWS):
            continue  # a view of a weight (its transpose) is taken by the node that uses it
        taken = leaves_of(_weights(node, old))
        if taken:
            (taking if reaches(node) else not_taking).update(taken)
    made_by = leaves_of(child for node in old for child in kids.get(node, ()))
    return bool(taking & not_taking) and bool(made_by) and not (taking & made_by)


def critic_step(before: list[Any], old: set[Any], frames: list[Any] = ()) -> bool:
    """Whether the earlier backward's graph (``before``, its nodes) was a critic's step through
    the shared part ``old``: weights its own part takes (a discriminator on real data) are taken
    in the shared part too, where other weights (the generator's) are taken as well; and no
    optimizer that the ``frames`` hold updates both (one model trained as a whole, whose encoder
    also reads what its decoder made, is no critic and generator)."""
    own = leaves_of(w for node in before if node not in old for w in _weights(node, old))
    shared = leaves_of(w for node in old for w in _weights(node, old))
    critic_weights, made_by = own & shared, shared - own
    return bool(critic_weights) and bool(made_by) and not any(
        trained & critic_weights and trained & made_by for trained in _trained_sets(frames))


def _trained_sets(frames: list[Any]) -> list[set[int]]:
    """The ids of the parameters of each optimizer the frames hold, by name or on an object
    they hold by name (a trainer's ``self.opt_g``)."""
    found: dict[int, Any] = {}
    for frame in frames:
        for value in list(frame.f_locals.values()):
            try:
                inner = list(vars(value).values()) if not isinstance(
                    value, (torch.nn.Module, type, types.ModuleType)) else []
            except TypeError:  # no __dict__
                inner = []
            for item in (value, *inner):
                if isinstance(item, torch.optim.Optimizer):
                    found[id(item)] = item
    return [{id(p) for group in o.param_groups for p in group["params"]} for o in found.values()]


def kept_on_module(frames: list[Any], old: set[Any]) -> bool:
    """Whether an attribute of a module the frames hold (a tensor, or a list, tuple or dict of
    tensors) holds a tensor of the old graph."""
    seen: set[int] = set()
    for frame in frames:
        for value in list(frame.f_locals.values()):
            if not isinstance(value, torch.nn.Module):
                continue
            for module in value.modules():
                if id(module) in seen or len(seen) > _MODULES_LIMIT:
                    continue
                seen.add(id(module))
                if any(_holds(v, old) for k, v in vars(module).items()
                       if k not in ("_parameters", "_modules")):
                    return True
    return False


def _holds(value: Any, old: set[Any]) -> bool:
    if isinstance(value, torch.Tensor):
        return value.grad_fn is not None and value.grad_fn in old
    if isinstance(value, dict):
        value = list(value.values())
    if isinstance(value, (list, tuple)):
        return any(isinstance(v, torch.Tensor) and v.grad_fn is not None and v.grad_fn in old
                   for v in value[:200])
    return False


_CHECKPOINT = torch.utils.checkpoint.__file__


def _run_by_checkpoint() -> bool:
    """Whether the backward failing now was run by a reentrant checkpoint's backward (its
    frame is on the stack: the graph of that inner backward, a block computed again, does not
    hold the checkpoint's node)."""
    frame = inspect.currentframe()
    while frame is not None:
        if frame.f_code.co_filename == _CHECKPOINT and frame.f_code.co_name == "backward":
            return True
        frame = frame.f_back
    return False

