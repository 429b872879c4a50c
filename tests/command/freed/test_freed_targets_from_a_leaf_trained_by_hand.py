"""A program without an optimizer that updates its weight by hand, in place: the verifying run
asks that what the program updates (the leaves it has written in place by the failure) still
gets a gradient, not every leaf the failing call would reach (the reference weight the targets
were made from, which nothing updates, loses its gradient by the very fix: the targets kept as
a constant). The text says so; the fix (the targets computed again in every step, from a reference that
nothing updates) trains as the program written by hand, and so does the alternative."""

from __future__ import annotations

import pytest
import torch

from command_runs import marked, recorded_runs, trains_as

NAME = "freed_targets_from_a_leaf_trained_by_hand.py"


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    return recorded_runs([NAME], tmp_path_factory.mktemp("by_hand"))[NAME]


def test_the_targets_kept_as_a_constant_hold_as_well(run):
    report = run["report"]
    assert report["verdict"] == "gone", run["text"][-1500:]
    kept = [(alternative, held) for alternative, held in zip(
        report["alternatives"], report["alternatives_verified"])
        if [(e["line"], e["new"][1:]) for e in alternative] ==
        [(marked(NAME, "made"), ["targets = targets.detach()"])]]
    assert kept and kept[0][1]["verdict"] == "gone" and kept[0][1]["by_hand"], report
    assert not report["failed_attempts"], report["failed_attempts"]
    assert "every parameter that the failing call would reach and that was written in place " \
        "before it still getting a gradient" in run["text"], run["text"]
    assert "optimizer updates" not in run["text"], run["text"]


def by_hand() -> dict:
    torch.manual_seed(0)
    inputs = torch.randn(60, 3)
    with torch.no_grad():
        targets = torch.tanh(inputs @ torch.randn(3, 1))
    w = torch.zeros(3, 1, requires_grad=True)
    for _ in range(2):
        for start in range(0, 60, 20):
            loss = ((torch.tanh(inputs[start:start + 20] @ w) - targets[start:start + 20]) ** 2
                    ).mean()
            loss.backward()
            with torch.no_grad():
                w -= 0.5 * w.grad
                w.grad.zero_()
    return {"w": w}


def test_the_fix_trains_as_by_hand(run, tmp_path):
    trains_as(NAME, run["report"], by_hand(), tmp_path)


def test_the_alternative_trains_as_by_hand(run, tmp_path):
    trains_as(NAME, {"edits": run["report"]["alternatives"][0]}, by_hand(), tmp_path)
