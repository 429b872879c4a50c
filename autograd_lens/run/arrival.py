"""Starting the watch when the program imports torch, not before.

A program may prepare torch's environment before its ``import torch`` (``OMP_NUM_THREADS``,
``CUDA_VISIBLE_DEVICES``, ``torch.set_num_threads``'s defaults): the command must not import
torch first. :class:`OnTorch` enters the watch at once when torch is already imported, else just
after the program's own import of torch has run torch's ``__init__``.
"""

from __future__ import annotations

import contextlib
import importlib.abc
import sys
from typing import Any, Callable, ContextManager


class OnTorch(importlib.abc.MetaPathFinder):
    """A context manager: enters the context managers ``make()`` returns once torch is imported
    (by the program), and leaves them on exit."""

    def __init__(self, make: Callable[[], list[ContextManager]]) -> None:
        self.make = make
        self.stack = contextlib.ExitStack()

    def _start(self) -> None:
        for manager in self.make():
            self.stack.enter_context(manager)

    def find_spec(self, name: str, path: Any, target: Any = None) -> Any:
        if name != "torch":
            return None
        self._leave_meta_path()
        return loaded_then(name, path, target, lambda module: self._start())

    def _leave_meta_path(self) -> None:
        if self in sys.meta_path:
            sys.meta_path.remove(self)

    def __enter__(self) -> OnTorch:
        if "torch" in sys.modules:
            self._start()
        else:
            sys.meta_path.insert(0, self)
        return self

    def __exit__(self, *exc_info: Any) -> None:
        self._leave_meta_path()
        self.stack.close()


def loaded_then(name: str, path: Any, target: Any, then: Callable[[Any], None]) -> Any:
    """The spec of module ``name`` as the other finders of ``sys.meta_path`` give it (None when
    none does), its loading followed, once, by ``then(module)``."""
    for finder in sys.meta_path:
        spec = finder.find_spec(name, path, target) if hasattr(finder, "find_spec") else None
        if spec is not None and spec.loader is not None:
            break
    else:
        return None
    run = spec.loader.exec_module

    def exec_module(module: Any) -> None:
        run(module)
        spec.loader.exec_module = run
        then(module)
    spec.loader.exec_module = exec_module
    return spec
