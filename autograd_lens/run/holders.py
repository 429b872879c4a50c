"""Which of the program's names hold a graph at the failing call: the locals of the user's frames,
the globals of the user's modules, the attributes of the objects they hold and the entries of
containers, each with the node its tensor holds and where that node was made."""

from __future__ import annotations

import sys
from typing import Any, Iterator

import torch

from ..lens.graph import node_name
from ..source.library_objects import made_state
from .node_history import _built, _reaches
from .record import Log
from .sites import is_users
from .tensor_names import own_attributes, storage_key

_ITEMS = 200  # entries of one container looked at
_NAMES = 5000  # names looked at in all
_MODULE_OWN = frozenset(vars(torch.nn.Module()))  # what every module's __dict__ holds


def _named(frame: Any) -> Iterator[tuple[str, str, Any, dict]]:
    """(name, scope, value, where) for the user's names: each user frame's locals, the globals
    of the user's modules, the attributes of the objects these hold and the entries of
    containers, one level deep; ``where``: the scope's ``file``, ``qualname`` and the line it
    runs at now (``now``, None for a module's globals), and for an attribute the class of the
    object it is an attribute of (``owner``)."""
    frames, modules = [], {}
    while frame is not None:
        if is_users(frame.f_code.co_filename):
            frames.append(frame)
            modules.setdefault(frame.f_globals.get("__name__"), frame.f_globals)
        frame = frame.f_back
    spaces = [(f"{f.f_code.co_name}()", dict(f.f_locals),
               {"file": f.f_code.co_filename, "now": f.f_lineno,
                "qualname": getattr(f.f_code, "co_qualname", f.f_code.co_name)}) for f in frames]
    spaces += [(f"module {name}", dict(space),
                {"file": space.get("__file__") or "", "now": None, "qualname": "<module>"})
               for name, space in modules.items()]
    for scope, space, where in spaces:
        for name, value in space.items():
            if name.startswith("__") or isinstance(value, type(sys)):
                continue
            yield name, scope, value, where
            for inner, item in _inside(value):
                yield name + inner, scope, item, dict(where, owner=_owner(value)) \
                    if inner.startswith(".") else dict(where, entries=len(value)) \
                    if isinstance(value, dict) else where  # a dict's entry: of how many


def _owner(value: Any) -> str:
    return type(value).__qualname__


def _keyed(key: Any) -> str:
    """A dict's entry as the source reads it: ``["text"]``, ``[3]``."""
    return f'["{key}"]' if isinstance(key, str) else f"[{key!r}]"


def _inside(value: Any) -> Iterator[tuple[str, Any]]:
    if isinstance(value, (list, tuple)):
        for index, item in enumerate(value[:_ITEMS]):
            yield f"[{index}]", item
    elif isinstance(value, dict):
        for index, (key, item) in enumerate(value.items()):
            if index >= _ITEMS:
                break
            yield _keyed(key), item
    elif isinstance(value, torch.nn.Module):
        for key, item in list(value._parameters.items()) + list(value._buffers.items()) + \
                list(value._modules.items()):
            yield f".{key}", item
        for key, item in vars(value).items():  # (private ones too, ``self._cache``; not
            # the attributes every module has, its dicts of parameters and hooks)
            if key not in _MODULE_OWN and (
                    isinstance(item, (torch.Tensor, list, tuple, dict)) or made_state(item) or
                    _program_object(item)):
                yield f".{key}", item
    elif own_attributes(value) and not isinstance(value, torch.Tensor) and (
            _program_object(value)
            or isinstance(value, torch.autograd.function.BackwardCFunction)):  # a Function's ctx
        for key, item in list(own_attributes(value).items())[:_ITEMS]:
            yield f".{key}", item


def _program_object(value: Any) -> bool:
    """Whether ``value`` is an object of a class of the program's own (not a module, a
    tensor or a class), with attributes of its own."""
    return not isinstance(value, (torch.Tensor, torch.nn.Module, type)) and \
        bool(own_attributes(value)) and \
        is_users(getattr(sys.modules.get(type(value).__module__), "__file__", "") or "")


