"""Lists that forward hooks fill, read by the loss through ``for i in range(len(maps))``: that
walks the whole list, as iterating it does, so the lists are buffers to empty after the update
(not stores whose values a later step looks up by key, whose values would be detached where
stored, leaving the trained network without a gradient). The list read in one statement with
the carrier, filled beside it, is emptied with it; the fix trains as the program fixed by
hand."""

from __future__ import annotations

import pytest
import torch
from torch import nn
from torch.nn import functional as F

from command_runs import marked, recorded_runs, trains_as

NAME = "freed_hook_lists_read_by_range.py"


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    return recorded_runs([NAME], tmp_path_factory.mktemp("hook_lists"))[NAME]


def test_both_lists_are_emptied_after_the_update(run):
    report = run["report"]
    assert report["pattern"] == "growing_buffer", run["text"][-1500:]
    assert report["verdict"] == "gone", run["text"][-1500:]
    assert [(e["line"], e["new"][1:]) for e in report["edits"]] == [(marked(NAME, "fails"), [
        "    own_maps.clear()", "    ref_maps.clear()"])]


def by_hand() -> dict:
    torch.manual_seed(0)
    reference = nn.Sequential(nn.Linear(6, 8), nn.Tanh(), nn.Linear(8, 8), nn.Tanh())
    trained = nn.Sequential(nn.Linear(6, 8), nn.Tanh(), nn.Linear(8, 8), nn.Tanh())
    optimizer = torch.optim.SGD(trained.parameters(), lr=0.1)
    for _ in range(3):
        x = torch.randn(5, 6)
        with torch.no_grad():
            ref_low = reference[:2](x)
            ref_high = reference[2:](ref_low)
        own_low = trained[:2](x)
        own_high = trained[2:](own_low)
        loss = F.mse_loss(own_low, ref_low) + F.mse_loss(own_high, ref_high)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    return {"trained.0.weight": trained[0].weight, "trained.2.weight": trained[2].weight}


def test_the_fix_trains_as_by_hand(run, tmp_path):
    trains_as(NAME, run["report"], by_hand(), tmp_path)
