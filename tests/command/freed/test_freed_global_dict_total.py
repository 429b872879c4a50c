"""A running total kept in a module-level dict and updated by the step function: the carrier
is the dict's entry at the function's statement that stores it (not the module's call of the
function), and the edit keeps the total as a number although the backward reads it only through
another name; the edited program trains as one written by hand."""

from __future__ import annotations

import pytest
import torch
from torch import nn

from command_runs import command_reports, marked, trains_as

NAME = "freed_global_dict_total_in_a_step_function.py"


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    return command_reports([NAME], tmp_path_factory.mktemp("total"))[NAME]


def test_the_entry_is_named_at_the_step_function_statement_that_stores_it(run):
    first = run["report"]["carriers"][0]
    assert (first["name"], first["line"], first["function"]) == \
        ('stats["loss"]', marked(NAME, "made"), "train_step"), run["text"]
    assert run["report"]["pattern"] == "accumulated_loss", run["text"]


def by_hand() -> dict:
    torch.manual_seed(0)
    net = nn.Linear(5, 1)
    opt = torch.optim.Adam(net.parameters(), lr=1e-2)
    for _ in range(3):
        x, y = torch.randn(8, 5), torch.randn(8, 1)
        loss = ((net(x) - y) ** 2).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
    return {"net.weight": net.weight, "net.bias": net.bias}


def test_the_total_kept_as_a_number_trains_as_by_hand(run, tmp_path):
    edits = run["report"]["edits"]
    assert [(e["line"], e["new"]) for e in edits] == \
        [(marked(NAME, "made"), ['    stats["loss"] = stats["loss"] + loss.item()  # made'])], run["text"]
    trains_as(NAME, run["report"], by_hand(), tmp_path)
