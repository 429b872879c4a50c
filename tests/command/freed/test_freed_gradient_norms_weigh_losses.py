"""Gradients taken of two loss terms only to weigh them by their norms, then a backward of the
weighed sum: the recording shows no weight adapted by those gradients (no node made after them
takes a weight), so the pattern is a gradient, then a backward through the same graph (its page),
not a meta-learning inner step; the edit keeps the graph on both gradient calls. Run, it trains
as by hand with the norms taken as constants."""

from __future__ import annotations

import pytest
import torch
from torch import nn

from command_runs import marked, recorded_runs, trains_as

NAME = "freed_gradient_norms_weigh_two_losses.py"


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    return recorded_runs([NAME], tmp_path_factory.mktemp("norms"))[NAME]


def test_the_pattern_is_a_gradient_then_a_backward(run):
    report = run["report"]
    assert report["pattern"] == "grad_then_backward", run["text"]
    assert report["page"].endswith("14_grad_then_backward.html"), run["text"]
    assert "inner gradient step" not in run["text"], run["text"]


def test_both_gradient_calls_keep_the_graph(run):
    report = run["report"]
    assert report["verdict"] == "gone", run["text"]
    assert sorted(e["line"] for e in report["edits"]) == [marked(NAME, "first"),
                                                          marked(NAME, "second")], run["text"]
    assert all("retain_graph=True" in e["new"][0] for e in report["edits"]), run["text"]


def by_hand() -> dict:
    torch.manual_seed(0)
    model = nn.Linear(3, 2)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    for _ in range(3):
        x, y = torch.randn(8, 3), torch.randn(8, 2)
        fit, smooth = (model(x) - y).pow(2).mean(), model(x).diff(dim=0).pow(2).mean()
        norm = [torch.sqrt(sum((g ** 2).sum() for g in torch.autograd.grad(
            term, list(model.parameters()), retain_graph=True))) for term in (fit, smooth)]
        opt.zero_grad()
        (fit + (norm[0] / (norm[1] + 1e-8)) * smooth).backward()
        opt.step()
    return {"model.weight": model.weight, "model.bias": model.bias}


def test_the_kept_graphs_train_as_by_hand(run, tmp_path):
    trains_as(NAME, run["report"], by_hand(), tmp_path)
