"""The freed-graph error where the name that holds the freed graph in the failing function is
a ``*args`` tuple (the recording lists its entry, ``fn_args[0]``): the carrier is followed
through that entry to the caller's name that holds the same tensor where it was made, and
named there; the verified fix keeps the earlier call's graph and trains as by hand."""

from __future__ import annotations

import pytest
import torch
from torch import nn

from command_runs import entered, marked, recorded_runs, trains_as

NAME = "freed_varargs_handed_to_helper.py"


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    return recorded_runs([NAME], tmp_path_factory.mktemp("varargs"))[NAME]


def test_the_recording_lists_the_entry_of_the_tuple(run):
    held = {h["name"] for h in run["report"]["recorded"]["holders"]}
    assert {"fn_args[0]", "pred"} <= held and "fn_args" not in held, held


def test_the_carrier_is_named_where_it_was_made_and_enters_as_the_tuple(run):
    first = run["report"]["carriers"][0]
    assert (first["name"], first["line"]) == ("pred", marked(NAME, "made")), first
    assert entered(first) == ("fn_args", marked(NAME, "fails") - 1)


def by_hand() -> dict:
    torch.manual_seed(0)
    net = nn.Sequential(nn.Linear(6, 12), nn.Tanh(), nn.Linear(12, 1))
    opt = torch.optim.SGD(net.parameters(), lr=0.05)
    x, y = torch.randn(20, 6), torch.randn(20, 1)
    for _ in range(3):
        opt.zero_grad()
        pred = torch.sigmoid(net(x))
        loss = (pred - y).pow(2).mean() + 0.1 * (pred[1:] - pred[:-1]).pow(2).mean()
        loss.backward()
        opt.step()
    return {"net.0.weight": net[0].weight, "net.2.weight": net[2].weight}


def test_the_fix_keeps_the_earlier_graph_and_trains_as_by_hand(run, tmp_path):
    report = run["report"]
    assert report["verdict"] == "gone", run["text"][-1500:]
    assert [(e["line"], e["new"]) for e in report["edits"]] == \
        [(marked(NAME, "frees"), ["    loss.backward(retain_graph=True)  # frees"])]
    trains_as(NAME, report, by_hand(), tmp_path)
