"""saved_tensors, walk, node_slots: states and sizes on the awkward graphs; bad input; looking changes nothing."""

from __future__ import annotations

import pytest
import torch
from torch import nn
from torch.utils.checkpoint import checkpoint

import autograd_lens as al
from lens_functions import Square


def states(root):
    return [(s.node_name, s.name, s.state) for s in al.saved_tensors(root)]


def test_names_states_and_sizes_of_builtin_slots():
    a = torch.randn(4, 3, requires_grad=True)
    b = torch.randn(3, 2, requires_grad=True)
    loss = (a @ b).exp().sum()
    slots = al.saved_tensors(loss)
    assert [(s.node_name, s.name, s.state) for s in slots] == [
        ("ExpBackward0", "result", "alive"), ("MmBackward0", "mat2", "alive"),
        ("MmBackward0", "self", "alive")]
    assert [s.nbytes for s in slots] == [4 * 2 * 4, 3 * 2 * 4, 4 * 3 * 4]
    assert [s.shape for s in slots] == [(4, 2), (3, 2), (4, 3)]
    assert all(s.dtype == torch.float32 and not s.hooked for s in slots)
    assert slots[1].node is slots[2].node is loss.grad_fn.next_functions[0][0].next_functions[0][0]
    loss.backward()
    after = al.saved_tensors(loss)
    assert [(s.node_name, s.name) for s in after] == [(s.node_name, s.name) for s in slots]
    assert {s.state for s in after} == {"freed"} and {s.nbytes for s in after} == {None}
    assert all(s.stale for s in after)


def test_graph_without_saved_tensors():
    x = torch.ones(3, requires_grad=True)
    plain = (x + 1).sum()
    assert al.saved_tensors(plain) == []
    assert [al.node_name(n) for n in al.walk(plain)] == ["SumBackward0", "AddBackward0",
                                                         "AccumulateGrad"]
    plain.backward()
    assert al.saved_tensors(plain) == []


def test_modified_in_place_after_saving():
    w = torch.randn(3, requires_grad=True)
    loss = (w.sin() * 2).sum()
    assert {s.state for s in al.saved_tensors(loss)} == {"alive"}
    with torch.no_grad():
        w.add_(1)
    assert ("SinBackward0", "self", "modified") in states(loss)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        loss.backward()


def test_partial_backward_grad_to_inner_tensor():
    w = torch.randn(3, requires_grad=True)
    h = w.exp()
    loss = (h.sin()).sum()
    torch.autograd.grad(loss, h)
    assert states(loss) == [("SinBackward0", "self", "freed"), ("ExpBackward0", "result", "alive")]


def test_partial_backward_inputs():
    w, v = torch.randn(3, requires_grad=True), torch.randn(3, requires_grad=True)
    loss = (w.exp() + v.sin()).sum()
    loss.backward(inputs=[v])
    assert dict(((n, s) for n, _, s in states(loss))) == {"ExpBackward0": "alive",
                                                          "SinBackward0": "freed"}


def test_retain_and_create_graph_keep_everything_alive():
    w = torch.randn(3, requires_grad=True)
    loss = (w.exp() * w).sum()
    loss.backward(retain_graph=True)
    assert {s for _, _, s in states(loss)} == {"alive"}
    g = torch.autograd.grad((w.sin() * w).sum(), w, create_graph=True)[0]
    assert {s for _, _, s in states(g.sum())} == {"alive"}


def test_custom_function_slots_are_indexed():
    x = torch.randn(5, requires_grad=True)
    y = Square.apply(x).sum()
    assert [(s.node_name, s.name, s.state, s.nbytes) for s in al.saved_tensors(y)] == [
        ("SquareBackward", "0", "alive", 20)]
    y.backward()
    assert states(y) == [("SquareBackward", "saved_tensors", "freed")]


@pytest.mark.parametrize("reentrant", [True, False])
def test_checkpoint_both_modes(reentrant):
    x = torch.randn(4, requires_grad=True)
    out = checkpoint(lambda t: t.sin().exp(), x, use_reentrant=reentrant).sum()
    before = al.saved_tensors(out)
    assert before and {s.state for s in before} == {"alive"}
    if not reentrant:
        assert all(s.hooked for s in before)     # packed by the checkpoint's hook
    out.backward()
    assert {s.state for s in al.saved_tensors(out)} == {"freed"}


