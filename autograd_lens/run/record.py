"""The replay's recording: what the program did, seen while it ran, up to the failing call.

The first run (:mod:`autograd_lens.run.watch`) only catches the failure. The replay runs the program
again in a second process under :class:`Recording`, which asks PyTorch while things happen:

* :class:`_Recorder`, one ``TorchDispatchMode``, sees every ATen operation. One whose schema
  marks an argument as written (``relu_`` inside ``nn.ReLU(inplace=True)``, ``copy_`` from
  ``x[i] = v``, ``add_`` from ``+=``, an optimizer's ``_foreach_*_``) is kept as a **write**:
  the tensor's storage, its version after the write and its shape, the innermost frame in the
  user's files with the call chain, and the library line under it. An operation that made an
  autograd node is kept as a **creation**: the autograd kernel numbers the node before the
  operation reaches the mode, so the sequence number read there names the node, and the user's
  line with its call chain (which statement of each scope was running) and the counts of backward calls and optimizer steps so far go with it.
* the function through which backward and ``autograd.grad`` run the engine is wrapped: each
  call is kept (its line, whether it kept the graph, its roots), and the one that fails with
  the freed-graph or in-place error is explained from what was kept
  (:mod:`autograd_lens.run.record_evidence`), written as JSON to ``spec["record"]``, the watch
  of the same run explains it with every earlier call recorded (its finding written to
  ``spec["finding"]``: the first run records none), and the program is stopped there;
* torch.optim's global step hooks keep every optimizer step;
* ``nn.Module.__init__`` is wrapped: each module's construction site is kept (the user's line
  that made it: ``nn.Dropout(0.25, inplace=True)`` inside an ``nn.Sequential``, not the
  ``super().__init__()`` of a module class), so a write in a library module's forward is said
  with the line that made that module.

Recording is heavy (a Python call per operation): it only ever runs in the replay.
"""

from __future__ import annotations

import collections
import functools
import json
import sys
import weakref
from array import array
from typing import Any

import torch
from torch.utils._python_dispatch import TorchDispatchMode

from ..lens.errors import error_kind
from ..lens.graph import read_once
from .counting import traced
from .sites import _Sites
from .tensor_names import _module_names, _names, _running_module, _written, storage_key

_KEPT_ROOTS = 32  # the roots of the newest backward calls, kept to tell which one freed a node


class _Recorder(TorchDispatchMode):
    """Every write and every node's creation (see the module's docstring)."""

    def __init__(self, log: "Log") -> None:
        super().__init__()
        self.log = log
        self.writes_of: dict[Any, tuple] = {}

    def __torch_dispatch__(self, func: Any, types: Any, args: Any = (), kwargs: Any = None):
        kwargs = kwargs or {}
        log = self.log
        number = torch._C._autograd._get_sequence_nr()
        made = number != log.last_number  # a node was made for this operation: number - 1
        written = self.writes_of.get(func)
        if written is None:
            written = self.writes_of[func] = _written(func)
        if made or written:
            site, frame, caller = log.sites.locate(2, True)
            inside = log.inside(caller)
            del caller
        if made:
            log.last_number = number
            log.made.append(number)
            log.made_site.append(site)
            log.made_counts.append(log.backward_count)
            log.made_steps.append(log.step_count)
        if written:  # kept before it runs: the version moves once the mode has returned
            module = _running_module(sys._getframe(1), frame)
            for position, name in written:
                value = args[position] if position < len(args) else kwargs.get(name)
                for tensor in (value if isinstance(value, (list, tuple)) else (value,)):
                    if isinstance(tensor, torch.Tensor):
                        log.write(func, tensor, number, site, frame, module, inside)
            del module
        if made or written:
            del frame
        result = func(*args, **kwargs)
        if made:  # the storages the node can have saved: its operation's inputs and outputs
            given = {storage_key(t) for t in args if isinstance(t, torch.Tensor)}
            new = {storage_key(t) for t in (result if isinstance(result, (list, tuple))
                                            else (result,)) if isinstance(t, torch.Tensor)}
            log.made_storages.append(frozenset(given | new))
            inside.update(new - given - _listed(args, kwargs) - {None, 0})
        return result


def _listed(args: tuple, kwargs: dict) -> set:
    """The storages of the tensors an operation gets in lists and by keyword (a view of one of
    them, as ``broadcast_tensors`` makes, is no new storage); those it gets by position alone
    are read by the caller already."""
    return {storage_key(t) for value in (*(a for a in args if isinstance(a, (list, tuple))),
                                         *kwargs.values())
            for t in (value if isinstance(value, (list, tuple)) else (value,))
            if isinstance(t, torch.Tensor)}


