"""A recurrent cell's state kept on the model by the one method that reads and stores it, called
twice a step (a loss and an optimizer step after each): the carrier is the attribute at that
method's statement (its entries, h and c, were made there by one call), and the edit detaches
the state there, before the method reads it, so every call of it starts from a constant (a
detach where the step calls the method would leave the next step's first call reading a freed
graph). Run, it trains as the program written by hand with that detach. The pattern is the
module's state updated with history (the statement that made it reads its own old value), not
"two losses over one forward": the second loss has a forward of its own, so computing the shared
part again, that pattern's fix, is what the program already does."""

from __future__ import annotations

import pytest
import torch
from torch import nn

from command_runs import marked, recorded_runs, trains_as

NAME = "freed_cell_state_kept_by_a_method.py"


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    return recorded_runs([NAME], tmp_path_factory.mktemp("kept_state"))[NAME]


def test_the_state_is_named_where_the_method_made_it(run):
    first = run["report"]["carriers"][0]
    assert (first["name"], first["line"], first["function"]) == \
        ("self.hidden", marked(NAME, "got"), "encode"), run["text"]
    assert first["enters"]["line"] == marked(NAME, "enters"), first


def test_the_pattern_is_the_state_updated_with_history(run):
    report = run["report"]
    assert report["pattern"] == "module_state", run["text"]
    assert report["page"].endswith("16_module_state_with_history.html"), run["text"]
    assert "two losses over one forward" not in run["text"], run["text"]


def test_the_state_is_detached_before_the_method_reads_it(run):
    report = run["report"]
    assert report["verdict"] == "gone", run["text"]
    assert [(e["line"], e["new"]) for e in report["edits"]] == [(marked(NAME, "got"), [
        "        self.hidden = tuple(s.detach() for s in self.hidden)",
        "        self.hidden = self.cell(x, self.hidden)  # got"])], run["text"]


def by_hand() -> dict:
    torch.manual_seed(0)
    cell, value, policy = nn.LSTMCell(3, 5), nn.Linear(5, 1), nn.Linear(5, 2)
    opt_value = torch.optim.SGD([*cell.parameters(), *value.parameters()], lr=0.1)
    opt_policy = torch.optim.SGD(policy.parameters(), lr=0.1)
    hidden = (torch.zeros(4, 5), torch.zeros(4, 5))
    for _ in range(3):
        x = torch.randn(4, 3)
        hidden = cell(x, tuple(s.detach() for s in hidden))
        opt_value.zero_grad()
        value(hidden[0]).pow(2).mean().backward()
        opt_value.step()
        hidden = cell(x, tuple(s.detach() for s in hidden))
        opt_policy.zero_grad()
        policy(hidden[0]).pow(2).mean().backward()
        opt_policy.step()
    return {"model.cell.weight_ih": cell.weight_ih, "model.value.weight": value.weight,
            "model.policy.weight": policy.weight}


def test_the_detached_state_trains_as_by_hand(run, tmp_path):
    trains_as(NAME, run["report"], by_hand(), tmp_path)
