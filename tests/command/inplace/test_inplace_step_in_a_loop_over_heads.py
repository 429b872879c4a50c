"""One loop over (optimizer, loss) pairs steps each player right after its backward; a later
player's loss goes through an earlier player's weights, which that step changed. The edit takes
the step out of the loop into a loop of its own over the same pairs, so every gradient comes
from the one graph before any weight moves; it is run before it is printed, and the fix trains
as the program written by hand. A loop over batches that steps one optimizer each turn gets no
such edit (the step is not a player's, named through the loop's variable)."""

from __future__ import annotations

import pytest
import torch
from torch import nn

from command_runs import command_reports, marked, recorded_runs, trains_as

NAME = "inplace_step_in_a_loop_over_heads.py"


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    return recorded_runs([NAME], tmp_path_factory.mktemp("heads"))[NAME]


def test_the_steps_after_the_loop_hold(run):
    report = run["report"]
    assert report["verdict"] == "gone", run["text"][-1500:]
    step = marked(NAME, "step")
    assert [(e["line"], e["new"]) for e in report["edits"]] == [
        (step, ["    for optimizer, loss in zip(optimizers, losses):",
                "        optimizer.step()  # step"])]
    assert "the steps run after the loop, as updates taken at the same time" in run["text"]


def by_hand() -> dict:
    torch.manual_seed(0)
    coarse = nn.Sequential(nn.Linear(5, 6), nn.Tanh(), nn.Linear(6, 3))
    fine = nn.Linear(8, 2)
    coarse_opt = torch.optim.SGD(coarse.parameters(), lr=0.1)
    fine_opt = torch.optim.SGD(fine.parameters(), lr=0.1)
    for _ in range(3):
        x, y_coarse, y_fine = torch.randn(16, 5), torch.randn(16, 3), torch.randn(16, 2)
        guess = coarse(x)
        refined = fine(torch.cat([x, guess], dim=1))
        coarse_opt.zero_grad()
        (guess - y_coarse).pow(2).mean().backward(retain_graph=True)
        fine_opt.zero_grad()
        (refined - y_fine).pow(2).mean().backward(retain_graph=True)
        coarse_opt.step()
        fine_opt.step()
    return {"coarse.0.weight": coarse[0].weight, "fine.weight": fine.weight}


def test_the_fix_trains_as_by_hand(run, tmp_path):
    trains_as(NAME, run["report"], by_hand(), tmp_path)


BATCHES = "inplace_step_in_a_loop_over_batches.py"


def test_a_loop_over_batches_gets_no_steps_after_it(tmp_path):
    text = command_reports([BATCHES], tmp_path)[BATCHES]["text"]
    assert "the steps run after the loop" not in text, text
