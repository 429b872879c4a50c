"""A distribution a policy builds once, in __init__, from its parameters: at the failure the
program holds the freed graph only through the distribution (``policy.dist``), whose tensors no
line of the program assigns. The command names the distribution first, then its tensor, reads the
situation as a value computed once and reused (the outside-the-loop page, not "updated with
history"), and each read builds the distribution again, the sampling method's as well, an
edit run before it is printed, training as a program written by hand that builds it in each
step."""

from __future__ import annotations

import pytest
import torch
from torch.distributions import Normal

from command_runs import entered, marked, recorded_runs, trains_as

NAME = "freed_distribution_made_in_init.py"


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    return recorded_runs([NAME], tmp_path_factory.mktemp("distribution"))[NAME]


def test_the_distribution_is_named_where_it_was_made_and_where_it_enters(run):
    first = run["report"]["carriers"][0]
    assert (first["name"], first["line"]) == ("self.dist", marked(NAME, "made")), run["text"]
    assert entered(first) == ("policy.dist", marked(NAME, "read")), run["text"]
    # then the cached tensor itself, where the graph sits
    assert run["report"]["carriers"][1]["name"] == "policy.dist.scale", run["text"]
    assert run["report"]["pattern"] == "outside_loop", run["text"]
    assert run["report"]["page"].endswith("13_tensor_outside_loop.html"), run["text"]


def test_every_read_builds_the_distribution_again(run):
    report = run["report"]
    assert report["verdict"] == "gone", run["text"][-2000:]
    assert [(e["line"], e["new"]) for e in report["edits"]] == [
        (marked(NAME, "made") + 4,
         ["            return Normal(self.mu, self.log_sigma.exp()).sample()"]),
        (marked(NAME, "read"),
         ["    loss = -reward * Normal(policy.mu, policy.log_sigma.exp())"
          ".log_prob(action).sum()  # read"])]


def by_hand() -> dict:
    torch.manual_seed(0)
    mu, log_sigma = torch.zeros(2, requires_grad=True), torch.zeros(2, requires_grad=True)
    optimizer = torch.optim.Adam([mu, log_sigma], lr=0.05)
    target = torch.tensor([1.0, -1.0])
    for _ in range(3):
        with torch.no_grad():
            action = Normal(mu, log_sigma.exp()).sample()
        reward = -((action - target) ** 2).sum()
        loss = -reward * Normal(mu, log_sigma.exp()).log_prob(action).sum()
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    return {"policy.mu": mu, "policy.log_sigma": log_sigma}


def test_the_fix_trains_as_by_hand(run, tmp_path):
    trains_as(NAME, run["report"], by_hand(), tmp_path)
