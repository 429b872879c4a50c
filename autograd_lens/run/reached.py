"""Which parameters a backward call reaches, named so that two runs of a program can compare them.

A parameter is named by the module that holds it (the class of the outermost module, then the
qualified name inside it, as ``named_parameters`` gives it) and its shape, such as
``Seq2Seq.encoder.weight_ih_l0 (32, 8)``; a tensor that no module holds, by its shape alone
(``tensor (4, 4)``). Two runs of the same program make the same modules in the same order, so the
same names, counted (two networks of one class give each name twice).
"""

from __future__ import annotations

import gc
import warnings
from collections import Counter
from typing import Any, Iterable


def leaves(roots: Iterable[Any]) -> list[Any]:
    """The tensors whose ``.grad`` a backward from ``roots`` accumulates into (each once), found
    by walking the graph; a freed graph keeps its edges, so this works after the failure too."""
    found, seen, stack = {}, set(), []
    for root in roots:
        node = getattr(root, "grad_fn", None)
        if node is None and getattr(root, "requires_grad", False):
            found[id(root)] = root
        elif node is not None:
            stack.append(node)
    while stack:
        node = stack.pop()
        if node is None or id(node) in seen:
            continue
        seen.add(id(node))
        variable = getattr(node, "variable", None)
        if variable is not None:
            found[id(variable)] = variable
        try:
            stack.extend(next_node for next_node, _ in node.next_functions)
        except (AttributeError, RuntimeError):
            continue
    return list(found.values())


def alive() -> tuple[list[Any], list[Any]]:
    """The modules and the optimizers alive now, from one pass over the objects the collector
    tracks (every object of the process: torch's own alone are hundreds of thousands, so a
    caller that needs both, or needs them twice, reads them once and passes them on)."""
    import torch

    module, optimizer = torch.nn.Module, torch.optim.Optimizer
    modules, optimizers = [], []
    with warnings.catch_warnings():  # some objects warn when their class is read
        warnings.simplefilter("ignore")
        for found in gc.get_objects():
            try:
                if isinstance(found, module):
                    modules.append(found)
                if isinstance(found, optimizer):
                    optimizers.append(found)
            except ReferenceError:  # a weak proxy whose object is gone: reading its class
                continue  # raises (before, one such object left the names all unread)
    return modules, optimizers


def names(tensors: list[Any], modules: list[Any] | None = None) -> list[str]:
    """The stable names of ``tensors`` (see the module's docstring), among ``modules`` (by
    default the modules alive now)."""
    wanted = {id(t) for t in tensors}
    if modules is None:
        modules = alive()[0]
    inner = {id(child) for module in modules for child in module.children()}
    named: dict[int, str] = {}
    for module in modules:
        if id(module) in inner:
            continue
        for name, parameter in module.named_parameters(remove_duplicate=False):
            if id(parameter) in wanted and id(parameter) not in named:
                named[id(parameter)] = f"{type(module).__name__}.{name}"
    return [f"{named.get(id(t), 'tensor')} {tuple(t.shape)}" for t in tensors]


def stepped(tensors: list[Any], optimizers: list[Any] | None = None) -> set[int] | None:
    """The ids of those of ``tensors`` that one of ``optimizers`` (by default those alive now)
    updates (in one of its parameter groups), or None when there is none."""
    if optimizers is None:
        optimizers = alive()[1]
    if not optimizers:
        return None
    held = {id(p) for o in optimizers for group in o.param_groups for p in group["params"]}
    return {id(t) for t in tensors if id(t) in held}


def trained_so_far(known: set[int], optimizers: list[Any] | None = None) -> list[Any]:
    """The parameters, not among ``known`` (ids), that an optimizer alive now (one of
    ``optimizers``, by default all), one that holds some of ``known`` (the failing graph's; not
    another program's, run before in the same process), has stepped with a gradient so far:
    those it keeps a state for (a momentum, Adam's averages)."""
    found, seen = [], set(known)
    for optimizer in alive()[1] if optimizers is None else optimizers:
        if not any(id(p) in known for group in optimizer.param_groups for p in group["params"]):
            continue
        for group in optimizer.param_groups:
            for param in group["params"]:
                if id(param) not in seen and optimizer.state.get(param):
                    seen.add(id(param))
                    found.append(param)
    return found


def written_in_place(tensors: list[Any]) -> set[int]:
    """The ids of those of ``tensors`` that are leaves the program has written in place (their
    version counter moved: a weight updated by hand, ``w -= lr * w.grad`` under no_grad)."""
    return {id(t) for t in tensors if getattr(t, "is_leaf", False) and
            getattr(t, "_version", 0) > 0}


def missing(expected: dict[str, int], got: list[str]) -> list[str]:
    """The names of ``expected`` (name: count) that ``got`` lacks, each once per copy missing."""
    short = Counter(expected) - Counter(got)
    return sorted(short.elements())
