"""The freed-graph error where a helper's backward freed the graph: whether that call started
from the same loss as the failing call is recorded (``same_roots``), and decides the edit. Of
another loss (a penalty made from the same output), leaving the helper's backward out would
lose the penalty's gradients while every weight still got one, so it is not offered; the
helper's backward keeping the graph is, and trains as one backward of the sum."""

from __future__ import annotations

import pytest
import torch
from torch import nn
from torch.nn import functional as F

from command_runs import commanded, marked, trains_as
from statements import unsupported

PENALTY = "freed_penalty_backwarded_in_a_helper.py"


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    return commanded([PENALTY], tmp_path_factory.mktemp("roots"))[PENALTY]


def test_the_freeing_call_is_recorded_as_another_loss(run):
    freed = run["report"]["recorded"]["node"]["freed_by"]
    assert (freed["user"]["line"], freed["same_roots"]) == (marked(PENALTY, "freed"), False), freed
    assert not unsupported(run["text"], run["report"])


def test_the_helper_backward_is_kept_not_left_out(run):
    report = run["report"]
    printed = [report["edits"]] + report["alternatives"] + \
        [a["edits"] for a in report["failed_attempts"]]
    for edits in printed:
        for edit in edits:
            assert not (edit["line"] == marked(PENALTY, "freed") and
                        not any("backward" in line for line in edit["new"])), edit
    assert report["verdict"] == "gone"
    assert [(e["line"], e["new"][0].strip()) for e in report["edits"]] == \
        [(marked(PENALTY, "freed"), "penalty.backward(retain_graph=True)  # freed")]


def by_hand() -> dict:
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(5, 8), nn.Tanh(), nn.Linear(8, 2))
    opt = torch.optim.SGD(model.parameters(), lr=0.05)
    for _ in range(3):
        x, y = torch.randn(16, 5), torch.randn(16, 2)
        out = model(x)
        (F.mse_loss(out, y) + 0.1 * out.pow(2).mean()).backward()
        opt.step()
        opt.zero_grad()
    return {"model.0.weight": model[0].weight, "model.2.weight": model[2].weight}


def test_the_edit_trains_as_one_backward_of_the_sum(run, tmp_path):
    trains_as(PENALTY, run["report"], by_hand(), tmp_path)
