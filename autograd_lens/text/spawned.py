"""Children started by the spawn and forkserver methods, watched as forked ones are.

A forked child (``os.fork``, multiprocessing's fork start method) is a copy of the command's
process, watch included. A child started by the spawn or forkserver method is a new interpreter
(forkserver's: forked from a server that is one): the program's ``multiprocessing`` (its
``get_context("spawn")``'s and ``get_context("forkserver")``'s ``Process`` and ``Pool``,
``concurrent.futures.ProcessPoolExecutor`` with such a context, ``torch.multiprocessing.spawn``)
starts it by sending it two pickles: the *preparation data* (a dict that
``multiprocessing.spawn.get_preparation_data`` makes: the parent's ``sys.path``, ``sys.argv``,
working folder, main module), which the child unpickles and applies (``spawn.prepare``, which
imports the program's main module as ``__mp_main__``), then the ``Process`` object itself, whose
``_bootstrap`` runs the target.

While the program runs under the command, the dict that the launch of such a child gets from
``get_preparation_data`` (when ``popen_spawn_posix`` or ``popen_forkserver`` asks for it, and
only then) holds one more entry, :class:`_Start`: unpickled in the child, before the rest of
the preparation, it imports this package from the folder the command imported it from, as the
command imports it (without torch, which the program's own import brings; the child's
``sys.path`` is left as it was, and ``prepare`` sets it as the parent's) and calls
:func:`watch_this_child`, which watches the child's backward calls as the command's own process
does (from its first backward call: :class:`_Deferred`). A failure there is diagnosed in the
child, at once, and handed to the command's process through the same file as a forked child's
(see :meth:`autograd_lens.text.telling.Teller._in_a_child`): it is in the report's ``"children"``
with the child's pid and how it was started. The child never replays the failure nor runs the
edits. The program's objects are not touched (its ``Process``, its target, the dict it would
get from ``get_preparation_data`` itself); an entry the child's ``prepare`` does not know is
left alone by it. Anything that goes wrong in this set-up leaves the child unwatched, never stopped.

Not watched: a Python started otherwise (``subprocess.run([sys.executable, ...])``,
``os.system``, ``os.exec*``, a launcher such as ``torchrun`` started by the program).
"""

from __future__ import annotations

import functools
import importlib.abc
import os
import sys
from typing import Any

from ..run.arrival import loaded_then
from ..run.unseen import without_ours

_ENTRY = "autograd_lens"  # the key of the preparation data's extra entry
_LAUNCHERS = ("multiprocessing.popen_spawn_posix", "multiprocessing.popen_forkserver")
_PACKAGE_PARENT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
# The package imported as the command imports it (autograd_lens/__init__.py then leaves torch
# to the program: see its _command), from the folder the command imported it from.
_SETUP = ("import sys\n"
          "argv = sys.orig_argv\n"
          "sys.path.insert(0, {parent!r})\n"
          "sys.orig_argv = [sys.executable, '-m', 'autograd_lens']\n"
          "try:\n"
          "    from autograd_lens.text.spawned import watch_this_child\n"
          "finally:\n"
          "    del sys.path[0]\n"
          "    sys.orig_argv = argv\n"
          "watch_this_child({setup!r})\n")


class _Start:
    """The preparation data's extra entry: pickled as a call of ``exec`` of the few lines
    (:data:`_SETUP`) that start the watch in the child."""

    def __init__(self, setup: dict) -> None:
        self.setup = setup

    def __reduce__(self) -> tuple:
        code = _SETUP.format(parent=_PACKAGE_PARENT, setup=self.setup)
        return exec, ("try:\n" + "".join(f"    {line}\n" for line in code.splitlines()) +
                      "except Exception:\n    pass\n", {})


