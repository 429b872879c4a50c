"""A write into one view of a tensor (``z2 += t``) while a node saved another view of it
(``z1``, split from the same ``z``): the recording lists every name of the writing frame that
holds the storage (``z``, ``z1``, ``z2``). The tensor named is the one the statement writes,
as written there (``z2``), and the text does not say which view the node saved: "``z2`` or a
view of the same storage (``z``, ``z1``)". The edit writes out of place, and trains as the
program written by hand."""

from __future__ import annotations

import pytest
import torch
from torch import nn

from command_runs import marked, recorded_runs, trains_as

NAME = "inplace_write_to_the_other_half.py"


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    return recorded_runs([NAME], tmp_path_factory.mktemp("other_half"))[NAME]


def test_the_view_the_statement_writes_is_named(run):
    first, line = run["report"]["carriers"][0], marked(NAME, "write")
    assert (first["name"], first["line"], first["function"]) == ("z2", line, "couple"), first
    assert "AddmmBackward0 saved `z2` or a view of the same storage (`z`, `z1`) (slot mat1)" \
        in run["text"], run["text"]


def test_the_write_is_made_out_of_place(run):
    report = run["report"]
    assert report["verdict"] == "gone", run["text"][-1500:]
    assert [(e["line"], e["new"]) for e in report["edits"]] == [
        (marked(NAME, "write"), ["    z2 = z2 + t"])]


def by_hand() -> dict:
    torch.manual_seed(0)
    lift = nn.Linear(4, 6)
    net = nn.Sequential(nn.Linear(3, 3), nn.Tanh())
    optimizer = torch.optim.SGD([*lift.parameters(), *net.parameters()], lr=0.1)
    for _ in range(3):
        z = lift(torch.randn(5, 4))
        out = torch.cat([z[:, :3], z[:, 3:] + net(z[:, :3])], dim=1)
        loss = out.pow(2).mean()
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    return {"lift.weight": lift.weight, "net.0.weight": net[0].weight}


def test_the_fix_trains_as_by_hand(run, tmp_path):
    trains_as(NAME, run["report"], by_hand(), tmp_path)
