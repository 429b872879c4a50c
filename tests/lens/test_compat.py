"""autograd_lens/lens/compat.py: the two ways of reading a saved tensor agree, and neither runs a hook.

torch 2.12 and newer tell whether a saved-tensor hook packed a saved tensor, and what it packed
(``SavedTensor.unpack_hook``, ``.data``, ``.unpack()``); torch 2.4 to 2.11 do not, and the library
unpacks there under a tracer that stops a hook before it runs. On a release that has the
attributes, these tests also switch them off (``compat.SAVED_TENSOR_ATTRIBUTES = False``), so the
older releases' way runs here too and must read every graph as the attributes do; CI's torch
matrix runs them on the older releases themselves.
"""

from __future__ import annotations

import sys

import pytest
import torch
from torch.utils.checkpoint import checkpoint

import autograd_lens as al
from autograd_lens.lens import compat
from lens_functions import Square

WAYS = ["attributes", "tracer"] if compat.SAVED_TENSOR_ATTRIBUTES else ["tracer"]


@pytest.fixture(params=WAYS)
def way(request, monkeypatch):
    """Read saved tensors one way: through the attributes (2.12 on) or through the tracer."""
    if request.param == "tracer":
        monkeypatch.setattr(compat, "SAVED_TENSOR_ATTRIBUTES", False)
    return request.param


class TwoSaved(torch.autograd.Function):
    """x * y, saving both."""

    @staticmethod
    def forward(ctx, x, y):
        ctx.save_for_backward(x, y)
        return x * y

    @staticmethod
    def backward(ctx, grad):
        x, y = ctx.saved_tensors
        return grad * y, grad * x


def plain(x):
    return (x * x).sin().sum()


def custom(x):
    return Square.apply(x).sum()


def listed(x):
    return x[torch.tensor([0, 2])].sum()


def ckpt(x):
    return checkpoint(lambda t: t.sin().exp(), x, use_reentrant=False).sum()


def ckpt_reentrant(x):
    return checkpoint(lambda t: t.sin().exp(), x, use_reentrant=True).sum()


def metered(x):
    with al.saved_memory():
        return (x.sin() * 3).sum()


def on_cpu(x):
    with torch.autograd.graph.save_on_cpu():
        return x.cos().sum()


def listed_under_a_hook(x):
    with torch.autograd.graph.save_on_cpu():
        return x[torch.tensor([0, 2])].sum()


GRAPHS = [plain, custom, listed, ckpt, ckpt_reentrant, metered, on_cpu, listed_under_a_hook]


def read(loss):
    return [(s.node_name, s.name, s.state, s.nbytes, s.shape, s.hooked) for s in al.saved_tensors(loss)]


@pytest.mark.skipif(not compat.SAVED_TENSOR_ATTRIBUTES, reason="needs a release with the attributes to compare with")
@pytest.mark.parametrize("build", GRAPHS, ids=lambda f: f.__name__)
def test_tracer_reads_what_the_attributes_read(build, monkeypatch):
    x = torch.randn(4, requires_grad=True)
    loss = build(x)
    with_attributes = read(loss)
    monkeypatch.setattr(compat, "SAVED_TENSOR_ATTRIBUTES", False)
    assert read(loss) == with_attributes
    loss.backward()
    after = read(loss)
    monkeypatch.setattr(compat, "SAVED_TENSOR_ATTRIBUTES", True)
    assert read(loss) == after and {s[2] for s in after} == {"freed"}


@pytest.mark.parametrize("build", GRAPHS, ids=lambda f: f.__name__)
def test_looking_runs_no_hook_and_backward_is_unchanged(build, way):
    unpacked = []

    def pack(t):
        return t

    def unpack(t):
        unpacked.append(1)
        return t

    x = torch.randn(4, requires_grad=True)
    with torch.autograd.graph.saved_tensors_hooks(pack, unpack):
        loss = build(x)
    twin_x = x.detach().clone().requires_grad_()
    with torch.autograd.graph.saved_tensors_hooks(pack, unpack):
        twin = build(twin_x)
    slots = al.saved_tensors(loss)
    al.diagnose(loss)
    assert unpacked == [] and slots
    loss.backward()
    twin.backward()
    assert torch.equal(x.grad, twin_x.grad)


@pytest.mark.parametrize("reentrant", [False, True])
def test_looking_never_recomputes_a_checkpoint(way, reentrant):
    calls = []

    def block(t):
        calls.append(1)
        return t.sin().exp()

    out = checkpoint(block, torch.randn(4, requires_grad=True), use_reentrant=reentrant).sum()
    assert al.diagnose(out).ok and len(calls) == 1
    out.backward()
    assert len(calls) == 2


def test_checkpoint_input_changed_in_place_is_seen(way):
    x = torch.randn(4, requires_grad=True)
    h = x * 1
    out = checkpoint(lambda t: t.sin().exp(), h, use_reentrant=False).sum()
    with torch.no_grad():
        h.mul_(2)
    assert "modified" in {s.state for s in al.saved_tensors(out)}
    with pytest.raises(RuntimeError):
        out.backward()


def test_meter_in_place_change_is_seen(way):
    w = torch.randn(3, requires_grad=True)
    with al.saved_memory():
        loss = (w.sin() * 3).sum()
    with torch.no_grad():
        w.mul_(2)
    sin = next(s for s in al.saved_tensors(loss) if s.node_name == "SinBackward0")
    assert sin.hooked and sin.state == "modified"


def test_several_tensors_packed_by_a_hook(way):
    """On 2.4 to 2.11 one hook-packed tensor of several cannot be read alone: size unknown."""
    x, y = torch.randn(3, requires_grad=True), torch.randn(3, requires_grad=True)
    with torch.autograd.graph.save_on_cpu():
        loss = TwoSaved.apply(x, y).sum()
    slots = [(s.name, s.state, s.hooked, s.nbytes) for s in al.saved_tensors(loss)]
    known = compat.SAVED_TENSOR_ATTRIBUTES
    assert slots == [("0", "alive", True, 12 if known else None), ("1", "alive", True, 12 if known else None)]
    loss.backward()
    assert [(s.name, s.state) for s in al.saved_tensors(loss)] == [("saved_tensors", "freed")]


def test_tracer_puts_back_the_trace_function_it_found(way):
    def tracer(frame, event, arg):
        return None

    x = torch.randn(3, requires_grad=True)
    loss = ckpt(x)
    previous = sys.gettrace()
    sys.settrace(tracer)
    try:
        al.saved_tensors(loss)
        assert sys.gettrace() is tracer
    finally:
        sys.settrace(previous)