def _maker(frame: Any, module: Any) -> Any:
    """The frame that made ``module``: past the constructors of its own classes (each an
    ``__init__`` whose first argument is ``module``: ``super().__init__()`` of ``Critic``, of
    ``nn.Dropout``)."""
    while frame is not None and frame.f_code.co_name == "__init__" and \
            frame.f_code.co_argcount and \
            frame.f_locals.get(frame.f_code.co_varnames[0]) is module:
        frame = frame.f_back
    return frame


class Log:
    """What :class:`Recording` keeps: creations (parallel arrays, newest last), writes,
    backward calls, optimizer steps, and the count of each."""

    def __init__(self) -> None:
        self.sites = _Sites()
        self.last_number = -1
        self.made, self.made_site = array("q"), array("q")
        self.made_counts, self.made_steps = array("q"), array("q")
        self.made_storages: list[frozenset] = []
        self.writes: list[tuple] = []
        self.backwards: list[dict] = []
        self.roots: collections.deque = collections.deque(maxlen=_KEPT_ROOTS)
        self.steps: list[dict] = []
        self.backward_count = 0  # calls that returned
        self.step_count = 0  # steps that ended
        self.in_step: int | None = None  # the number of the step running now
        self.depth = 0  # backward calls running now
        # The call running now (its frame past the plumbing, at its instruction) and the
        # storages its operations made so far (see inside).
        self._caller: Any = None
        self._caller_at = -1
        self._made_inside: set = set()
        self._modules: dict[int, tuple[Any, int]] = {}  # id: (a weak reference, its site)

    def module_made(self, module: Any, frame: Any) -> None:
        """Keep where ``module`` was made: ``frame``, the frame that called its constructor."""
        try:
            self._modules[id(module)] = (weakref.ref(module), self.sites.at(frame, True)[0])
        except TypeError:  # a module that takes no weak reference: its site is not kept
            pass

    def module_site(self, module: Any) -> int:
        """The site where ``module`` was made, as recorded, else -1."""
        kept = self._modules.get(id(module))
        return kept[1] if kept is not None and kept[0]() is module else -1

    def inside(self, caller: Any) -> set:
        """The new storages that the operations of the call running now have made so far: one
        call from Python into ATen (the ``caller`` frame at its instruction), as ``lstm_cell``,
        whose kernel writes temporaries of its own in place. No Python code runs between them,
        so no name of the program's can hold one: its write is kept without names, and the
        search for them (the slowest part of keeping a write) is skipped."""
        if caller is None or caller is not self._caller or caller.f_lasti != self._caller_at:
            self._caller, self._caller_at = caller, -1 if caller is None else caller.f_lasti
            self._made_inside = set()
        return self._made_inside

    def write(self, func: Any, tensor: torch.Tensor, number: int, site: int,
              frame: Any, module: Any = None, inside: set = frozenset()) -> None:
        """Keep a write: (number, storage, version after, shape, op, site, backward calls and
        steps so far, the step running, in a backward, a weight, the user's names for it, the
        class of the library module whose forward made it, the user's names for that module,
        and the site that made that module, or -1).
        ``inside``: the storages the running call made itself (see :meth:`inside`), named by
        nothing of the user's."""
        try:  # the version the write takes it to (PyTorch adds one once the mode returns)
            version = tensor._version + 1
        except Exception:  # noqa: BLE001 - an inference tensor has no version counter
            return
        key = storage_key(tensor)
        quiet = self.in_step is not None or self.depth > 0  # an optimizer's, autograd's own
        self.writes.append((number, key, version, tuple(tensor.shape), func.__name__, site,
                            self.backward_count, self.step_count, self.in_step, self.depth > 0,
                            bool(tensor.requires_grad and tensor.is_leaf),
                            () if quiet or frame is None or key in inside else
                            _names(frame, key),
                            type(module).__name__ if module is not None else "",
                            () if quiet or frame is None else _module_names(frame, module),
                            -1 if module is None else self.module_site(module)))

    def step_started(self, optimizer: Any, args: Any, kwargs: Any) -> None:
        self.in_step = self.step_count + 1

    def step_ended(self, optimizer: Any, args: Any, kwargs: Any) -> None:
        self.step_count += 1
        self.in_step = None
        self.steps.append({"number": self.step_count, "optimizer": type(optimizer).__name__,
                           "site": self.sites.here(2, False),
                           "sequence": torch._C._autograd._get_sequence_nr(),
                           "after_backward_calls": self.backward_count})


