"""A running total the loop starts again each step (``total = net(x)``, then ``total +=``) is
what the first run sees read before it is assigned, and it took the pattern from it: a loss
accumulated across steps. The recording shows the total made in this step, and the level a
module keeps from the step before as the first carrier: the pattern is the module's state kept
with its graph, its page and fix; the edit, run, trains as by hand."""

from __future__ import annotations

import pytest
import torch
from torch import nn

from command_runs import marked, recorded_runs, trains_as

NAME = "freed_module_state_under_a_step_total.py"


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    return recorded_runs([NAME], tmp_path_factory.mktemp("total"))[NAME]


def test_the_module_s_state_not_a_total_across_steps(run):
    report = run["report"]
    assert report["pattern"] == "module_state", run["text"]
    assert report["page"].endswith("/16_module_state_with_history.html"), run["text"]
    assert report["carriers"][0]["name"] == "self.level", report["carriers"]
    assert report["verdict"] == "gone", run["text"]
    assert report["edits"][0]["line"] == marked(NAME, "kept"), report["edits"]


def _by_hand() -> dict:
    torch.manual_seed(0)
    linear = nn.Linear(4, 4, bias=False)
    opt = torch.optim.SGD(linear.parameters(), lr=0.1)
    target, level = torch.rand(2, 4), 0.0

    def fire(v):  # the spike's value, and the surrogate's gradient
        soft = torch.sigmoid(v)
        return (v > 0).to(v) + (v - v.detach()) * (soft * (1 - soft)).detach()

    for _ in range(3):
        opt.zero_grad()
        for tick in range(3):
            drive = linear(torch.randn(2, 4))
            level = level + (drive - level) / 2
            spikes = fire(level - 0.5)
            level = (level * (1 - spikes)).detach()
            total = spikes if tick == 0 else total + spikes
        ((total / 3 - target).pow(2).mean()).backward()
        opt.step()
    return {"net.0.weight": linear.weight}


def test_the_edit_trains_as_by_hand(run, tmp_path):
    trains_as(NAME, run["report"], _by_hand(), tmp_path)
