"""A loss module's own backward method passes its caller's flag on as ``retain_graph``: the
freeing backward's statement already gives the keyword, so the flag is set where the recording
shows that method called (the first call of the freeing call's chain), by the parameter's own
name. The edited program trains as one backward of the summed losses, by hand."""

from __future__ import annotations

import pytest
import torch
from torch import nn

from command_runs import marked, recorded_runs, trains_as

NAME = "freed_loss_modules_backward_in_turn.py"


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    return recorded_runs([NAME], tmp_path_factory.mktemp("probes"))[NAME]


def test_the_caller_passes_the_flag(run):
    report = run["report"]
    freed = report["recorded"]["node"]["freed_by"]
    assert freed["user"]["line"] == marked(NAME, "freed"), freed
    assert report["verdict"] == "gone", run["text"]
    edit = report["edits"][0]
    assert edit["line"] == marked(NAME, "called") and \
        edit["new"][0].strip() == "mean_probe.backward(keep_graph=True)  # called", edit


def _by_hand() -> dict:
    torch.manual_seed(0)
    body = nn.Sequential(nn.Linear(4, 6), nn.Tanh())
    opt = torch.optim.SGD(body.parameters(), lr=0.1)
    for _ in range(3):
        opt.zero_grad()
        features = body(torch.randn(8, 4))
        (features.mean(0).pow(2).sum() + (features.std(0) - 1).pow(2).sum()).backward()
        opt.step()
    return {"body.0.weight": body[0].weight, "body.0.bias": body[0].bias}


def test_the_edit_trains_as_one_backward_of_the_sum(run, tmp_path):
    trains_as(NAME, run["report"], _by_hand(), tmp_path)
