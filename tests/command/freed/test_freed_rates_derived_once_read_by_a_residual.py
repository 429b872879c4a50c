"""Values derived once from trainable raw values (``a = torch.exp(raw_a)``, ``b =
softplus(raw_b)``) and read by a function each step calls: every such value the statement
reads is computed again in that function, not the first alone (computed again alone, the
other still brings the freed graph in); the fix trains as the program written by hand."""

from __future__ import annotations

import pytest
import torch
from torch import nn

from command_runs import marked, recorded_runs, trains_as

NAME = "freed_rates_derived_once_read_by_a_residual.py"


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    return recorded_runs([NAME], tmp_path_factory.mktemp("rates"))[NAME]


def test_both_rates_are_computed_again_where_they_are_read(run):
    report = run["report"]
    assert report["verdict"] == "gone", run["text"][-1500:]
    assert [(e["line"], e["new"][:-1]) for e in report["edits"]] == [(marked(NAME, "enters"), [
        "    a = torch.exp(raw_a)", "    b = nn.functional.softplus(raw_b)"])]


def by_hand() -> dict:
    torch.manual_seed(0)
    raw_a = torch.tensor(0.2, requires_grad=True)
    raw_b = torch.tensor(-0.1, requires_grad=True)
    net = nn.Sequential(nn.Linear(1, 8), nn.Tanh(), nn.Linear(8, 1))
    optimizer = torch.optim.Adam([*net.parameters(), raw_a, raw_b], lr=1e-2)
    for _ in range(3):
        t = torch.rand(12, 1)
        loss = (net(t) * torch.exp(raw_a) - nn.functional.softplus(raw_b) * t).pow(2).mean()
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    return {"raw_a": raw_a, "raw_b": raw_b, "net.0.weight": net[0].weight}


def test_the_fix_trains_as_by_hand(run, tmp_path):
    trains_as(NAME, run["report"], by_hand(), tmp_path)