def test_list_slots_are_indexed():
    x = torch.randn(5, requires_grad=True)
    idx = torch.tensor([0, 2, 3])
    y = x[idx].sum()
    assert [(s.node_name, s.name, s.state, s.nbytes, s.shape) for s in al.saved_tensors(y)] == [
        ("IndexBackward0", "indices[0]", "alive", 3 * 8, (3,))]
    y.backward()
    assert states(y) == [("IndexBackward0", "indices", "freed")]   # a freed list is emptied


def test_lstm_state_tuple():
    lstm = nn.LSTM(3, 4)
    out, (h, c) = lstm(torch.randn(2, 1, 3))
    loss = out.sum() + h.sum() + c.sum()
    assert al.saved_tensors(loss) and {s.state for s in al.saved_tensors(loss)} == {"alive"}
    loss.backward()
    assert {s.state for s in al.saved_tensors(c)} == {"freed"}


def test_graph_reached_from_two_roots():
    w = torch.randn(3, requires_grad=True)
    shared = w.exp()
    a, b = (shared * 2).sum(), shared.sin().sum()
    nodes = al.walk([a, b])
    assert len(nodes) == len(set(nodes))
    assert sum(al.node_name(n) == "ExpBackward0" for n in nodes) == 1
    assert len(al.saved_tensors([a, b])) == len(al.saved_tensors(a)) + 1
    a.backward()
    assert ("SinBackward0", "self", "alive") in states([a, b])
    assert ("ExpBackward0", "result", "freed") in states([a, b])


def test_slots_packed_by_the_meter_are_read_without_unpacking():
    w = torch.randn(3, requires_grad=True)
    with al.saved_memory():
        loss = (w.sin() * 3).sum()
    slots = al.saved_tensors(loss)
    sin_slot = next(s for s in slots if s.node_name == "SinBackward0")
    assert sin_slot.hooked and sin_slot.nbytes == 12 and sin_slot.state == "alive"
    with torch.no_grad():
        w.mul_(2)   # SinBackward0 saved w: the meter's holder sees the version move
    assert next(s for s in al.saved_tensors(loss) if s.node_name == "SinBackward0").state == "modified"
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        loss.backward()


def test_node_slots_and_walk_order_are_stable():
    w = torch.randn(3, requires_grad=True)
    first = [al.node_name(n) for n in al.walk((w * w).sin().sum())]
    second = [al.node_name(n) for n in al.walk((w * w).sin().sum())]
    assert first == second == ["SumBackward0", "SinBackward0", "MulBackward0", "AccumulateGrad"]
    node = (w * w).grad_fn
    assert [s.name for s in al.node_slots(node)] == ["other", "self"]


@pytest.mark.parametrize("function", [al.saved_tensors, al.walk, al.draw, al.diagnose,
                                      al.backward_frames])
@pytest.mark.parametrize("bad", [None, 1, 2.0, [1, 2], [torch.ones(1), "x"], "loss", {"a": 1}])
def test_not_a_tensor_is_a_type_error(function, bad):
    with pytest.raises(TypeError, match="tensor"):
        function(bad)


@pytest.mark.parametrize("function", [al.saved_tensors, al.walk, al.draw, al.diagnose,
                                      al.backward_frames])
def test_tensor_without_graph_is_a_value_error_saying_why(function):
    leaf = torch.ones(2, requires_grad=True)
    with pytest.raises(ValueError, match="leaf.*Pass a tensor computed"):
        function(leaf)
    with torch.no_grad():
        under_no_grad = leaf * 2
    with pytest.raises(ValueError, match="does not require grad.*no_grad"):
        function(under_no_grad)
    with pytest.raises(ValueError, match="empty"):
        function([])


# ---------------------------------------------------------------------------------------------
# Looking changes nothing: same gradients, same errors as without looking.


