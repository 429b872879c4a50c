"""A dict of losses from one forward, an entry added to it by the loop, a critic's step, then a
loss taken from the dict: the loss is built again after the step by running the forward again,
and the entry the loop added is stored again after it (the dict built again would lack it, and
the program reads it later: a KeyError). The edited program trains as by hand."""

from __future__ import annotations

import pytest
import torch
from torch import nn
import torch.nn.functional as F

from command_runs import marked, recorded_runs, trains_as

NAME = "inplace_step_between_losses_of_a_dict.py"


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    return recorded_runs([NAME], tmp_path_factory.mktemp("dict"))[NAME]


def test_the_forward_and_the_added_entry_come_again_after_the_step(run):
    report = run["report"]
    assert report["verdict"] == "gone", run["text"]
    edit = report["edits"][0]
    assert edit["line"] == marked(NAME, "stepped"), edit
    assert [line.split("#")[0].strip() for line in edit["new"][1:]] == [
        "losses = losses_of(noise, real)",
        'losses["critic"] = losses["real"] + losses["fake"]'], edit


def _by_hand() -> dict:
    torch.manual_seed(0)
    maker, critic = nn.Linear(3, 4), nn.Linear(4, 1)
    opt_maker = torch.optim.SGD(maker.parameters(), lr=0.05)
    opt_critic = torch.optim.SGD(critic.parameters(), lr=0.05)
    for _ in range(3):
        noise, real = torch.randn(6, 3), torch.randn(6, 4)
        made = maker(noise)
        opt_critic.zero_grad()
        (F.softplus(-critic(real)).mean() + F.softplus(critic(made.detach())).mean()).backward()
        opt_critic.step()
        made = maker(noise)
        opt_maker.zero_grad()
        (F.softplus(-critic(made)).mean() + 0.1 * made.pow(2).mean()).backward()
        opt_maker.step()
    return {"maker.weight": maker.weight, "critic.weight": critic.weight}


def test_the_edit_trains_as_by_hand(run, tmp_path):
    trains_as(NAME, run["report"], _by_hand(), tmp_path)
