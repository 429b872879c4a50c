"""A value made before an optimizer step and read by a loss built after it (a loop's second
phase reads the probabilities its first phase kept, and that phase's step changed a weight their
graph saved). The replay records when each name's node was made: the carrier is the kept value,
at the statement that made it, said to be made before the step (the loss itself, built after
the step, is not said to be read before it is assigned); the edit reads it detached where the
second phase first reads it, and it trains as the program written by hand with that detach."""

from __future__ import annotations

import pytest
import torch
from torch import nn

from command_runs import marked, recorded_runs, trains_as

NAME = "inplace_kept_across_a_step_by_a_phase.py"


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    return recorded_runs([NAME], tmp_path_factory.mktemp("across_step"))[NAME]


def test_the_kept_value_is_named_where_it_was_made(run):
    carriers = run["report"]["carriers"]
    assert (carriers[0]["name"], carriers[0]["line"]) == ("opt_cls", marked(NAME, "step"))
    kept = carriers[1]
    assert (kept["name"], kept["line"]) == ("probs", marked(NAME, "made")), run["text"]
    assert kept["enters"]["line"] == marked(NAME, "reads"), kept  # read first after the step
    assert "made before the optimizer step (`opt_cls.step()` at line " \
        f"{marked(NAME, 'step')})" in kept["why"], kept
    assert not any(c["name"] == "loss" for c in carriers), run["text"]
    assert "before it is assigned" not in run["text"], run["text"]


def test_the_kept_value_is_read_detached_after_the_step(run):
    report = run["report"]
    assert report["verdict"] == "gone", run["text"]
    assert [(e["line"], e["new"]) for e in report["edits"]] == [(marked(NAME, "reads"), [
        "            probs = probs.detach()",
        "            weighted = x * probs  # reads"])], run["text"]
    assert "Fix, as run and verified: `probs`, made before the step" in run["text"]


def by_hand() -> dict:
    torch.manual_seed(0)
    classifier = nn.Sequential(nn.Linear(6, 8), nn.Tanh(), nn.Linear(8, 6), nn.Sigmoid())
    decoder = nn.Linear(6, 6)
    opt_cls = torch.optim.SGD(classifier.parameters(), lr=0.1)
    opt_dec = torch.optim.SGD(decoder.parameters(), lr=0.1)
    for _ in range(3):
        x, target = torch.randn(4, 6), torch.rand(4, 6)
        probs = classifier(x)
        opt_cls.zero_grad()
        nn.functional.binary_cross_entropy(probs, target).backward()
        opt_cls.step()
        opt_dec.zero_grad()
        (decoder(x * probs.detach()) - x).pow(2).mean().backward()
        opt_dec.step()
    return {"classifier.0.weight": classifier[0].weight, "classifier.2.weight":
            classifier[2].weight, "decoder.weight": decoder.weight}


def test_the_detached_value_trains_as_by_hand(run, tmp_path):
    trains_as(NAME, run["report"], by_hand(), tmp_path)
