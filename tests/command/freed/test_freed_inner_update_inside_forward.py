"""A layer that trains its own parameters inside forward, on a loss that reads the encoder's output,
before the main loss of the same forward is built and backpropagated: the recording shows the
failing call's statement never ran before and the carrier made in that same pass, before the
inner backward freed its graph. Nothing was kept from an earlier step (the pattern of a value
kept for a later step would say so, falsely): it is a shared part of one forward that another
loss's backward went through first, and the inner loss reads it detached. Run, it trains as by
hand."""

from __future__ import annotations

import pytest
import torch
from torch import nn

from command_runs import marked, recorded_runs, trains_as

NAME = "freed_inner_update_inside_forward.py"


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    return recorded_runs([NAME], tmp_path_factory.mktemp("inner_update"))[NAME]


def test_the_pattern_is_a_part_shared_in_one_forward(run):
    report = run["report"]
    assert report["pattern"] == "shared_trunk", run["text"]
    assert report["page"].endswith("02_two_losses_one_forward.html"), run["text"]
    assert "kept for a later step" not in run["text"], run["text"]


def test_the_inner_loss_reads_the_input_detached(run):
    report = run["report"]
    assert report["verdict"] == "gone", run["text"]
    assert [(e["line"], e["new"]) for e in report["edits"]] == [(marked(NAME, "inner"), [
        "        pull = (near - z.detach()).pow(2).mean()  # inner loss"])], run["text"]


def by_hand() -> dict:
    torch.manual_seed(0)
    encoder, centers, decoder = nn.Linear(5, 3), nn.Parameter(torch.randn(4, 3)), nn.Linear(3, 5)
    own = torch.optim.SGD([centers], lr=0.1)
    opt = torch.optim.SGD([*encoder.parameters(), *decoder.parameters()], lr=0.1)
    for _ in range(3):
        x = torch.randn(8, 5)
        z = encoder(x)
        near = centers[torch.cdist(z, centers).argmin(dim=1)]
        own.zero_grad()
        (near - z.detach()).pow(2).mean().backward()
        own.step()
        opt.zero_grad()
        (decoder(z + (near - z).detach()) - x).pow(2).mean().backward()
        opt.step()
    return {"encoder.weight": encoder.weight, "decoder.weight": decoder.weight,
            "protos.centers": centers}


def test_the_detached_inner_loss_trains_as_by_hand(run, tmp_path):
    trains_as(NAME, run["report"], by_hand(), tmp_path)
