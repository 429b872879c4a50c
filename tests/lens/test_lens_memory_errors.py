"""The saved-memory meter and the freed-graph error matcher."""

from __future__ import annotations

import gc
import weakref

import pytest
import torch
from torch import nn

import autograd_lens as al


# ---------------------------------------------------------------------------------------------
# saved_memory


def test_meter_counts_saved_bytes_and_sees_them_released():
    x = torch.randn(100, requires_grad=True)
    with al.saved_memory() as meter:
        loss = (x.exp() * x).sum()      # ExpBackward0 saves result, MulBackward0 saves both
    assert meter.saved_count == 3 and meter.saved_bytes == 3 * 400
    assert meter.alive_bytes == 1200 and meter.alive_count == 3
    loss.backward()
    assert meter.alive_bytes == 0 and meter.alive_count == 0
    assert meter.saved_bytes == 1200      # what was saved stays counted
    assert "saved=1200 bytes" in repr(meter)


def test_meter_with_retain_graph_holds_until_the_graph_goes():
    x = torch.randn(10, requires_grad=True)
    with al.saved_memory() as meter:
        loss = x.sin().sum()
    loss.backward(retain_graph=True)
    assert meter.alive_bytes == 40
    del loss
    gc.collect()
    assert meter.alive_bytes == 0


def test_meter_does_not_keep_tensors_alive():
    x = torch.randn(50, requires_grad=True)
    with al.saved_memory() as meter:
        h = x.exp()
        loss = h.sin().sum()
    ref = weakref.ref(h)
    del h, loss
    gc.collect()
    assert ref() is None
    assert meter.alive_bytes == 0


def test_meter_does_not_change_gradients():
    def run(metered):
        torch.manual_seed(0)
        model = nn.Sequential(nn.Linear(4, 8), nn.Tanh(), nn.Linear(8, 1))
        x = torch.randn(5, 4)
        if metered:
            with al.saved_memory():
                loss = model(x).pow(2).mean()
        else:
            loss = model(x).pow(2).mean()
        loss.backward()
        return [p.grad.clone() for p in model.parameters()]

    for a, b in zip(run(False), run(True)):
        assert torch.equal(a, b)


def test_meter_re_implements_the_in_place_check():
    # Saved-tensor hooks switch autograd's own version check off; the meter checks instead,
    # so a tensor modified after saving fails exactly as it does without the meter.
    for metered in (False, True):
        w = torch.randn(3, requires_grad=True)
        if metered:
            with al.saved_memory():
                loss = (w.sin() * 2).sum()
        else:
            loss = (w.sin() * 2).sum()
        with torch.no_grad():
            w.add_(1)
        with pytest.raises(RuntimeError, match="modified by an inplace operation"):
            loss.backward()


def test_meter_allows_what_autograd_allows():
    w = torch.randn(3, requires_grad=True)
    with al.saved_memory():
        h = w.exp()
        loss = (h * 2).sum()      # h saved by ExpBackward0 as its result only
    with torch.no_grad():
        w.add_(0)                 # w itself is not saved: still fine
    loss.backward()
    assert torch.allclose(w.grad, 2 * h.detach())


def test_meter_cannot_be_entered_twice():
    meter = al.saved_memory()
    with meter:
        with pytest.raises(RuntimeError, match="already active"):
            meter.__enter__()
    assert isinstance(meter, al.saved_memory) and not hasattr(al, "SavedMemoryMeter")


# ---------------------------------------------------------------------------------------------
# errors

WORDINGS = [
    "Trying to backward through the graph second time, but the buffers have already been freed. "
    "Please specify retain_variables=True when calling backward for the first time.",
    "Trying to backward through the graph a second time, but the buffers have already been "
    "freed. Specify retain_graph=True when calling backward the first time.",
    "Trying to backward through the graph a second time, but the saved intermediate results "
    "have already been freed. Specify retain_graph=True when calling backward the first time.",
    "Trying to backward through the graph a second time (or directly access saved tensors after "
    "they have already been freed). Saved intermediate values of the graph are freed when you "
    "call .backward() or autograd.grad(). Specify retain_graph=True if you need to backward "
    "through the graph a second time or if you need to access saved tensors after calling "
    "backward.",
]


@pytest.mark.parametrize("wording", WORDINGS)
def test_every_wording_is_recognised(wording):
    assert al.is_freed_graph_error(RuntimeError(wording))
    with al.expect_freed_graph_error(quiet=True) as caught:
        raise RuntimeError(wording)
    assert caught.error is not None and caught.message.startswith("Trying to backward")


def test_the_real_error_is_recognised_and_explained(capsys):
    x = torch.ones(2, requires_grad=True)
    loss = (x * x).sum()
    loss.backward()
    with al.expect_freed_graph_error() as caught:
        loss.backward()
    out = capsys.readouterr().out
    assert out.startswith("Caught as expected: RuntimeError: Trying to backward through the graph")
    assert "What it means:" in out and caught.explanation in out


def test_expect_freed_graph_error_fails_loudly_without_it():
    x = torch.ones(2, requires_grad=True)
    with pytest.raises(al.NoFreedGraphError, match="finished without raising"):
        with al.expect_freed_graph_error():
            (x * x).sum().backward()


def test_expect_freed_graph_error_lets_other_errors_through():
    w = torch.randn(3, requires_grad=True)
    loss = (w.sin() * 2).sum()
    with torch.no_grad():
        w.add_(1)
    with pytest.raises(RuntimeError, match="inplace"):
        with al.expect_freed_graph_error():
            loss.backward()
    with pytest.raises(ValueError):
        with al.expect_freed_graph_error():
            raise ValueError("something else")


def test_matchers_reject_other_errors_and_bad_input():
    assert not al.is_freed_graph_error(RuntimeError("element 0 of tensors does not require grad"))
    assert not al.is_freed_graph_error(ValueError("backward through the graph a second time"))
    assert al.is_inplace_error(RuntimeError("x has been modified by an inplace operation: ..."))


def test_error_kind_names_the_two_stale_failures():
    w = torch.randn(3, requires_grad=True)
    loss = (w.sin() * 2).sum()
    with torch.no_grad():
        w.add_(1)
    with pytest.raises(RuntimeError) as modified:
        loss.backward()
    loss = (w.sin() * 2).sum()
    loss.backward()
    with pytest.raises(RuntimeError) as freed:
        loss.backward()
    assert al.error_kind(freed.value) == "freed" and al.error_kind(modified.value) == "modified"
    assert [al.error_kind(RuntimeError(text)) for text in WORDINGS] == ["freed"] * len(WORDINGS)
    assert al.error_kind(RuntimeError("element 0 of tensors does not require grad")) is None
    assert al.error_kind(ValueError("backward through the graph a second time")) is None


@pytest.mark.parametrize("function", [al.error_kind, al.is_freed_graph_error, al.is_inplace_error])
@pytest.mark.parametrize("bad", ["modified by an inplace operation", None, 3])
def test_error_matchers_want_an_exception(function, bad):
    with pytest.raises(TypeError, match=f"{function.__name__} expects an exception"):
        function(bad)
