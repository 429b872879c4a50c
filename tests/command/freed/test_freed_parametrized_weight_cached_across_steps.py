"""A weight-normalised layer trained inside one ``parametrize.cached()`` block around the whole
loop: the cache keeps the first step's weight, with its graph, for the second. The weight cannot
be assigned (a parametrization computes it); the block goes inside the loop, one cache per step,
an edit run before it is printed, and the fix trains as the same steps written by hand without
a cache (a cache per step changes no value)."""

from __future__ import annotations

import pytest
import torch
from torch import nn
from torch.nn.utils.parametrizations import weight_norm

from command_runs import recorded_runs, trains_as

NAME = "carrier_parametrized_cached_steps.py"


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    return recorded_runs([NAME], tmp_path_factory.mktemp("cached"))[NAME]


def test_the_block_goes_inside_the_loop(run):
    report = run["report"]
    assert report["verdict"] == "gone", run["text"][-2000:]
    assert [(e["line"], e["new"]) for e in report["edits"]] == [
        (11, ["for step in range(2):"]), (12, ["    with parametrize.cached():"])]


def by_hand() -> dict:
    torch.manual_seed(0)
    layer = weight_norm(nn.Linear(3, 2))
    opt = torch.optim.SGD(layer.parameters(), lr=0.1)
    for _ in range(2):
        x, y = torch.randn(5, 3), torch.randn(5, 2)
        loss = (layer(x) - y).pow(2).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
    weight = layer.parametrizations.weight
    return {"layer.parametrizations.weight.original0": weight.original0,
            "layer.parametrizations.weight.original1": weight.original1, "layer.bias": layer.bias}


def test_the_fix_trains_as_by_hand(run, tmp_path):
    trains_as(NAME, run["report"], by_hand(), tmp_path)
