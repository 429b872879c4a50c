"""A value a submodule computes once in __init__ from its own parameter and reads in forward:
at the failure the recording shows it held as the outer model's ``model.temperature.t``, of an
object of the class that reads it as ``self.t``. The read computes the value again (as
__init__ did), an edit run before it is printed, and the fix trains as a program written by
hand that computes the temperature in each step."""

from __future__ import annotations

import pytest
import torch
from torch import nn

from command_runs import marked, recorded_runs, trains_as

NAME = "freed_submodule_value_made_in_init.py"


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    return recorded_runs([NAME], tmp_path_factory.mktemp("temperature"))[NAME]


def test_the_read_computes_the_value_again(run):
    report = run["report"]
    assert report["verdict"] == "gone", run["text"][-2000:]
    assert [(e["line"], e["new"]) for e in report["edits"]] == [
        (marked(NAME, "read"), ["        return logits / self.log_t.exp()  # read"])]


def by_hand() -> dict:
    torch.manual_seed(0)
    body, log_t = nn.Linear(5, 3), nn.Parameter(torch.zeros(1))
    optimizer = torch.optim.SGD([*body.parameters(), log_t], lr=0.1)
    for _ in range(3):
        x, y = torch.randn(8, 5), torch.randint(0, 3, (8,))
        loss = nn.functional.cross_entropy(body(x) / log_t.exp(), y)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    return {"model.body.weight": body.weight, "model.temperature.log_t": log_t}


def test_the_fix_trains_as_by_hand(run, tmp_path):
    trains_as(NAME, run["report"], by_hand(), tmp_path)
