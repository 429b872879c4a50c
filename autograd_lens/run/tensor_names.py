"""The names the program holds a tensor by at the moment of a write (its locals, their attributes,
a module's parameters and buffers below them), the module whose ``forward`` made the write, and
the arguments an operation writes."""

from __future__ import annotations

import types
from typing import Any

import torch

from .sites import is_users


def _written(func: Any) -> tuple[tuple[int, str], ...]:
    """The arguments ``func``'s schema marks as written: (position, name) each."""
    return tuple((i, a.name) for i, a in enumerate(func._schema.arguments)
                 if a.alias_info is not None and a.alias_info.is_write)


def storage_key(tensor: Any) -> int | None:
    """The address of a tensor's storage (shared with its views), None when it has none."""
    try:
        return tensor.untyped_storage().data_ptr()
    except Exception:  # noqa: BLE001 - a tensor without storage (meta, sparse, a subclass)
        return None


def _names(frame: Any, key: int | None) -> tuple[str, ...]:
    """The names of the user's frame holding a tensor of the storage ``key`` at the moment of
    a write: its locals, and the attributes (a module's parameters and buffers too) of the
    objects its locals hold, one level down."""
    if key is None:
        return ()
    found = []
    values = [(name, value) for name, value in list(frame.f_locals.items())
              if not isinstance(value, _NOT_HOLDERS)]
    for name, value in values:
        if isinstance(value, torch.Tensor):
            if storage_key(value) == key:
                found.append(name)
            continue
        own = own_attributes(value)
        inner = dict(own.get("_parameters") or {})
        inner.update(own.get("_buffers") or {})
        inner.update(own)
        found += [f"{name}.{attribute}" for attribute, item in inner.items()
                  if isinstance(item, torch.Tensor) and storage_key(item) == key]
    if not found:  # a parameter or buffer of a module below: self.entities.weight, net[2].weight
        for name, value in values:
            modules = [(name, value)] if isinstance(value, torch.nn.Module) else [
                (f"{name}.{a}", v) for a, v in own_attributes(value).items()
                if isinstance(v, torch.nn.Module)]
            for path, module in modules:
                found += [path + _path(inner) for inner in _storages_of(module).get(key, ())]
    return tuple(dict.fromkeys(found))


def own_attributes(value: Any) -> dict:
    """The attributes an object holds itself (its ``__dict__``), read without running any of
    its code (a ``__getattr__`` that raises ``KeyError``, as a dict with attribute access
    does, is never called): empty for a class, or an object without one."""
    if isinstance(value, type):
        return {}
    try:
        own = object.__getattribute__(value, "__dict__")
    except Exception:  # noqa: BLE001 - no __dict__ (slots, a C object): nothing held
        return {}
    return own if isinstance(own, dict) else {}


# Locals that hold no tensor of the program's: modules of Python's, classes, functions.
_NOT_HOLDERS = (types.ModuleType, type, types.FunctionType, types.BuiltinFunctionType,
                types.MethodType)
_STORAGES: dict[int, tuple[Any, tuple[int, ...], dict[int, list[str]]]] = {}


def _storages_of(module: Any) -> dict[int, list[str]]:
    """A module's parameters and buffers, every level down, by storage: their qualified names.
    Listed again only when the module's own modules, parameters or buffers change in number (a
    module under construction: its ``__init__`` writes its first layers' weights before it has
    the next); an optimizer's step and most writes keep a tensor's storage."""
    shape = tuple(len(getattr(module, key, None) or ())
                  for key in ("_modules", "_parameters", "_buffers"))
    kept = _STORAGES.get(id(module))
    if kept is not None and kept[0] is module and kept[1] == shape:
        return kept[2]
    by_storage: dict[int, list[str]] = {}
    for inner, item in _tensors_of(module):
        by_storage.setdefault(storage_key(item), []).append(inner)
    _STORAGES[id(module)] = (module, shape, by_storage)
    return by_storage


def _running_module(frame: Any, user: Any) -> Any:
    """The innermost library module whose ``forward`` runs between ``frame`` and the user's
    frame ``user`` (the ``nn.Dropout(inplace=True)`` whose call made the write), or None."""
    while frame is not None and frame is not user:
        if frame.f_code.co_name == "forward" and not is_users(frame.f_code.co_filename):
            found = frame.f_locals.get("self")
            if isinstance(found, torch.nn.Module):
                return found
        frame = frame.f_back
    return None


def _module_names(frame: Any, module: Any) -> tuple[str, ...]:
    """The names of the user's frame for ``module``: a local, or a module below one
    (``discriminator[2]``)."""
    if module is None:
        return ()
    found = []
    for name, value in list(frame.f_locals.items()):
        if value is module:
            found.append(name)
        elif isinstance(value, torch.nn.Module):
            found += [name + _path(inner) for inner, item in value.named_modules()
                      if item is module and inner]
    return tuple(found)


def _tensors_of(module: Any) -> list[tuple[str, Any]]:
    """A module's parameters and buffers, every level down, by their qualified names."""
    try:
        return list(module.named_parameters(remove_duplicate=False)) + \
            list(module.named_buffers(remove_duplicate=False))
    except Exception:  # noqa: BLE001 - a module whose listing fails names nothing
        return []


def _path(qualified: str) -> str:
    """A qualified name as the program writes it: ``2.weight`` as ``[2].weight``."""
    return "".join(f"[{p}]" if p.isdigit() else f".{p}" for p in qualified.split("."))

