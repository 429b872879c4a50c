"""A second loss after an optimizer step reuses two carriers of the freed graph, one computed
from the other (``proposal``, then ``score = critic(proposal)``): the edit computes again, after
the step, the one it names and, first, the other carrier its statement reads, in the program's
order; computing only the score again would read the old proposal, which still holds the freed
graph. The edited program trains as the one written so by hand."""

from __future__ import annotations

import pytest
import torch

from command_runs import marked, recorded_runs, trains_as

NAME = "freed_score_and_sample_reused_after_critic_step.py"


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    return recorded_runs([NAME], tmp_path_factory.mktemp("critic"))[NAME]


def _by_hand() -> dict:
    torch.manual_seed(0)
    planner = torch.nn.Linear(4, 2)
    critic = torch.nn.Sequential(torch.nn.Linear(2, 8), torch.nn.Tanh(), torch.nn.Linear(8, 1))
    opt_planner = torch.optim.SGD(planner.parameters(), lr=0.05)
    opt_critic = torch.optim.SGD(critic.parameters(), lr=0.05)
    for _ in range(3):
        state, reward = torch.randn(16, 4), torch.randn(16, 1)
        score = critic(torch.tanh(planner(state)))
        opt_critic.zero_grad()
        (score - reward).pow(2).mean().backward()
        opt_critic.step()
        opt_planner.zero_grad()
        proposal = torch.tanh(planner(state))
        (-critic(proposal).mean() + 0.1 * proposal.pow(2).mean()).backward()
        opt_planner.step()
    return {"planner.weight": planner.weight, "critic.0.weight": critic[0].weight}


def test_both_carriers_are_named(run):
    names = [(c["name"], c["line"]) for c in run["report"]["carriers"][:2]]
    assert names == [("score", marked(NAME, "scored")), ("proposal", marked(NAME, "proposed"))], \
        run["text"]


def test_the_edit_computes_both_again_in_order_and_trains_as_by_hand(run, tmp_path):
    assert run["report"]["verdict"] == "gone", run["text"]
    edit = run["report"]["edits"][0]
    assert edit["line"] == marked(NAME, "reused") and [line.strip() for line in edit["new"]][:2] == \
        ["proposal = torch.tanh(planner(state))", "score = critic(proposal)"], edit
    trains_as(NAME, run["report"], _by_hand(), tmp_path)


def test_a_critic_whose_own_loss_takes_no_other_input_is_not_a_gan_s(run):
    """The critic's step goes through the planner's proposal, but its own loss scores nothing
    else (no real data through the same weights): the two losses' page, not the GAN's (see
    test_pages_read_from_the_calls.py)."""
    assert run["report"]["page"].endswith("/02_two_losses_one_forward.html"), run["text"]
