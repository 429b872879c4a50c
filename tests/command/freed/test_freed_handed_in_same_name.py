"""The freed-graph error of data handed to a fitting helper under the caller's own names
(``fit(model, inputs, targets)`` into ``def fit(model, inputs, targets)``), made at the top
level from a tensor that requires grad: the recording lists each scope's names, the caller's
of the same name too, so each is followed to the statement that made it, and the fix detaches
both there; it trains as the program fixed by hand."""

from __future__ import annotations

import pytest
import torch
from torch import nn

from command_runs import marked, recorded_runs, trains_as

NAME = "freed_handed_in_same_name.py"


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    return recorded_runs([NAME], tmp_path_factory.mktemp("same_name"))[NAME]


def test_the_callers_names_are_recorded_beside_the_helpers(run):
    recorded = run["report"]["recorded"]
    scopes = {(h["name"], h["scope"].split()[0]) for h in recorded["holders"] + recorded["carrying"]}
    assert {("inputs", "fit()"), ("inputs", "module"), ("targets", "fit()"),
            ("targets", "module")} <= scopes, scopes


def test_each_is_named_where_it_was_made_and_detached_there(run):
    report = run["report"]
    assert [(c["name"], c["line"]) for c in report["carriers"][:2]] == [
        ("inputs", marked(NAME, "made")), ("targets", marked(NAME, "targets"))]
    assert report["verdict"] == "gone", run["text"][-1500:]
    assert [(e["line"], e["new"][1:]) for e in report["edits"]] == [
        (marked(NAME, "made"), ["inputs = inputs.detach()"]),
        (marked(NAME, "targets"), ["targets = targets.detach()"])]


def by_hand() -> dict:
    torch.manual_seed(0)
    inputs = torch.randn(20, 3)  # the warp is ones: the data as constants
    targets = inputs.sum(-1).tanh()
    model = nn.Linear(3, 1)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    for _ in range(4):
        loss = (model(inputs).squeeze(-1) - targets).pow(2).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
    return {"model.weight": model.weight, "model.bias": model.bias}


def test_the_fix_trains_as_by_hand(run, tmp_path):
    trains_as(NAME, run["report"], by_hand(), tmp_path)
