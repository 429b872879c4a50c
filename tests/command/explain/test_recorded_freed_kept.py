"""The freed-graph error where the statement that made the carrier's node assigned it to another
name, and a later statement keeps it under the carrier's name
(:func:`autograd_lens.explain.carrier_origin.kept`): the report gives the line that keeps it (the line
marked ``kept``), and the text says both that statement and the recorded one that made the node
(marked ``made``). An attribute that a constructor computes through a helper method is given at
the constructor's line that stores it, the method of its object in the recorded call chain that
assigns it:

* a gated cell's state, made in its loop over time steps and kept on the cell after it;
* a rollout's prediction, made in a step and fed back as the next step's input;
* a penalty computed by a helper method and kept by ``__init__``.
"""

from __future__ import annotations

import pytest
import torch
from torch import nn

from command_runs import marked, recorded_runs, trains_as

CELL = "freed_gru_state_kept_on_the_cell.py"
ROLLOUT = "freed_rollout_prediction_fed_back.py"
PENALTY = "freed_penalty_kept_by_init_from_a_helper.py"


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    return recorded_runs([CELL, ROLLOUT, PENALTY], tmp_path_factory.mktemp("kept"))


@pytest.mark.parametrize("name, shown", [(CELL, "self.last"), (ROLLOUT, "current")])
def test_the_line_that_keeps_it_is_given(name, shown, runs):
    report, text = runs[name]["report"], runs[name]["text"]
    first = report["carriers"][0]
    assert (first["name"], first["line"]) == (shown, marked(name, "kept")), first
    said = (f"{name}:{marked(name, 'kept')} in ")
    assert f"  {shown}  {said}" in text, text
    assert (f"this statement keeps its tensor, whose node was made by `") in first["why"], first
    assert f"` at {name}:{marked(name, 'made')} (recorded in a replay)" in first["why"], first


def test_the_constructor_line_that_stores_it_is_given(runs):
    first = runs[PENALTY]["report"]["carriers"][0]
    assert (first["name"], first["line"], first["function"]) == \
        ("self.penalty", marked(PENALTY, "kept"), "__init__"), first
    assert "made by this statement (`self.penalty = self.weight_penalty()`, recorded in a " \
        "replay)" in first["why"], first


def cell_by_hand() -> dict:
    """The cell's state carried to the next batch as a value, without its graph."""
    torch.manual_seed(0)
    gate, mix, head = nn.Linear(10, 5), nn.Linear(5, 5), nn.Linear(5, 1)
    opt = torch.optim.SGD([*gate.parameters(), *mix.parameters(), *head.parameters()], lr=0.1)
    last = None
    for _ in range(3):
        xs, y = torch.randn(4, 6, 5), torch.randn(6, 1)
        state = last.detach() if last is not None else torch.zeros(6, 5)
        for x in xs:
            z = torch.sigmoid(gate(torch.cat([x, state], dim=1)))
            state = z * state + (1 - z) * torch.tanh(mix(x))
        last = state
        loss = (head(state) - y).pow(2).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
    return {"cell.gate.weight": gate.weight, "cell.mix.weight": mix.weight,
            "head.weight": head.weight}


def rollout_by_hand() -> dict:
    """Each step's error trains the one step that made it: its input taken as a value."""
    torch.manual_seed(0)
    dynamics = nn.Sequential(nn.Linear(3, 12), nn.Tanh(), nn.Linear(12, 3))
    opt = torch.optim.Adam(dynamics.parameters(), lr=0.01)
    for _ in range(2):
        start = torch.randn(8, 3)
        truth = start + 0.1 * torch.randn(4, 8, 3).cumsum(0)
        opt.zero_grad()
        current = start
        for t in range(4):
            predicted = current.detach() + dynamics(current.detach())
            (predicted - truth[t]).pow(2).mean().backward()
            current = predicted
        opt.step()
    return {"dynamics.0.weight": dynamics[0].weight, "dynamics.2.weight": dynamics[2].weight}


def penalty_by_hand() -> dict:
    """The penalty computed again from the current tables in every batch."""
    torch.manual_seed(0)
    users, items = nn.Embedding(6, 3), nn.Embedding(5, 3)
    opt = torch.optim.SGD([users.weight, items.weight], lr=0.05)
    u, i, r = torch.randint(0, 6, (16,)), torch.randint(0, 5, (16,)), torch.rand(16)
    for _ in range(3):
        penalty = torch.zeros(()) + 1e-3 * users.weight.pow(2).sum()
        penalty = penalty + 1e-3 * items.weight.pow(2).sum()
        loss = ((users(u) * items(i)).sum(1) - r).pow(2).mean() + penalty
        opt.zero_grad()
        loss.backward()
        opt.step()
    return {"model.users.weight": users.weight, "model.items.weight": items.weight}


@pytest.mark.parametrize("name, reference", [(CELL, cell_by_hand), (ROLLOUT, rollout_by_hand),
                                             (PENALTY, penalty_by_hand)])
def test_the_verified_edit_trains_as_by_hand(name, reference, runs, tmp_path):
    """What the report now says changes no edit: each gets one that ran clean, and trains the
    weights as the program fixed by hand (the penalty's: its helper called where it is read)."""
    report = runs[name]["report"]
    assert report["verdict"] == "gone", runs[name]["text"][-1500:]
    trains_as(name, report, reference(), tmp_path)


def test_the_penalty_is_computed_again_where_it_is_read(runs):
    (edit,) = runs[PENALTY]["report"]["edits"]
    assert edit["new"] == [edit["old"].replace("model.penalty", "model.weight_penalty()")], edit
