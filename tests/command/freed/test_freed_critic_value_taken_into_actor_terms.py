"""An actor's terms that take in a critic's value which the critic's own backward has gone
through (``terms.append(-logp * gap)``, ``gap = ret - baseline``, the critic fitted at every
step): the statement of the recorded chain that made the carrier's node reads a name the
recording lists as holding that freed graph (``gap``), and the edit reads it detached there;
the fix trains as the program written by hand. A name of the failing call's own scope that
the recording walked and does not list (``logp``: the actor's graph, which no backward went
through) is not said to hold a graph that an earlier backward went through."""

from __future__ import annotations

import pytest
import torch
from torch import nn

from command_runs import marked, recorded_runs, trains_as

NAME = "freed_critic_value_taken_into_actor_terms.py"


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    return recorded_runs([NAME], tmp_path_factory.mktemp("critic_value"))[NAME]


def test_the_critic_value_is_read_detached_where_the_actor_takes_it_in(run):
    report = run["report"]
    assert report["verdict"] == "gone", run["text"][-1500:]
    assert [(e["line"], e["new"]) for e in report["edits"]] == [
        (marked(NAME, "made"), ["        terms.append(-logp * gap.detach())  # made"])]


def test_a_name_the_recording_does_not_list_is_not_a_carrier(run):
    assert "logp" not in [c["name"] for c in run["report"]["carriers"]], run["report"]
    assert "\n  logp " not in run["text"], run["text"]


def by_hand() -> dict:
    torch.manual_seed(0)
    actor = nn.Sequential(nn.Linear(3, 8), nn.Tanh(), nn.Linear(8, 2))
    actor_opt = torch.optim.SGD(actor.parameters(), lr=0.05)
    critic = nn.Sequential(nn.Linear(3, 8), nn.Tanh(), nn.Linear(8, 1))
    critic_opt = torch.optim.SGD(critic.parameters(), lr=0.05)
    for _ in range(3):
        terms = []
        for _ in range(4):
            s, ret = torch.randn(3), torch.randn(1)
            logp = torch.log_softmax(actor(s), -1)[0]
            baseline = critic(s)
            critic_opt.zero_grad()
            (baseline - ret).pow(2).mean().backward()
            critic_opt.step()
            terms.append(-logp * (ret - baseline.detach()))
        actor_opt.zero_grad()
        torch.stack(terms).sum().backward()
        actor_opt.step()
    return {"actor.0.weight": actor[0].weight, "critic.fc.0.weight": critic[0].weight}


def test_the_fix_trains_as_by_hand(run, tmp_path):
    trains_as(NAME, run["report"], by_hand(), tmp_path)
