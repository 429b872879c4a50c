"""A list that a loop appends each loss to, read back by an index that repeats each pass
(``history[k].backward()``): the carrier is the list, named at the statement that appends the
name the loss was assigned to (``history.append(err)``, after ``err = ...`` made its node, as
recorded), and the edit reads the name just appended in its place; the fix trains as the
program written by hand."""

from __future__ import annotations

import pytest
import torch
from torch import nn
from torch.nn import functional as F

from command_runs import marked, recorded_runs, trains_as

NAME = "freed_list_read_by_a_pass_index.py"


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    return recorded_runs([NAME], tmp_path_factory.mktemp("pass_index"))[NAME]


def test_the_list_is_named_where_it_keeps_the_loss(run):
    first = run["report"]["carriers"][0]
    assert (first["name"], first["line"]) == ("history", marked(NAME, "kept")), first
    assert first["why"].startswith(
        "this statement keeps its tensor, whose node was made by "
        f"`err = F.mse_loss(model(x), y)` at {NAME}:{marked(NAME, 'made')} (recorded in a "
        "replay)"), first["why"]
    assert (first["enters"]["name"], first["enters"]["line"]) == ("history[0]",
                                                                  marked(NAME, "fails"))


def test_the_loss_just_appended_is_read(run):
    report = run["report"]
    assert report["verdict"] == "gone", run["text"][-1500:]
    assert [(e["line"], e["new"]) for e in report["edits"]] == [
        (marked(NAME, "fails"), ["        err.backward()  # fails"])]


def by_hand() -> dict:
    torch.manual_seed(0)
    models = [nn.Sequential(nn.Linear(5, 6), nn.Tanh(), nn.Linear(6, 1)) for _ in range(2)]
    optimizers = [torch.optim.SGD(m.parameters(), lr=0.1) for m in models]
    for _ in range(3):
        x, y = torch.randn(7, 5), torch.randn(7, 1)
        for model, optimizer in zip(models, optimizers):
            optimizer.zero_grad()
            F.mse_loss(model(x), y).backward()
            optimizer.step()
    return {f"models.{k}.{i}.weight": models[k][i].weight for k in (0, 1) for i in (0, 2)}


def test_the_fix_trains_as_by_hand(run, tmp_path):
    trains_as(NAME, run["report"], by_hand(), tmp_path)
