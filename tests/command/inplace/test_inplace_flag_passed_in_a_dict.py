"""A module made with its ``inplace`` flag passed on in a dict of keywords (``**options``,
``options = {"inplace": inplace}``, ``inplace=True`` the parameter's default): the edit turns
that default off, so the dropout no longer writes what the activation's node saved; it is run
before it is printed, and the fix trains as the same layers written by hand out of place."""

from __future__ import annotations

import pytest
import torch
from torch import nn

from command_runs import marked, recorded_runs, trains_as

NAME = "inplace_flag_passed_in_a_dict.py"


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    return recorded_runs([NAME], tmp_path_factory.mktemp("flag"))[NAME]


def test_the_default_behind_the_dict_is_turned_off(run):
    report = run["report"]
    assert report["verdict"] == "gone", run["text"][-1500:]
    assert [(e["line"], e["new"]) for e in report["edits"]] == [
        (marked(NAME, "default"),
         ["    def __init__(self, sizes, inplace=False, p=0.3):  # default"])]


def by_hand() -> dict:
    torch.manual_seed(0)
    layers = []
    for a, b in ((6, 12), (12, 4)):
        layers += [nn.Linear(a, b), nn.LeakyReLU(0.1), nn.Dropout(0.3)]
    head = nn.Sequential(*layers)
    optimizer = torch.optim.SGD(head.parameters(), lr=0.1)
    for _ in range(3):
        x, y = torch.randn(10, 6), torch.randn(10, 4)
        loss = (head(x) - y).pow(2).mean()
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    return {"head.0.weight": head[0].weight, "head.3.weight": head[3].weight,
            "head.3.bias": head[3].bias}


def test_the_fix_trains_as_by_hand(run, tmp_path):
    trains_as(NAME, run["report"], by_hand(), tmp_path)
