"""Codes computed once by an encoder trained before, whose optimizer is still alive, then used
to fit a probe with an optimizer of its own: the edit that keeps the codes as a constant stops
the probe's gradients into the encoder, which no optimizer updates past the failing point
(its optimizer never steps again). It holds, and the text names what it stops; the fix trains
as the program written by hand."""

from __future__ import annotations

import pytest
import torch
from torch import nn

from command_runs import marked, recorded_runs, trains_as

NAME = "freed_codes_of_a_trained_encoder.py"


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    return recorded_runs([NAME], tmp_path_factory.mktemp("codes"))[NAME]


def test_the_codes_kept_as_a_constant_hold(run):
    report = run["report"]
    assert report["verdict"] == "gone", run["text"][-1500:]
    assert [(e["line"], e["new"][1:]) for e in report["edits"]] == [
        (marked(NAME, "made"), ["codes = codes.detach()"])]
    assert "every parameter that the failing call would reach and an optimizer updates past " \
        "that point still getting a gradient; the edit stops gradients into " in run["text"]
    assert "which no optimizer updated past that point" in run["text"], run["text"]


def by_hand() -> dict:
    torch.manual_seed(0)
    data = torch.randn(32, 6)
    encoder, decoder = nn.Sequential(nn.Linear(6, 4), nn.Tanh()), nn.Linear(4, 6)
    enc_opt = torch.optim.Adam([*encoder.parameters(), *decoder.parameters()], lr=1e-2)
    for _ in range(3):
        enc_opt.zero_grad()
        (decoder(encoder(data)) - data).pow(2).mean().backward()
        enc_opt.step()
    with torch.no_grad():
        codes = encoder(data)
    labels = torch.randn(32)
    probe = nn.Linear(4, 1)
    optimizer = torch.optim.SGD(probe.parameters(), lr=0.1)
    for _ in range(4):
        optimizer.zero_grad()
        (probe(codes).squeeze(1) - labels).pow(2).mean().backward()
        optimizer.step()
    return {"probe.weight": probe.weight, "encoder.0.weight": encoder[0].weight}


def test_the_fix_trains_as_by_hand(run, tmp_path):
    trains_as(NAME, run["report"], by_hand(), tmp_path)
