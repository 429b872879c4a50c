"""An in-place error by an optimizer step where one helper runs every update, called first for
the critic's loss and then for the actor's, built before the critic's update: the recorded call
chains of the step and of the failing backward run in one helper and part in the function that
calls it twice. The carrier is the actor's loss as that function holds it (never the helper's
parameter ``loss``, "read before it is assigned", which it is not), made before the step, and
entering at the helper's second call; the edit builds it again right before that call, and the
fix trains as the program written by hand (the critic stepped, then the actor's loss built)."""

from __future__ import annotations

import pytest
import torch
from torch import nn
from torch.nn import functional as F

from command_runs import marked, recorded_runs, trains_as

NAME = "inplace_step_in_a_shared_update.py"


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    return recorded_runs([NAME], tmp_path_factory.mktemp("shared_update"))[NAME]


def test_the_stale_loss_is_named_in_the_function_that_calls_the_helper(run):
    step, carrier = run["report"]["carriers"][:2]
    assert (step["kind"], step["line"]) == ("write", marked(NAME, "step")), step
    assert (carrier["name"], carrier["line"], carrier["enters"]["line"]) == (
        "a_loss", marked(NAME, "made"), marked(NAME, "enters")), carrier
    assert f"run by the call at line {marked(NAME, 'stepped')})" in carrier["why"], carrier
    assert "before it is assigned" not in run["text"], run["text"]


def test_the_loss_is_built_again_before_the_call_that_failed(run):
    report = run["report"]
    assert report["verdict"] == "gone", run["text"][-1500:]
    assert [(e["line"], e["new"]) for e in report["edits"]] == [(marked(NAME, "enters"), [
        "        a_loss = self.actor_loss(s)",
        "        update(self.actor_opt, a_loss)  # enters"])]


def by_hand() -> dict:
    torch.manual_seed(0)
    actor = nn.Sequential(nn.Linear(4, 16), nn.Tanh(), nn.Linear(16, 2))
    critic = nn.Sequential(nn.Linear(6, 16), nn.Tanh(), nn.Linear(16, 1))
    actor_opt = torch.optim.SGD(actor.parameters(), lr=0.05)
    critic_opt = torch.optim.SGD(critic.parameters(), lr=0.05)
    for _ in range(3):
        s, a, r = torch.randn(8, 4), torch.rand(8, 2) * 2 - 1, torch.randn(8)
        for optimizer, loss_of in (
                (critic_opt, lambda: F.mse_loss(critic(torch.cat([s, a], 1)).squeeze(1), r)),
                (actor_opt, lambda: -critic(torch.cat([s, torch.tanh(actor(s))], 1)).mean())):
            loss = loss_of()
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
    return {"agent.actor.0.weight": actor[0].weight, "agent.critic.0.weight": critic[0].weight}


def test_the_fix_trains_as_by_hand(run, tmp_path):
    trains_as(NAME, run["report"], by_hand(), tmp_path)
