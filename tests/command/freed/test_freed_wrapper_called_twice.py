"""A method that only runs ``loss.backward()``, called once inside the loss function and again
by the step on the loss it returns: both runs are the wrapper's one statement, so the recording
of the freeing call's callers tells them apart, and the earlier call (the one inside the loss
function) is left out. Run, it trains as one backward per step."""

from __future__ import annotations

import pytest
import torch
from torch import nn

from command_runs import marked, recorded_runs, trains_as

NAME = "freed_wrapper_backward_called_twice.py"


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    return recorded_runs([NAME], tmp_path_factory.mktemp("wrapper"))[NAME]


def test_the_earlier_call_of_the_wrapper_is_left_out(run):
    report = run["report"]
    assert report["verdict"] == "gone", run["text"]
    assert [(e["line"], e["new"]) for e in report["edits"]] == [(marked(NAME, "first"), [])], \
        run["text"]


def by_hand() -> dict:
    torch.manual_seed(0)
    model = nn.Linear(3, 1)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    for _ in range(3):
        x, y = torch.randn(5, 3), torch.randn(5, 1)
        opt.zero_grad()
        (model(x) - y).pow(2).mean().backward()
        opt.step()
    return {"model.weight": model.weight, "model.bias": model.bias}


def test_one_backward_per_step_trains_as_by_hand(run, tmp_path):
    trains_as(NAME, run["report"], by_hand(), tmp_path)