class Spawning(importlib.abc.MetaPathFinder):
    """A context manager: while it is entered, the children that ``multiprocessing`` starts by
    spawn or forkserver are watched (their failures go to the file ``children``, told to the
    command's process ``parent``). ``multiprocessing.spawn`` is changed only once the program
    imports it (so a program that never does pays nothing), and put back on exit. ``started``:
    the folder the command started in (the diff's paths are relative to it)."""

    def __init__(self, parent: int, children: str, started: str) -> None:
        self.setup = {"parent": parent, "children": children, "started": started}
        self.patched: Any = None  # (the module, its own get_preparation_data)

    def find_spec(self, name: str, path: Any, target: Any = None) -> Any:
        if name != "multiprocessing.spawn":
            return None
        self._leave_meta_path()
        return loaded_then(name, path, target, self._patch)

    def _patch(self, spawn: Any) -> None:
        own = spawn.get_preparation_data
        setup = self.setup

        def get_preparation_data(name: str) -> dict:
            try:
                data = own(name)
            except BaseException as error:  # such as a child starting one while it bootstraps
                error.__traceback__ = without_ours(error.__traceback__)
                raise  # a bare raise adds no entry: the traceback is python's own
            launch = sys._getframe(1)
            if launch.f_globals.get("__name__") in _LAUNCHERS and \
                    launch.f_code.co_name == "_launch":
                method = getattr(launch.f_locals.get("self"), "method", None) or "spawn"
                data[_ENTRY] = _Start(dict(setup, method=method))
            return data

        get_preparation_data.__wrapped__ = own
        get_preparation_data.__doc__, get_preparation_data.__name__ = own.__doc__, own.__name__
        get_preparation_data.__qualname__ = own.__qualname__
        get_preparation_data.__module__ = own.__module__
        spawn.get_preparation_data = get_preparation_data
        self.patched = (spawn, own)

    def _leave_meta_path(self) -> None:
        if self in sys.meta_path:
            sys.meta_path.remove(self)

    def __enter__(self) -> Spawning:
        spawn = sys.modules.get("multiprocessing.spawn")
        if spawn is not None:
            self._patch(spawn)
        else:
            sys.meta_path.insert(0, self)
        return self

    def __exit__(self, *exc_info: Any) -> None:
        self._leave_meta_path()
        if self.patched is not None:
            spawn, own = self.patched
            if getattr(spawn.get_preparation_data, "__wrapped__", None) is own:
                spawn.get_preparation_data = own
            self.patched = None


# What the watch replaces in torch (see autograd_lens.run.watch and autograd_lens.lens.history).
_WATCHED = (("torch.autograd", "_engine_run_backward"), ("torch.utils.checkpoint", "checkpoint"),
            ("torch.utils.checkpoint", "checkpoint_sequential"))


class _Deferred:
    """The watch of a spawned child, started at the child's first backward call (or first
    checkpoint) rather than when it imports torch: until then only thin stand-ins for what
    the watch replaces, so that a child that never calls backward (a DataLoader's worker) does
    not import the diagnosis (about 0.2 s). Then ``start()`` enters the watch on torch's own
    functions, and the call goes on through it, as if the watch had been there from the start
    (no backward call, no checkpoint before it to record)."""

    def __init__(self, start: Any) -> None:
        self.start = start
        self.saved: list[tuple[Any, str, Any]] = []
        self.started = False

    def __enter__(self) -> _Deferred:
        import importlib

        for module, name in _WATCHED:
            owner = importlib.import_module(module)
            original = getattr(owner, name)
            self.saved.append((owner, name, original))
            setattr(owner, name, self._stand_in(owner, name, original))
        return self

    def _stand_in(self, owner: Any, name: str, original: Any) -> Any:
        deferred = self

        @functools.wraps(original)
        def stand_in(*args: Any, **kwargs: Any) -> Any:
            if not deferred.started:
                deferred.started = True
                deferred._put_back()
                deferred.start()
            try:
                return getattr(owner, name)(*args, **kwargs)
            except BaseException as error:  # python's traceback, without this frame
                error.__traceback__ = without_ours(error.__traceback__)
                raise
        return stand_in

    def _put_back(self) -> None:
        for owner, name, original in self.saved:
            setattr(owner, name, original)

    def __exit__(self, *exc_info: Any) -> None:
        if not self.started:
            self._put_back()


_KEPT: list[Any] = []  # the child's watch and its own Spawning, for the child's whole life


def watch_this_child(setup: dict) -> None:
    """In a child started by spawn or forkserver, before its preparation: watch its backward
    calls (from the first, once the program has imported torch); a failure is said here and
    handed to the command's process (``setup``: its pid, the children's file, the folder it
    started in, how this child was started); children this child starts by spawn are watched
    the same way. What says the failure is imported at the first backward call too."""
    from ..run.arrival import OnTorch

    me = os.getpid()  # this child (a process it forks later is not it)

    def watch() -> Any:
        from .child_processes import START_METHOD
        from .edit_block import STARTED_IN
        from .telling import Teller
        from ..run.watch import Watch

        START_METHOD[:] = [me, setup["method"]]
        watching: list = []
        teller = Teller(None, lambda: watching[0].count if watching else 0, False,
                        "it failed in a child process")
        STARTED_IN[:] = [setup["started"]]
        teller.pid, teller.children = setup["parent"], setup["children"]
        watching.append(Watch(on_failure=teller.failed, on_repeat=teller.repeated))
        _KEPT.append(teller)
        return watching[-1].__enter__()

    on_torch = OnTorch(lambda: [_Deferred(watch)])
    spawning = Spawning(setup["parent"], setup["children"], setup["started"])
    _KEPT.extend([on_torch, spawning])
    spawning.__enter__()
    on_torch.__enter__()
