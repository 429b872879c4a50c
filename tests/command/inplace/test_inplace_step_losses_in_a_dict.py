"""An optimizer step between the forward and a loss read from the dict the forward returned:
no carrier of the source's reading names the dict, and the recording shows it (``losses``,
through its entry) holding the failing graph, made before the step. The names the recording
shows holding the graph in the failing frame count as carrying it, so the statement that made
the dict runs again right after the step; the fix trains as the program written by hand."""

from __future__ import annotations

import pytest
import torch
from torch import nn

from command_runs import marked, recorded_runs, trains_as

NAME = "inplace_step_losses_in_a_dict.py"


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    return recorded_runs([NAME], tmp_path_factory.mktemp("losses_dict"))[NAME]


def test_the_dict_is_made_again_after_the_step(run):
    report = run["report"]
    assert report["verdict"] == "gone", run["text"][-1500:]
    assert [(e["line"], e["new"][1:]) for e in report["edits"]] == [(marked(NAME, "step"), [
        "    losses = pair(torch.randn(6, 4), torch.randn(6, 4))  # made"])]


def by_hand() -> dict:
    torch.manual_seed(0)
    gen = nn.Sequential(nn.Linear(4, 8), nn.Tanh(), nn.Linear(8, 4))
    critic = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 1))
    opt_g = torch.optim.SGD(gen.parameters(), lr=0.01)
    opt_c = torch.optim.SGD(critic.parameters(), lr=0.01)
    for _ in range(3):
        noise, real = torch.randn(6, 4), torch.randn(6, 4)
        fake = gen(noise)
        opt_c.zero_grad()
        (critic(fake.detach()).mean() - critic(real).mean()).backward()
        opt_c.step()
        noise, real = torch.randn(6, 4), torch.randn(6, 4)  # the forward runs again: new draws
        fake = gen(noise)
        opt_g.zero_grad()
        (-critic(fake).mean() + 0.1 * fake.pow(2).mean()).backward()
        opt_g.step()
    return {"pair.gen.0.weight": gen[0].weight, "pair.critic.0.weight": critic[0].weight}


def test_the_fix_trains_as_by_hand(run, tmp_path):
    trains_as(NAME, run["report"], by_hand(), tmp_path)