def _tensors(value: Any) -> Iterator[tuple[str, torch.Tensor, str]]:
    """The tensors a value holds: itself, the entries of a list or a dict, or a module's tensors
    kept as plain attributes, as entries of its lists and dicts (``self.cache["ade"]``) and its
    buffers (an inference cache: ``self.attention.cache_k``), each with the class it is an
    attribute of ("" for none)."""
    if isinstance(value, torch.Tensor):
        yield "", value, ""
    elif isinstance(value, (list, tuple)):
        for index, item in enumerate(value[:_ITEMS]):
            if isinstance(item, torch.Tensor):
                yield f"[{index}]", item, ""
    elif isinstance(value, dict):  # (an object's dict of features: ``frame.feats["text"]``)
        for index, (key, item) in enumerate(value.items()):
            if index >= _ITEMS:
                break
            if isinstance(item, torch.Tensor):
                yield _keyed(key), item, ""
    elif _program_object(value):  # a module's helper object (a cache of predictions)
        for key, item in list(own_attributes(value).items())[:_ITEMS]:
            if isinstance(item, torch.Tensor):
                yield f".{key}", item, _owner(value)
    elif made_state(value):  # a distribution: its cached ``logits`` are held through it
        for item in list(own_attributes(value).values())[:_ITEMS]:
            if isinstance(item, torch.Tensor):
                yield "", item, ""
    elif isinstance(value, torch.nn.Module):
        kept = list(value._buffers.items()) + [(k, v) for k, v in vars(value).items()
                                               if k not in _MODULE_OWN]
        for key, item in kept[:_ITEMS]:
            if isinstance(item, torch.Tensor):
                yield f".{key}", item, _owner(value)
            elif isinstance(item, (list, tuple, dict)):  # a submodule's cache of features
                for entry, tensor, _ in _tensors(item):
                    yield f".{key}{entry}", tensor, _owner(value)


def _holders(log: Log, frame: Any, node: Any, written: int | None,
             now: int, others: frozenset = frozenset()) -> tuple[list, list, list]:
    """The user's names whose graph reaches ``node``, those that hold the written storage (at
    the version the error reports), and those whose graph reaches none of ``node`` but one of
    ``others`` (the failing graph's other freed nodes)."""
    floor, memo = (node._sequence_nr() if node is not None else 0), {}
    low = min([floor] + [n._sequence_nr() for n in others])
    holders, writers, carrying, seen, said = [], [], [], 0, set()
    for name, scope, value, where in _named(frame):
        seen += 1
        if seen > _NAMES or (scope, name, id(value)) in said:
            if seen > _NAMES:
                break
            continue
        said.add((scope, name, id(value)))  # a caller's name too: handed in under the same one
        for suffix, tensor, owner in _tensors(value):
            if (name + suffix, scope, id(tensor)) in said:
                continue
            said.add((name + suffix, scope, id(tensor)))
            start = tensor.grad_fn
            place = dict(where, owner=owner) if owner else where
            if suffix.startswith("["):  # an entry: of how many
                place = dict(place, entries=len(value))
            if start is not None and node is not None and \
                    _reaches_memo(start, node, floor, memo):
                holders.append(_holder(log, name + suffix, scope, place, start))
            elif start is not None and others and \
                    _reaches_memo(start, others, low, memo, "others"):
                carrying.append(_holder(log, name + suffix, scope, place, start))
            if written is not None and not owner and storage_key(tensor) == written and \
                    getattr(tensor, "_version", None) == now:
                writers.append({"name": name + suffix, "scope": scope})
    return holders, writers, carrying


def _holder(log: Log, name: str, scope: str, where: dict, start: Any) -> dict:
    built = _built(log, start._sequence_nr()) or {}
    return {"name": name, "scope": scope, "file": where["file"], "qualname": where["qualname"],
            "now": where["now"], "owner": where.get("owner", ""), "node": node_name(start),
            "number": start._sequence_nr(), "entries": where.get("entries"),
            "built": built.get("user"), "steps": built.get("steps"),
            "backward_calls": built.get("backward_calls"),
            "callers": built.get("chain", [])}


def _reaches_memo(start: Any, target: Any, floor: int, memo: dict, key: str = "") -> bool:
    if (start, key) not in memo:
        memo[start, key] = _reaches([start], target, floor)
    return memo[start, key]


def _parameter_path(frame: Any, storage: Any) -> str:
    """The path of the parameter whose storage is ``storage`` from a name of the user's that
    holds its module (``backbone.2.weight``), or ""."""
    for name, _, value, _ in _named(frame):
        if isinstance(value, torch.nn.Module):
            for path, parameter in value.named_parameters():
                if storage_key(parameter) == storage:
                    return f"{name}.{path}"
    return ""