class Recording:
    """Run a program under full recording (``with Recording(spec): run it``): when its backward
    call fails with the freed-graph or in-place error, the evidence (see
    :func:`autograd_lens.run.record_evidence.evidence`) is written as JSON to ``spec["record"]``
    and the program is stopped there (``counting.Enough``)."""

    def __init__(self, spec: dict, watch: Any = None) -> None:
        self.path = spec["record"]
        # The watch of the same run (see autograd_lens.run.watch): at the failure, its finding,
        # made with every earlier call recorded, is written to spec["finding"] too.
        self.watch, self.finding_path = watch, spec.get("finding")
        # Where the failing call's number, kind and steps before it go first, at the failure:
        # what the runs of the edits need of the replay, to start while its evidence is made.
        self.failed_path = spec.get("failed_at")
        self.written = False  # the evidence, at the failing call (an inner one when nested)
        self.failing = spec.get("limit")  # the number of the call that failed in the first run
        self.log = Log()
        self._mode = _Recorder(self.log)
        self._saved: Any = None
        self._init: Any = None
        self._hooks: list[Any] = []

    def _wrap(self, original: Any) -> Any:
        log, recording = self.log, self

        def recorded(outputs, *args, **kwargs):
            if traced(outputs):  # a compiler's tracing: not one of the program's calls
                return original(outputs, *args, **kwargs)
            number = torch._C._autograd._get_sequence_nr()
            site = log.sites.here(2, True)  # with its callers: a wrapper called from two lines
            nested = log.depth > 0  # run by a backward already running (a custom Function's)
            log.depth += 1
            try:
                result = original(outputs, *args, **kwargs)
            except RuntimeError as error:
                if error_kind(error) is not None:
                    recording.failed(error, outputs, site)
                raise
            finally:
                log.depth -= 1
            retained = bool(args[1] or args[2]) if len(args) > 2 else False
            log.backward_count += 1
            log.backwards.append({"number": log.backward_count, "site": site,
                                  "retained": retained, "sequence": number, "nested": nested,
                                  "steps_before": log.step_count,
                                  "grad": kwargs.get("accumulate_grad", True) is False})
            log.roots.append((log.backward_count, [t.grad_fn for t in outputs
                                                   if getattr(t, "grad_fn", None) is not None]))
            return result
        return recorded

    def _wrap_init(self, original: Any) -> Any:
        log = self.log

        @functools.wraps(original)
        def made(module, *args, **kwargs):
            frame = _maker(sys._getframe(1), module)
            try:
                log.module_made(module, frame)
            finally:
                del frame
            return original(module, *args, **kwargs)
        return made

    def failed(self, error: RuntimeError, outputs: Any, site: int) -> None:
        """Write the evidence of the failing call, then stop the program; a failure at
        another call (one the program catches, as in a smoke test) goes on as it would. A
        backward run by another (a custom Function's ``autograd.grad``) gives the evidence, and
        the outer one, when the error reaches it, the finding (as in the first run)."""
        from .record_evidence import evidence
        from .counting import Enough

        if self.failing is not None and self.log.backward_count + 1 != self.failing:
            return
        with read_once():  # the evidence and the finding read the same failed graph
            if not self.written:
                if self.failed_path:  # at once, for the runs of the edits (the evidence is slower)
                    with open(self.failed_path, "w", encoding="utf-8") as handle:
                        json.dump({"call": self.log.backward_count + 1, "kind": error_kind(error),
                                   "steps_before": self.log.step_count}, handle)
                found = evidence(self.log, error, outputs, site, sys._getframe(2))
                with open(self.path, "w", encoding="utf-8") as handle:
                    json.dump(found, handle)
                self.written = True
            running = self.watch._state().depth if self.watch is not None else self.log.depth
            if running > 1:  # (this thread's calls running: the watch counts per thread)
                return
            if self.watch is not None and self.finding_path:
                from .replay_run import dump_finding

                dump_finding(self.watch.explained_here(error, outputs), self.finding_path)
        raise Enough

    def __enter__(self) -> "Recording":
        import torch.optim.optimizer as hooks

        self._saved = torch.autograd._engine_run_backward
        torch.autograd._engine_run_backward = self._wrap(self._saved)
        self._init = torch.nn.Module.__init__
        torch.nn.Module.__init__ = self._wrap_init(self._init)
        self._hooks = [hooks.register_optimizer_step_pre_hook(self.log.step_started),
                       hooks.register_optimizer_step_post_hook(self.log.step_ended)]
        self._mode.__enter__()
        return self

    def __exit__(self, *exc_info: Any) -> None:
        self._mode.__exit__(*exc_info)
        for handle in self._hooks:
            handle.remove()
        torch.autograd._engine_run_backward = self._saved
        torch.nn.Module.__init__ = self._init
