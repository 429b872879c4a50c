"""The in-place error of an optimizer step between two phases' backward calls on one forward:
the step (of an optimizer taken from a list, `phases[0].step()`) is at the line the replay
recorded (the first run does not record it there), so the
loss of the second phase, and what it is made from, is built again right after that step, and
the program so edited trains as the program fixed by hand."""

from __future__ import annotations

import pytest
import torch
from torch import nn
from torch.nn import functional as F

from command_runs import marked, recorded_runs, trains_as

NAME = "inplace_step_between_phases.py"


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    return recorded_runs([NAME], tmp_path_factory.mktemp("phases"))[NAME]


def test_the_loss_is_built_again_after_the_recorded_step(run):
    report = run["report"]
    assert report["carriers"][0]["line"] == marked(NAME, "steps"), report["carriers"]
    assert report["verdict"] == "gone", run["text"][-1500:]
    assert [(e["line"], e["new"][1:]) for e in report["edits"]] == [(marked(NAME, "steps"), [
        "    code = encoder(x)  # forward",
        "    rebuild_loss = F.mse_loss(rebuild(code), x)"])]


def by_hand() -> dict:
    torch.manual_seed(0)
    encoder = nn.Sequential(nn.Linear(6, 10), nn.Tanh(), nn.Linear(10, 10), nn.Tanh())
    classify, rebuild = nn.Linear(10, 2), nn.Linear(10, 6)
    supervised = torch.optim.SGD([*encoder.parameters(), *classify.parameters()], lr=0.1)
    unsupervised = torch.optim.SGD([*encoder.parameters(), *rebuild.parameters()], lr=0.1)
    for _ in range(3):
        x, y = torch.randn(8, 6), torch.randint(0, 2, (8,))
        supervised.zero_grad()
        unsupervised.zero_grad()
        F.cross_entropy(classify(encoder(x)), y).backward()
        supervised.step()
        F.mse_loss(rebuild(encoder(x)), x).backward()  # from the stepped encoder
        unsupervised.step()
    return {"encoder.0.weight": encoder[0].weight, "rebuild.weight": rebuild.weight}


def test_the_fix_trains_as_by_hand(run, tmp_path):
    trains_as(NAME, run["report"], by_hand(), tmp_path)
