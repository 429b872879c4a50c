"""Objects of installed libraries (PyTorch, the frameworks, the standard library), told apart
from the program's own by the file that defines their class.

>>> import collections, torch
>>> library_class(collections.OrderedDict), library_class(torch.nn.Linear)
(True, True)
>>> library_state(torch.nn.Linear(1, 1))  # a module: its buffers are walked as a module's
False
>>> made_state(torch.distributions.Bernoulli(torch.tensor(0.5))), made_state(torch.ones(1))
(True, False)
"""

from __future__ import annotations

import sys
import sysconfig
from typing import Any

import torch

from ..lens.history import LIBRARY_DIRS

LIBRARIES = tuple({sysconfig.get_paths()[k] for k in ("stdlib", "purelib", "platlib")}) + \
    LIBRARY_DIRS
# Libraries' objects whose own attributes are what the program reads (a distribution's lazily
# cached logits): never taken for a copy the library keeps.
_STATE_READ_BY_PROGRAMS = ("torch.distributions",)


def made_state(value: Any) -> bool:
    """Whether ``value`` is a library object whose attributes are state the program reads but no
    line of it assigns, made with the object (a distribution's lazily cached ``logits``): the
    program holds that state through the object, and names the object."""
    return not isinstance(value, (torch.nn.Module, type)) and hasattr(value, "__dict__") and \
        (type(value).__module__ or "").startswith(_STATE_READ_BY_PROGRAMS)


def library_class(kind: type) -> bool:
    """Whether ``kind`` is defined in an installed library (or the standard library), and is
    not a class a library made around one of the program's (FSDP2's ``fully_shard`` gives a
    module a class of its own that derives from the module's class: it is still the program's
    module)."""
    name = kind.__module__ or ""
    filename = getattr(sys.modules.get(name), "__file__", None) or ""
    return filename.startswith(LIBRARIES) and not name.startswith(_STATE_READ_BY_PROGRAMS) and \
        not any(_program_class(base) for base in kind.__mro__[1:])


def _program_class(kind: type) -> bool:
    """Whether ``kind`` is defined in a file of the program (its script, its own modules)."""
    name = kind.__module__ or ""
    filename = getattr(sys.modules.get(name), "__file__", None) or ""
    return name == "__main__" or bool(filename) and not filename.startswith(LIBRARIES)


def library_state(value: Any) -> bool:
    """Whether ``value`` is an object of an installed library (not a module, whose buffers and
    submodules are walked already) whose attributes may hold tensors: a cache of past keys and
    values, a framework's state object. The carrier search looks into it when the program's
    frames reach it."""
    return not isinstance(value, (torch.nn.Module, type)) and library_class(type(value)) and \
        bool(getattr(value, "__dict__", None))
