"""The command's first run: ``Watch(recording=False)``, the wrapper that only counts.

Its parameters are the engine's own, so every way torch (or a program) calls the engine must give
what it gives unwatched; what it keeps of each call must be the calls the explaining reads (not a
compiler's tracing); and a failure must still be explained there.
"""

from __future__ import annotations

import threading

import pytest
import torch

from autograd_lens.run.counting import CallCounter
from autograd_lens.run.watch import Watch


def _grads(run):
    """The gradients ``run`` leaves on a fresh pair of leaves, and what it returns."""
    torch.manual_seed(0)
    w, v = torch.randn(3, requires_grad=True), torch.randn(3, requires_grad=True)
    returned = run(w, v)
    return [None if t.grad is None else t.grad.clone() for t in (w, v)], returned


CALLS = {
    "backward": lambda w, v: (w * v).sum().backward(),
    "backward with a gradient": lambda w, v: (w * v).backward(torch.ones(3)),
    "backward onto inputs": lambda w, v: (w * v).sum().backward(inputs=[w]),
    "autograd.grad": lambda w, v: torch.autograd.grad((w * v).sum(), [w, v]),
    "grad, allow_unused": lambda w, v: torch.autograd.grad((w * 2).sum(), [w, v],
                                                           allow_unused=True),
    "grad, create_graph": lambda w, v: torch.autograd.grad((w * w * v).sum(), w,
                                                           create_graph=True)[0].sum().backward(),
    # The engine called with its own keywords, some left out: passed on as given.
    "engine by keyword": lambda w, v: torch.autograd._engine_run_backward(
        ((w * v).sum(),), grad_tensors=(torch.tensor(1.0),), keep_graph=False,
        create_graph=False, accumulate_grad=True),
}


@pytest.mark.parametrize("name", list(CALLS))
def test_every_call_gives_what_it_gives_unwatched(name):
    plain, returned = _grads(CALLS[name])
    with Watch(recording=False):
        watched, returned_watched = _grads(CALLS[name])
    for a, b in zip(plain, watched):
        assert (a is None and b is None) or torch.equal(a, b)
    if isinstance(returned, tuple):
        assert all((a is None and b is None) or torch.equal(a, b)
                   for a, b in zip(returned, returned_watched))


def test_the_calls_kept_are_the_main_threads_on_plain_tensors():
    w = torch.ones(2, requires_grad=True)
    watch = Watch(recording=False)
    with watch:
        y = (w * w).sum()
        y.backward(retain_graph=True)
        torch.autograd.grad((w * 3).sum(), w)
        other = threading.Thread(target=lambda: (w * 2).sum().backward())
        other.start()
        other.join()
    calls = watch.history.calls
    assert watch.count == 3  # every thread's call that returned
    assert [(c.kind, c.retained) for c in calls] == [("backward", True), ("grad", False)]
    # The number kept is the one the thread had reached before the call: the graph's root
    # was made before it, so its number is not larger.
    assert y.grad_fn._sequence_nr() <= calls[0].sequence


def test_a_compilers_tracing_calls_are_not_counted():
    """``torch.compile`` traces a backward of its own (from ``torch._subclasses`` tensors) when
    it compiles a function whose output needs a gradient: not one of the program's calls. The
    first run and the runs of the edits count the program's two calls only, as the replay
    (whose dispatch mode runs the function as plain code) does."""
    roots = []
    engine = torch.autograd._engine_run_backward

    def seen(tensors, *args, **kwargs):  # under both counters: every call, tracing ones too
        roots.append(type(tensors[0]).__module__)
        return engine(tensors, *args, **kwargs)

    w = torch.ones(3, requires_grad=True)
    f = torch.compile(lambda x: (x * 2).tanh(), backend="aot_eager")
    watch, counter = Watch(recording=False), CallCounter()
    torch.autograd._engine_run_backward = seen
    try:
        with watch, counter:
            for _ in range(2):
                f(w).sum().backward()
    finally:
        torch.autograd._engine_run_backward = engine
    assert any(module.startswith("torch._subclasses.") for module in roots), roots
    assert watch.count == counter.count == 2
    assert [c.kind for c in watch.history.calls] == ["backward", "backward"]


def test_a_failure_is_explained_and_raised_unchanged():
    found = []
    w = torch.ones(2, requires_grad=True)
    with Watch(recording=False, on_failure=lambda finding, frame: found.append(finding)):
        loss = (w.exp() * w).sum()
        loss.backward()
        with pytest.raises(RuntimeError, match="backward through the graph a second time"):
            loss.backward()
    assert len(found) == 1 and found[0] is not None
    assert torch.autograd._engine_run_backward.__name__ == "_engine_run_backward"  # put back
