"""The tensors a user names as suspects: which of them carry a stale graph, and what to do about it.

A suspect is a tensor that crosses from one step to the next (a hidden state, cached features,
a module's buffer, a list of losses). One rule, :func:`suspect_pattern`, says which pattern of
the catalogue a stale suspect points to, from where it lives and what its graph is (never from
its name); its advice comes from that pattern.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping
from typing import Any

import torch
from torch.autograd.graph import Node

from ..lens.graph import breadth_first
from .report import PATTERNS, Pattern, Suspect

Item = tuple[str, torch.Tensor, str]
"""(name, tensor, origin): origin is "module" (an attribute or buffer), "list" (an item of a
list, a buffer that grows) or "plain"."""


def suspect_items(suspects: Any) -> list[Item]:
    """Every tensor the user named, with its name and where it came from."""
    if suspects is None:
        return []
    if isinstance(suspects, torch.nn.Module):
        items = []
        for prefix, module in suspects.named_modules():
            dotted = f"{prefix}." if prefix else ""
            for name, value in vars(module).items():
                if name.startswith("_") or isinstance(value, torch.nn.Parameter):
                    continue
                items += [(n, t, "module") for n, t, _ in _tensors_named(dotted + name, value)]
            for name, buffer in module.named_buffers(recurse=False):
                if buffer is not None:
                    items.append((dotted + name, buffer, "module"))
        return items
    if not isinstance(suspects, Mapping):
        raise TypeError(
            f"suspects must be a mapping of names to tensors, such as {{'h': h, 'feats': feats}}, "
            f"or an nn.Module, got a {type(suspects).__name__}.")
    items = []
    for name, value in suspects.items():
        found = _tensors_named(str(name), value)
        if not found and value is not None and not (
                isinstance(value, (list, tuple)) and not value):
            raise TypeError(
                f"suspects[{name!r}] is a {type(value).__name__}, not a tensor (or a list or "
                "tuple of tensors). Pass the tensors that cross from one step to the next.")
        items += found
    return items


def _tensors_named(name: str, value: Any, origin: str = "plain") -> list[Item]:
    if isinstance(value, torch.Tensor):
        return [(name, value, origin)]
    if isinstance(value, (list, tuple)):
        inner = "list" if isinstance(value, list) else origin
        found = []
        for i, item in enumerate(value):
            found += _tensors_named(f"{name}[{i}]", item, inner)
        return found
    return []


def suspect_pattern(origin: str, old: bool) -> Pattern:
    """The pattern a stale suspect points to: by where it lives (an attribute or buffer, a
    list), then by its graph: an old tensor reused (computed before the loop), or a new one
    whose graph reaches an old one (a state carried from step to step)."""
    if origin == "module":
        return PATTERNS["module_state"]
    if origin == "list":
        return PATTERNS["growing_buffer"]
    return PATTERNS["outside_loop" if old else "hidden_state"]


def _message(name: str, pattern: Pattern, reaches: bool) -> str:
    where = "" if reaches else " (this backward does not go through it)"
    fix = pattern.suspect_fix or pattern.fix
    return f"`{name}` still carries the graph of an earlier backward{where}: {fix}."


def judge_suspects(items: list[Item], executed: Collection[Node], stale_nodes: Collection[Node],
                   is_stale: Callable[[Node], bool]) -> list[tuple[Suspect, Pattern]]:
    """What each suspect carries, with the pattern it points to.

    A suspect whose own node is stale is an old tensor. A suspect computed in this step that
    reaches a stale graph only through an old suspect (the new hidden state, built from an old
    ``style`` vector) is not blamed: the old suspect is the one to fix. ``executed`` and
    ``stale_nodes`` are the nodes backward would run and the stale ones among them.
    """
    judged = []
    for name, tensor, origin in items:
        node = tensor.grad_fn
        old = node is not None and is_stale(node)
        if node is None or old:
            hits = {node} if old else set()
        else:
            hits = {n for n in breadth_first([node], stop=is_stale) if is_stale(n)}
        judged.append((name, origin, node, old, hits))
    explained = set(breadth_first(node for _, _, node, old, _ in judged if old))
    found = []
    for name, origin, node, old, hits in judged:
        pattern = suspect_pattern(origin, old)
        if node is None:
            found.append((Suspect(name, "clean", False), pattern))
            continue
        own = hits if old else hits - explained
        reaches = node in executed or any(n in stale_nodes for n in hits)
        message = _message(name, pattern, reaches) if own else ""
        found.append((Suspect(name, "stale" if own else "history", reaches, message), pattern))
    return found
