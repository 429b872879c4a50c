"""A growing buffer kept on an object that a module-level global holds, read by an update
function that does not assign that global: the list is emptied right after the update's
backward, and with it the list of rewards gathered beside it and read by the same update (left
full, the next update would pair the second episode's log-probabilities with the first
episode's returns, silently, through zip or a size mismatch). The fix trains as the program
fixed by hand."""

from __future__ import annotations

import pytest
import torch
from torch import nn
from torch.distributions import Categorical

from command_runs import marked, recorded_runs, trains_as

NAME = "freed_episode_lists_on_agent.py"


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    return recorded_runs([NAME], tmp_path_factory.mktemp("episode"))[NAME]


def test_both_lists_are_emptied_after_the_update(run):
    report = run["report"]
    assert report["carriers"][0]["name"] == "agent.log_probs", report["carriers"]
    assert report["verdict"] == "gone", run["text"][-1500:]
    assert [(e["line"], e["new"][1:]) for e in report["edits"]] == [(marked(NAME, "fails"), [
        "    agent.log_probs.clear()", "    agent.rewards.clear()"])]


def by_hand() -> dict:
    torch.manual_seed(0)
    net = nn.Sequential(nn.Linear(3, 16), nn.ReLU(), nn.Linear(16, 2))
    optimizer = torch.optim.SGD(net.parameters(), lr=0.05)
    for _ in range(3):
        log_probs, rewards = [], []
        for _ in range(5):
            state = torch.randn(3)
            dist = Categorical(logits=net(state))
            action = dist.sample()
            log_probs.append(dist.log_prob(action))
            rewards.append(float(action.item() == int(state[0] > 0)))
        returns = torch.tensor(rewards).flip(0).cumsum(0).flip(0)
        optimizer.zero_grad()
        (-(torch.stack(log_probs) * returns).sum()).backward()
        optimizer.step()
    return {"agent.net.0.weight": net[0].weight, "agent.net.2.weight": net[2].weight}


def test_the_fix_trains_as_by_hand(run, tmp_path):
    trains_as(NAME, run["report"], by_hand(), tmp_path)
