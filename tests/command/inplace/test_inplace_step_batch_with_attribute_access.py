"""The replay's recorder reads the names of the user's frames without running their code: a
batch that is a dict read by attribute (``__getattr__ = dict.__getitem__``: a missing name
raises KeyError, not AttributeError) made the recorder's ``getattr(batch, "_parameters",
None)`` raise into the program at its first in-place write, so the replay "did not fail the
same way" and the report fell back to a guess (a soft update's ``p_o.data.copy_``, false).
Now the step is recorded as the write, the step rule reads that recorded write (not the first
run's guess held by the carriers), and the actor's loss is built again after the step; the
fix trains as the program written by hand."""

from __future__ import annotations

import copy

import pytest
import torch
from torch import nn
from torch.nn import functional as F

from command_runs import marked, recorded_runs, trains_as

NAME = "inplace_step_batch_with_attribute_access.py"


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    return recorded_runs([NAME], tmp_path_factory.mktemp("batch_attributes"))[NAME]


def test_the_step_is_recorded_as_the_write(run):
    assert "Not recorded" not in run["text"] and "a guess" not in run["text"], run["text"]
    first = run["report"]["carriers"][0]
    assert (first["name"], first["line"], first["kind"]) == (
        "self.critic_optim", marked(NAME, "step"), "write"), first


def test_the_actor_loss_is_built_again_after_the_step(run):
    report = run["report"]
    assert report["verdict"] == "gone", run["text"][-1500:]
    assert [(e["line"], e["new"][1:]) for e in report["edits"]] == [(marked(NAME, "step"), [
        "        current_qa = self.critic(torch.cat([batch.obs, a], 1))",
        "        actor_loss = -current_qa.mean()"])]


def by_hand() -> dict:
    torch.manual_seed(0)
    actor = nn.Sequential(nn.Linear(3, 8), nn.Tanh(), nn.Linear(8, 2))
    critic = nn.Sequential(nn.Linear(5, 16), nn.ReLU(), nn.Linear(16, 1))
    critic_old = copy.deepcopy(critic)
    actor_optim = torch.optim.Adam(actor.parameters(), lr=1e-2)
    critic_optim = torch.optim.Adam(critic.parameters(), lr=1e-2)
    for _ in range(3):
        obs, act, rew = torch.randn(8, 3), torch.rand(8, 2), torch.randn(8, 1)
        with torch.no_grad():
            target_q = (rew + 0.9 * critic_old(torch.cat([obs, act], 1))).clamp(-10.0, 10.0)
        critic_loss = F.mse_loss(critic(torch.cat([obs, act], 1)), target_q)
        critic_optim.zero_grad()
        critic_loss.backward()
        critic_optim.step()
        actor_loss = -critic(torch.cat([obs, torch.tanh(actor(obs))], 1)).mean()
        actor_optim.zero_grad()
        actor_loss.backward()
        actor_optim.step()
        with torch.no_grad():
            for p_o, p_n in zip(critic_old.parameters(), critic.parameters()):
                p_o.mul_(0.95).add_(p_n, alpha=0.05)
    return {"learner.actor.0.weight": actor[0].weight, "learner.critic.0.weight": critic[0].weight,
            "learner.critic_old.0.weight": critic_old[0].weight}


def test_the_fix_trains_as_by_hand(run, tmp_path):
    trains_as(NAME, run["report"], by_hand(), tmp_path)
