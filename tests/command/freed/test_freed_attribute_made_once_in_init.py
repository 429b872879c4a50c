"""A scale computed once from a parameter in __init__ and kept on the model, read by the model's
loss method, which the loop calls: it enters the step through that call (``model.loss(x, y)``),
so the candidate computes it again where the method reads it (the expression reads the file's
``torch`` module, which holds no graph). Run, it trains as the program written by hand with the
scale computed on each call."""

from __future__ import annotations

import pytest
import torch
from torch import nn

from command_runs import marked, recorded_runs, trains_as

NAME = "freed_attribute_made_once_read_by_a_method.py"


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    return recorded_runs([NAME], tmp_path_factory.mktemp("made_once"))[NAME]


def test_the_scale_is_computed_where_the_method_reads_it(run):
    report = run["report"]
    first = report["carriers"][0]
    assert (first["name"], first["line"]) == ("self.scale", marked(NAME, "made")), run["text"]
    assert report["verdict"] == "gone", run["text"]
    assert [(e["line"], e["new"]) for e in report["edits"]] == [(marked(NAME, "reads"), [
        "        return ((self.layer(x) * (torch.sigmoid(self.raw) * 2.0) - y) ** 2).mean()"
        "  # reads"])], run["text"]


def by_hand() -> dict:
    torch.manual_seed(0)
    raw, layer = nn.Parameter(torch.zeros(1)), nn.Linear(3, 1)
    opt = torch.optim.SGD([raw, *layer.parameters()], lr=0.1)
    for _ in range(3):
        x, y = torch.randn(6, 3), torch.randn(6, 1)
        opt.zero_grad()
        ((layer(x) * (torch.sigmoid(raw) * 2.0) - y) ** 2).mean().backward()
        opt.step()
    return {"model.raw": raw, "model.layer.weight": layer.weight}


def test_the_scale_made_each_call_trains_as_by_hand(run, tmp_path):
    trains_as(NAME, run["report"], by_hand(), tmp_path)
