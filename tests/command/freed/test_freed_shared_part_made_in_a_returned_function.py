"""Two losses of one forward, made by a loss function that runs the critic once over a stacked
batch and returns both in a dict, backpropagated in turn: the source's reading names the dict of
losses (what the failing backward reads). No name holds the shared part at the failure: it was a
local of the loss function. The recording shows the statement that made its node, and the name
it gave it there (``scores``): that name is given first, at that line; the dict stays as the
second carrier. The edit (one backward of the sum) is run before it is printed and trains as a
program written by hand."""

from __future__ import annotations

import pytest
import torch
from torch import nn

from command_runs import marked, recorded_runs, trains_as

NAME = "freed_two_losses_from_one_batched_call.py"


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    return recorded_runs([NAME], tmp_path_factory.mktemp("shared"))[NAME]


def test_the_shared_part_is_named_where_it_was_made(run):
    carriers = run["report"]["carriers"]
    assert [(c["name"], c["line"]) for c in carriers[:2]] == [
        ("scores", marked(NAME, "shared")), ("terms", marked(NAME, "shared") + 6)], run["text"]
    assert "was the shared part of the graph, made by this statement (recorded in a replay)" \
        in run["text"]
    assert run["report"]["page"].endswith("02_two_losses_one_forward.html")


def by_hand() -> dict:
    torch.manual_seed(0)
    critic = nn.Sequential(nn.Linear(4, 8), nn.Tanh(), nn.Linear(8, 1))
    opt = torch.optim.SGD(critic.parameters(), lr=0.1)
    for _ in range(2):
        real, fake = torch.randn(5, 4), torch.randn(5, 4)
        loss = (critic(real) - 1).pow(2).mean() + critic(fake).pow(2).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
    return {"critic.0.weight": critic[0].weight, "critic.2.bias": critic[2].bias}


def test_the_fix_trains_as_by_hand(run, tmp_path):
    assert run["report"]["verdict"] == "gone", run["text"][-1500:]
    trains_as(NAME, run["report"], by_hand(), tmp_path)
