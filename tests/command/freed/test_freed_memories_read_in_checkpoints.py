"""Memories of a trained encoder read inside reentrant checkpoints, failing in the first step: the
failing call is the checkpoint's backward run inside the step's, whose graph reaches the encoder
(the step's own graph does not show it, and no optimizer has stepped yet). The parameters that
nested call reaches count as the failing call's, so detaching the memory, which leaves the
encoder untrained, is a failed attempt naming its weights, never the fix. The fix is the
checkpoint made non-reentrant, run before it is printed; it trains as the program without
checkpoints, written by hand."""

from __future__ import annotations

import pytest
import torch
from torch import nn

from command_runs import marked, recorded_runs, trains_as

NAME = "freed_memories_read_in_checkpoints.py"


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    return recorded_runs([NAME], tmp_path_factory.mktemp("memories"))[NAME]


def test_the_checkpoint_made_non_reentrant_is_the_fix(run):
    report = run["report"]
    assert report["verdict"] == "gone", run["text"][-2000:]
    assert [(e["line"], e["new"]) for e in report["edits"]] == [(marked(NAME, "checkpoint"), [
        "        x = checkpoint(reader, x, use_reentrant=False)  # checkpoint"])]


def test_the_detach_that_stops_training_the_encoder_is_not_the_fix(run):
    detached = [a for a in run["report"]["failed_attempts"]
                if "without its graph" in a["computes"]]
    assert detached, run["report"]["failed_attempts"]
    for attempt in detached:
        verified = attempt["verified"]
        assert verified["verdict"] == "lost_gradients", verified
        assert verified["missing"] == ["Sequential.0.bias (6,)", "Sequential.0.weight (6, 6)"]


class Reader(nn.Module):
    def __init__(self):
        super().__init__()
        self.attend = nn.Linear(12, 6)

    def forward(self, x, memory):
        return x + torch.tanh(self.attend(torch.cat([x, memory], dim=1)))


def by_hand() -> dict:
    torch.manual_seed(0)
    encoder, refine = nn.Sequential(nn.Linear(6, 6), nn.Tanh()), nn.Linear(6, 6)
    stem, readers = nn.Linear(6, 6), nn.ModuleList([Reader(), Reader()])
    optimizer = torch.optim.Adam([*encoder.parameters(), *refine.parameters(),
                                  *stem.parameters(), *readers.parameters()], lr=1e-2)
    for _ in range(3):
        reference, x, target = torch.randn(4, 6), torch.randn(4, 6), torch.randn(4, 6)
        first = encoder(reference)
        memories = [first, torch.tanh(refine(first))]
        x = stem(x)
        for reader, memory in zip(readers, memories):
            x = reader(x, memory)
        optimizer.zero_grad()
        (x - target).pow(2).mean().backward()
        optimizer.step()
    return {"encoder.0.weight": encoder[0].weight, "readers.1.attend.weight": readers[1].attend.weight}


def test_the_fix_trains_as_by_hand(run, tmp_path):
    trains_as(NAME, run["report"], by_hand(), tmp_path)