def _scenarios():
    def plain():
        w = torch.randn(3, requires_grad=True)
        return (w.exp() * w).sum(), [w]

    def stale():
        w = torch.randn(3, requires_grad=True)
        loss = (w.exp() * w).sum()
        loss.backward()
        return loss, [w]

    def modified():
        w = torch.randn(3, requires_grad=True)
        loss = (w.sin() * w).sum()
        with torch.no_grad():
            w.add_(1)
        return loss, [w]

    def custom():
        w = torch.randn(3, requires_grad=True)
        return Square.apply(w.sin()).sum(), [w]

    def ckpt_reentrant():
        lin = nn.Linear(3, 3)
        x = torch.randn(2, 3, requires_grad=True)
        return checkpoint(lambda t: lin(t).tanh(), x, use_reentrant=True).sum(), [x, lin.weight]

    def ckpt_non_reentrant():
        lin = nn.Linear(3, 3)
        x = torch.randn(2, 3, requires_grad=True)
        return checkpoint(lambda t: lin(t).tanh(), x, use_reentrant=False).sum(), [x, lin.weight]

    def on_cpu():
        w = torch.randn(3, requires_grad=True)
        with torch.autograd.graph.save_on_cpu():
            loss = (w.exp() * w).sum()
        return loss, [w]

    def metered():
        w = torch.randn(3, requires_grad=True)
        with al.saved_memory():
            loss = (w.exp() * w).sum()
        return loss, [w]

    def lstm():
        cell = nn.LSTM(3, 4)
        out, (h, c) = cell(torch.randn(2, 1, 3))
        return out.sum() + c.sum(), [cell.weight_ih_l0]

    return [plain, stale, modified, custom, ckpt_reentrant, ckpt_non_reentrant, on_cpu, metered,
            lstm]


def _run(build, look):
    torch.manual_seed(0)
    root, params = build()
    if look is not None:
        look(root)
    error = None
    try:
        root.backward()
    except RuntimeError as err:
        error = str(err)
    return [None if p.grad is None else p.grad.clone() for p in params], error


LOOKS = {
    "saved_tensors": al.saved_tensors,
    "walk": al.walk,
    "draw": lambda r: al.draw(r).source,
    "diagnose": lambda r: str(al.diagnose(r)),
}


@pytest.mark.parametrize("look", sorted(LOOKS))
@pytest.mark.parametrize("build", _scenarios(), ids=lambda f: f.__name__)
def test_looking_changes_nothing(build, look):
    grads, error = _run(build, None)
    grads_looked, error_looked = _run(build, LOOKS[look])
    assert error_looked == error
    for a, b in zip(grads, grads_looked):
        assert (a is None and b is None) or torch.equal(a, b)


@pytest.mark.parametrize("look", sorted(LOOKS))
@pytest.mark.parametrize("reentrant", [True, False])
def test_looking_never_recomputes_a_checkpoint(look, reentrant):
    calls = []

    def block(t):
        calls.append(1)
        return t.sin().exp()

    out = checkpoint(block, torch.randn(4, requires_grad=True), use_reentrant=reentrant).sum()
    LOOKS[look](out)
    assert len(calls) == 1                        # only the forward ran the block
    out.backward()
    assert len(calls) == 2                        # backward recomputed it once


def test_read_once_reads_each_node_once_with_the_collector_paused(monkeypatch):
    """Inside ``read_once`` (the replay's evidence and finding, on one failed graph), a node's
    slots are read once and the same answer is given after; outside, each call reads again."""
    import gc

    from autograd_lens.lens import graph

    reads = []
    entries = graph._entries
    monkeypatch.setattr(graph, "_entries", lambda node: reads.append(node) or entries(node))
    x = torch.ones(3, requires_grad=True)
    loss = (x.exp() * x).sum()
    loss.backward()
    node = loss.grad_fn.next_functions[0][0]  # MulBackward0: two saved tensors, both freed
    was = gc.isenabled()
    with graph.read_once():
        assert not gc.isenabled()
        first = graph.stale_slots(node)
        assert graph.stale_slots(node) is first and len(reads) == 1
    assert gc.isenabled() == was
    assert first[0] == 2 and [slot.state for slot in first[1]] == ["freed", "freed"]
    assert graph.stale_slots(node) == first and len(reads) == 2
