"""What a verifying run counts: backward calls, optimizer steps, and which parameters got a
gradient, and when it has run enough (see :mod:`autograd_lens.run.verify` for what "enough" is)."""

from __future__ import annotations

import contextlib
from collections import Counter
from typing import Any

from ..lens.errors import error_kind
from . import reached
from .unseen import without_ours

MORE_CALLS = 2
"""How many backward calls past the one that failed a verifying run lets through."""


def traced(roots: Any) -> bool:
    """Whether a backward or ``autograd.grad`` call starts from a compiler's tracing tensors
    (``torch.compile`` tracing a backward on a ``FunctionalTensor`` over a ``FakeTensor``, both
    of ``torch._subclasses``), not from the program's own. Such a call is not counted: a call
    then has the same number in the first run, in the replay (which, under its dispatch mode,
    makes none) and in the runs of the edits. (Read from the type's module: this module is
    imported before the program imports torch.)"""
    root = roots[0] if isinstance(roots, (tuple, list)) and roots else roots
    return type(root).__module__.startswith("torch._subclasses.")


def _grad_inputs(args: tuple) -> list[Any]:
    """The tensors an ``autograd.grad`` call (torch's engine call: outputs, then gradients,
    retain_graph, create_graph, inputs) takes gradients for: the only ones it gives one."""
    inputs = args[3] if len(args) > 3 else ()
    return [t for t in inputs if getattr(t, "requires_grad", False)]


