"""In-place edits that follow every write the replay recorded, not only the first:

* two views of one saved output (``means /= t`` then ``scales /= t``), each written in place:
  the recording gives the second write as a later write of the same saved tensor
  (``later_writes``), and the edit writes both out of place, each under its own name (the
  first edit written for the first view alone would still fail);
* a loss built through two critics before each critic's optimizer steps: built again after the
  last of those steps, not after the first one the replay recorded writing a saved weight.

Each edit is applied, run, and its weights compared with the program fixed by hand."""

from __future__ import annotations

import pytest
import torch
from torch import nn

from command_runs import marked, recorded_runs, trains_as

VIEWS = "inplace_two_views_scaled_in_place.py"
CRITICS = "inplace_actor_loss_before_two_critic_steps.py"


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    return recorded_runs([VIEWS, CRITICS], tmp_path_factory.mktemp("later"))


def test_the_second_write_is_recorded_as_a_later_write(runs):
    later = runs[VIEWS]["report"]["recorded"]["later_writes"]
    assert [w["line"] for w in later] == [marked(VIEWS, "again")], later


def test_both_views_are_written_out_of_place(runs):
    edits = runs[VIEWS]["report"]["edits"]
    assert [(e["line"], e["new"]) for e in edits] == [
        (marked(VIEWS, "write"), ["        means = means / temperature"]),
        (marked(VIEWS, "again"), ["        scales = scales / temperature"])], edits


def views_by_hand() -> dict:
    torch.manual_seed(0)
    proj = nn.Sequential(nn.Linear(6, 6), nn.Sigmoid())
    opt = torch.optim.Adam(proj.parameters(), lr=0.01)
    x, target = torch.randn(12, 6), torch.randn(12)
    for _ in range(3):
        out = proj(x) / 2.0
        loss = (out[:, :3].sum(1) + out[:, 3:].log().sum(1) - target).pow(2).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
    return {"head.proj.0.weight": proj[0].weight, "head.proj.0.bias": proj[0].bias}


def critics_by_hand() -> dict:
    torch.manual_seed(0)
    actor = nn.Sequential(nn.Linear(4, 16), nn.ReLU(), nn.Linear(16, 2), nn.Tanh())
    critics = [nn.Sequential(nn.Linear(6, 16), nn.ReLU(), nn.Linear(16, 1)) for _ in range(2)]
    actor_opt = torch.optim.Adam(actor.parameters(), lr=1e-3)
    opts = [torch.optim.Adam(c.parameters(), lr=1e-3) for c in critics]
    for _ in range(3):
        states, actions, returns = torch.randn(8, 4), torch.rand(8, 2) * 2 - 1, torch.randn(8)
        taken = torch.cat([states, actions], 1)
        for critic, opt in zip(critics, opts):  # each critic's own update first
            opt.zero_grad()
            (critic(taken).squeeze(1) - returns).pow(2).mean().backward()
            opt.step()
        both = torch.cat([states, actor(states)], 1)
        actor_loss = -torch.min(critics[0](both), critics[1](both)).mean()  # the critics now
        actor_opt.zero_grad()
        actor_loss.backward()
        actor_opt.step()
    return {"actor.0.weight": actor[0].weight, "critic_a.0.weight": critics[0][0].weight,
            "critic_b.2.weight": critics[1][2].weight}


@pytest.mark.parametrize("name, reference", [(VIEWS, views_by_hand),
                                             (CRITICS, critics_by_hand)])
def test_the_edit_trains_as_by_hand(name, reference, runs, tmp_path):
    report = runs[name]["report"]
    assert report["verdict"] == "gone", runs[name]["text"][-1500:]
    trains_as(name, report, reference(), tmp_path)


def test_the_loss_is_built_again_after_the_last_critic_step(runs):
    (edit,) = runs[CRITICS]["report"]["edits"]
    assert edit["line"] == marked(CRITICS, "last"), edit
    assert runs[CRITICS]["report"]["recorded"]["write"]["user"]["line"] == marked(CRITICS, "write")
