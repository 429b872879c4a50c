"""Edits that hold on freed-graph programs of shapes the rules missed: a loop fed back two
values of its last iteration that one statement reads (both detached where the loop reads
them, not only the first carrier); a list of targets made once before the loop and read
through a comprehension (detached just after the statement the replay recorded made it, where
the source shows no store to detach after). Each edit the command prints is applied, run, and its
weights compared with the program fixed by hand."""

from __future__ import annotations

import pytest
import torch
from torch import nn

from command_runs import command_reports, marked, trains_as

SCRIPTS = ["freed_two_states_read_by_one_statement.py", "freed_targets_list_made_once.py"]


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    return command_reports(SCRIPTS, tmp_path_factory.mktemp("freed_shapes"))


def _two_states_by_hand() -> dict:
    torch.manual_seed(0)
    refiner = nn.Linear(6, 3)
    opt = torch.optim.SGD(refiner.parameters(), lr=0.1)
    target = torch.randn(4, 3)
    for _ in range(2):
        guess, offset = torch.zeros(4, 3), torch.zeros(4, 3)
        for _ in range(3):
            guess, offset = guess.detach(), offset.detach()
            step = refiner(torch.cat([guess, offset], 1)) + offset
            guess, offset = torch.tanh(step), step
            loss = (guess - target).pow(2).mean()
            opt.zero_grad()
            loss.backward()
            opt.step()
    return {"refiner.weight": refiner.weight, "refiner.bias": refiner.bias}


def test_both_states_read_by_one_statement_are_detached(runs, tmp_path):
    name = SCRIPTS[0]
    report = runs[name]["report"]
    assert {c["name"] for c in report["carriers"][:2]} == {"guess", "offset"}
    (edit,) = report["edits"]
    assert edit["line"] == marked(name, "read")
    added = [line.strip() for line in edit["new"][:-1]]
    assert sorted(added) == ["guess = guess.detach()", "offset = offset.detach()"], edit
    trains_as(name, report, _two_states_by_hand(), tmp_path)


def _targets_by_hand() -> dict:
    torch.manual_seed(0)
    features = nn.Sequential(nn.Linear(4, 4), nn.Tanh())
    styles = [torch.randn(2, 4), torch.randn(2, 4)]
    targets = [features(s).sum(0).detach() for s in styles]
    image = torch.zeros(2, 4, requires_grad=True)
    opt = torch.optim.SGD([image], lr=0.1)
    for _ in range(3):
        loss = sum((features(image).sum(0) - t).pow(2).mean() for t in targets)
        opt.zero_grad()
        loss.backward()
        opt.step()
    return {"image": image, "features.0.weight": features[0].weight}


def test_a_list_made_once_is_detached_where_it_was_made(runs, tmp_path):
    name = SCRIPTS[1]
    report = runs[name]["report"]
    assert report["carriers"][0]["name"] == "targets"
    (edit,) = report["edits"]
    assert edit["line"] == marked(name, "got")
    assert [line.strip() for line in edit["new"][1:]] == ["targets = [s.detach() for s in targets]"]
    trains_as(name, report, _targets_by_hand(), tmp_path)
