"""Targets a model scales once, in __init__, by a scale that carries a graph it does not train:
read as computed once (the outside-the-loop pattern), the value is kept as a constant where the
step reads it, an edit run before it is printed, training as the fit written by hand against
constant targets. (Reading the attribute as made once must not lose the edit that reading it as
module state gave.)"""

from __future__ import annotations

import pytest
import torch

from command_runs import marked, recorded_runs, trains_as

NAME = "freed_targets_scaled_once_in_init.py"


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    return recorded_runs([NAME], tmp_path_factory.mktemp("targets"))[NAME]


def test_the_targets_are_kept_as_a_constant(run):
    report = run["report"]
    assert report["pattern"] == "outside_loop", run["text"]
    assert report["verdict"] == "gone", run["text"][-1500:]
    assert [(e["line"], e["new"]) for e in report["edits"]] == [
        (marked(NAME, "read"), ["        self.targets = self.targets.detach()",
                                "        return (self.w - self.targets).pow(2).mean()  # read"])]


def by_hand() -> dict:
    torch.manual_seed(0)
    targets = torch.randn(5)
    w = torch.zeros(5, requires_grad=True)
    optimizer = torch.optim.SGD([w], lr=0.1)
    for _ in range(3):
        loss = (w - targets).pow(2).mean()
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    return {"model.w": w}


def test_the_fix_trains_as_by_hand(run, tmp_path):
    trains_as(NAME, run["report"], by_hand(), tmp_path)
