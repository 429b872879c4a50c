"""A tensor that a forward hook kept on an object, taken once under a name before the loop that
fails (``target = recorder.out``): the recorded statement that made its node assigns no name,
so the carrier is given where the script keeps it under its name; the recording shows that
statement at the top level, outside every loop, before the failing loop: a tensor computed
outside the loop (its page), kept as a constant there. Run, it trains as by hand."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F
from torch import nn

from command_runs import marked, recorded_runs, trains_as

NAME = "freed_hook_output_kept_before_the_loop.py"


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    return recorded_runs([NAME], tmp_path_factory.mktemp("hook_kept"))[NAME]


def test_the_target_is_given_where_it_is_kept(run):
    report = run["report"]
    first = report["carriers"][0]
    assert (first["name"], first["line"]) == ("target", marked(NAME, "kept")), run["text"]
    assert report["pattern"] == "outside_loop", run["text"]
    assert report["page"].endswith("13_tensor_outside_loop.html"), run["text"]
    assert "second network" not in run["text"], run["text"]


def test_the_target_is_kept_as_a_constant(run):
    report = run["report"]
    assert report["verdict"] == "gone", run["text"]
    assert [(e["line"], e["new"]) for e in report["edits"]] == [(marked(NAME, "kept"), [
        "target = recorder.out  # kept", "target = target.detach()"])], run["text"]


def by_hand() -> dict:
    torch.manual_seed(0)
    net = nn.Sequential(nn.Linear(4, 6), nn.Tanh(), nn.Linear(6, 3))
    for p in net.parameters():
        p.requires_grad_(False)
    x = torch.randn(2, 4, requires_grad=True)
    opt = torch.optim.SGD([x], lr=0.1)
    for _ in range(2):
        opt.zero_grad()
        hidden = net[1](net[0](x))
        net[2](hidden).pow(2).sum().backward()
        opt.step()
    target = hidden.detach()
    for _ in range(3):
        opt.zero_grad()
        F.mse_loss(net[1](net[0](x)), target).backward()
        opt.step()
    return {"x": x}


def test_the_constant_target_trains_as_by_hand(run, tmp_path):
    trains_as(NAME, run["report"], by_hand(), tmp_path)