class CallCounter:
    """Counts the backward and ``autograd.grad`` calls that return and the optimizer steps (an
    outer wrapper around the watch's, on the function through which both run the engine).

    In the first run it keeps, at the failure, what the verifying runs compare with
    (:attr:`expected`: the names of the parameters the failing call would reach that an
    optimizer alive at the failure updates, with their counts, or, when the program has no
    optimizer, those it has written in place (:attr:`by_hand`), else all of them;
    :attr:`unstepped`: the others it would reach, None without an optimizer and by-hand writes;
    :attr:`steps_before`: the optimizer steps made before it). In a verifying run, ``limit``
    stops the program once that many calls have returned (or ``step_limit`` steps have been
    made), and the parameters that get a gradient in the calls from ``watch_from`` on (or in
    those made during a step from ``steps_from`` on; for an ``autograd.grad`` call, the inputs
    it takes gradients for) are kept. With ``wanted`` (the first run's
    :attr:`expected`) and ``stepped`` (they are the parameters an optimizer updates), a run at
    its limit goes on until the optimizers that update them have each stepped past the failing
    call (:meth:`settled`: each had its chance to get its gradient, a generator's from a loss of
    its own after the critic's calls), for at most as many calls and steps again as the first
    run made up to its failure, and 20 more."""

    def __init__(self, limit: int | None = None, step_limit: int | None = None,
                 watch_from: int | None = None, steps_from: int | None = None,
                 wanted: dict[str, int] | None = None, stepped: bool = False) -> None:
        self.count, self.limit, self.steps, self.step_limit = 0, limit, 0, step_limit
        self.watch_from, self.steps_from = watch_from, steps_from
        self.wanted = wanted if stepped else None
        self.call_cap = None if limit is None else limit + (watch_from or 0) + 1 + 20
        self.step_cap = None if step_limit is None else step_limit + (steps_from or 0) + 1 + 20
        self.updated: set[str] = set()  # the names of what optimizers updated past the failure
        self._stepping: set[int] = set()  # those optimizers
        self.expected: dict[str, int] | None = None
        self.unstepped: dict[str, int] | None = None
        self.by_hand = False  # no optimizer: the parameters the program wrote in place count
        self.steps_before = 0
        self.reached: dict[int, Any] = {}
        self.gave: set[int] = set()  # the ids of the reached leaves that got a gradient
        self.stepped_ids: set[int] = set()  # the parameters of optimizers that stepped, watched
        self.fed: set[int] = set()  # ... those of them holding a gradient at that step
        self._saved: list[tuple[str, Any]] = []
        self._hook: Any = None
        self._pre_hook: Any = None

    def _watched(self) -> bool:
        return (self.watch_from is not None and self.count >= self.watch_from) or \
            (self.steps_from is not None and self.steps >= self.steps_from)

    def _wrap(self, original: Any) -> Any:
        def counted(outputs: Any, *args: Any, **kwargs: Any) -> Any:
            if self._watched():
                with contextlib.suppress(Exception):
                    self._reach(reached.leaves(outputs) if kwargs.get("accumulate_grad", True)
                                is not False else _grad_inputs(args))
            try:
                result = original(outputs, *args, **kwargs)
            except BaseException as error:
                error.__traceback__ = without_ours(error.__traceback__)  # as the watch does
                if self.expected is None and isinstance(error, RuntimeError) and \
                        error_kind(error) is not None:
                    self._keep(outputs)
                raise
            if traced(outputs):  # a compiler's tracing: not one of the program's calls
                return result
            self.count += 1
            if self.limit is not None and self.count >= self.limit and \
                    (self.count >= self.call_cap or self.settled()):
                raise Enough
            return result
        return counted

    def _reach(self, leaves: list[Any]) -> None:
        """Keeps the leaves a watched call reaches, named while the modules that hold them are
        alive (a program that ends has dropped them by the time the run's result is written),
        each with a hook that notes when the engine computes a gradient for it."""
        new = [leaf for leaf in leaves if id(leaf) not in self.reached]
        if new:
            for leaf, name in zip(new, reached.names(new)):
                self.reached[id(leaf)] = (leaf, name)
                try:
                    leaf.register_hook(self._noting(id(leaf)))
                except RuntimeError:  # a tensor that requires no gradient gets none
                    continue

    def _noting(self, key: int) -> Any:
        def note(grad: Any) -> None:
            # A custom Function's backward that returns None for an input calls the hook with
            # None: no gradient came; one of zeros alone trains nothing (two terms that cancel,
            # as ``exp(logp - old_logp)`` with both computed anew from the same weights).
            if grad is not None and key not in self.gave and _not_zeros(grad):
                self.gave.add(key)
        return note

    def got(self) -> list[str]:
        """The names of the parameters that got a gradient (not zeros) in a watched call that
        ran, and, for one that an optimizer stepped while watched, held a gradient at one of
        those steps (zeros count there: a WGAN critic's last bias gets exactly zero under
        ``d_fake - d_real``): a gradient that a later backward leaves and the next
        ``zero_grad()`` clears before the optimizer steps (a generator's, from the critic's
        loss, when its own loss no longer reaches it) trains nothing."""
        return [name for key, (_, name) in self.reached.items() if key in self.gave and
                (key not in self.stepped_ids or key in self.fed)]

    def _before_step(self, optimizer: Any, *args: Any) -> None:
        if not self._watched():
            return
        with contextlib.suppress(Exception):  # an answer of ours must never add an error
            for group in optimizer.param_groups:
                for param in group["params"]:
                    self.stepped_ids.add(id(param))
                    if param.grad is not None:  # (zeros too: a WGAN critic's last bias)
                        self.fed.add(id(param))

    def settled(self) -> bool:
        """Whether the optimizers that update the parameters of :attr:`wanted` have each
        stepped past the failing call (True without ``wanted``)."""
        return self.wanted is None or all(name in self.updated for name in self.wanted)

    def keep(self, outputs: Any) -> None:
        """At a failure of the first run (the watch hands over the failing call's
        ``outputs``): the parameters the failing call would reach; a later failure's replace
        an earlier one's (a caught failure before the one explained)."""
        self._keep(outputs)

    def _keep(self, outputs: Any) -> None:
        """At the failure: the parameters the failing call would reach."""
        self.steps_before = self.steps
        try:
            found = [t for t in reached.leaves(outputs) if getattr(t, "requires_grad", False)]
            modules, optimizers = reached.alive()  # (read once: each read scans every object)
            named = reached.names(found, modules)
            stepped = reached.stepped(found, optimizers)
            if stepped is None:  # no optimizer: those the program updated in place by hand
                stepped = reached.written_in_place(found) or None
                self.by_hand = stepped is not None
            self.expected = dict(Counter(n for t, n in zip(found, named)
                                         if stepped is None or id(t) in stepped))
            if stepped is not None and not self.by_hand:  # and those an optimizer has trained
                # so far that the failing graph does not show (read inside a checkpointed
                # region, whose graph is built only when its backward runs)
                more = reached.trained_so_far({id(t) for t in found}, optimizers)
                for name in reached.names(more, modules):
                    self.expected[name] = self.expected.get(name, 0) + 1
            self.unstepped = None if stepped is None else \
                dict(Counter(n for t, n in zip(found, named) if id(t) not in stepped))
        except Exception:  # noqa: BLE001 - an answer of ours must never add an error
            self.expected, self.unstepped = {}, {}

    def _stepped(self, optimizer: Any, *args: Any) -> None:
        self.steps += 1
        if self.wanted is not None and id(optimizer) not in self._stepping and (
                (self.watch_from is not None and self.count > self.watch_from) or
                (self.steps_from is not None and self.steps > self.steps_from)):
            self._stepping.add(id(optimizer))
            with contextlib.suppress(Exception):
                self.updated.update(reached.names(
                    [p for group in optimizer.param_groups for p in group["params"]]))
        if self.step_limit is not None and self.steps >= self.step_limit and \
                (self.steps >= self.step_cap or self.settled()):
            raise Enough

    def __enter__(self) -> CallCounter:
        import torch
        from torch.optim.optimizer import (register_optimizer_step_post_hook,
                                           register_optimizer_step_pre_hook)

        original = torch.autograd._engine_run_backward
        self._saved.append(("_engine_run_backward", original))
        torch.autograd._engine_run_backward = self._wrap(original)
        self._hook = register_optimizer_step_post_hook(self._stepped)
        self._pre_hook = register_optimizer_step_pre_hook(self._before_step)
        return self

    def __exit__(self, *exc_info: Any) -> None:
        import torch

        if self._hook is not None:
            self._hook.remove()
            self._hook = None
        if self._pre_hook is not None:
            self._pre_hook.remove()
            self._pre_hook = None
        while self._saved:
            name, original = self._saved.pop()
            setattr(torch.autograd, name, original)


class Enough(BaseException):
    """Raised in the verifying run once enough calls have run (not an Exception, so that the
    program's own ``except Exception`` does not catch it)."""


def _not_zeros(grad: Any) -> bool:
    """Whether a gradient has an element other than zero (a sparse one, by its values; one that
    cannot be read so, as a tensor of another kind, counts as a gradient)."""
    try:
        values = grad.coalesce().values() if grad.is_sparse else grad
        return bool(values.ne(0).any())
    except Exception:  # noqa: BLE001 - a hook must not raise into the program's backward
        return True
