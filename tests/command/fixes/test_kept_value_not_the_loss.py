"""The kept-value rule never detaches the loss that the failing call backwards itself: a
carrier the source names as that loss (a loss handed to an update helper, read there as
``loss``) would, detached before ``loss.backward()``, leave nothing to differentiate, and the
edit always fails (``element 0 of tensors does not require grad``). A kept state read elsewhere
still gets its detach."""

from __future__ import annotations

from autograd_lens.explain.carrier import Carrier
from autograd_lens.fixes.rules import Case
from autograd_lens.fixes.kept_values import detach_kept

PROGRAM = '''import torch

net = torch.nn.Linear(3, 1)
opt = torch.optim.SGD(net.parameters(), lr=0.1)


def learn(loss):
    opt.zero_grad()
    loss.backward()
    opt.step()


def step(x, h):
    h = torch.tanh(net(x) + h)
    return h
'''


def _case(tmp_path, name: str, line: int, function: str) -> Case:
    path = tmp_path / "helper.py"
    path.write_text(PROGRAM)
    carrier = Carrier(name=name, file=str(path), line=line, function=function, why="",
                      kind="carried", entry="read_first")
    return Case((carrier,), (str(path), 9))


def test_the_failing_calls_own_loss_is_not_detached(tmp_path):
    assert detach_kept(_case(tmp_path, "loss", 9, "learn")) == []


def test_a_kept_state_read_elsewhere_is_still_detached(tmp_path):
    fixes = detach_kept(_case(tmp_path, "h", 14, "step"))
    assert fixes and [list(e.new) for e in fixes[0].edits] == [
        ["    h = h.detach()", "    h = torch.tanh(net(x) + h)"]], fixes
