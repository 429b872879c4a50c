"""An augmented write over two lines (``w /= torch.norm(\\n w, ...)``), whose value reads the
tensor it writes: a copy made before it would be what the norm saves, and the division would
overwrite it as well. The write is made out of place over the same lines (``w = w / ...``), an
edit run before it is printed, training as the router written by hand out of place."""

from __future__ import annotations

import pytest
import torch
from torch import nn

from command_runs import marked, recorded_runs, trains_as

NAME = "inplace_normalised_over_two_lines.py"


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    return recorded_runs([NAME], tmp_path_factory.mktemp("lines"))[NAME]


def test_the_write_is_made_out_of_place_over_its_lines(run):
    report = run["report"]
    assert report["verdict"] == "gone", run["text"][-1500:]
    assert [(e["line"], e["new"]) for e in report["edits"]] == [
        (marked(NAME, "write"), ["    weights = weights / torch.norm(  # write"])]


def by_hand() -> dict:
    torch.manual_seed(0)
    router = nn.Linear(6, 4)
    optimizer = torch.optim.SGD(router.parameters(), lr=0.1)
    for _ in range(3):
        x = torch.randn(8, 6)
        weights, _ = torch.topk(router(x).softmax(-1), 2, dim=-1)
        weights = weights / weights.norm(dim=-1, keepdim=True)
        loss = (weights[:, 0] - 0.9).pow(2).mean()
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    return {"router.weight": router.weight, "router.bias": router.bias}


def test_the_fix_trains_as_by_hand(run, tmp_path):
    trains_as(NAME, run["report"], by_hand(), tmp_path)
