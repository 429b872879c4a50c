"""Two losses of one forward, built in one method and backpropagated in another, with the
critic's step between the two backward calls and the generator's step after the second: the
generator's loss was built before the step, in another function, so there is nothing to build
again where it fails. The edit moves the critic's step after the generator's backward, which
then takes gradients only for the generator's weights (``inputs=``), so the critic's gradient
stays its own loss's; it is run before it is printed, and the fix trains as a program written by
hand that takes each player's gradient of its own loss with ``autograd.grad``. With the second
backward under a guard (``if generator_loss is not None:``), the step moves after the guard's
block."""

from __future__ import annotations

import pytest
import torch
from torch import nn
from torch.nn.functional import softplus

from command_runs import marked, recorded_runs, trains_as

NAME = "inplace_critic_stepped_between_two_losses.py"
GUARDED = "inplace_critic_stepped_before_a_guarded_backward.py"


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    return recorded_runs([NAME, GUARDED], tmp_path_factory.mktemp("pair"))


@pytest.fixture(scope="module")
def run(runs):
    return runs[NAME]


def test_the_step_moves_after_the_generator_backward(run):
    report = run["report"]
    assert report["verdict"] == "gone", run["text"][-1500:]
    step, fails = marked(NAME, "step"), marked(NAME, "fails")
    assert [(e["line"], e["new"]) for e in report["edits"]] == [
        (step, []),
        (fails, ['        generator_loss.backward(inputs=[p for group in self.g_opt.param_groups '
                 'for p in group["params"]])  # fails', "        self.c_opt.step()  # step"])]


def test_a_guarded_backward_gets_the_step_after_its_block(runs):
    run = runs[GUARDED]
    report = run["report"]
    assert report["verdict"] == "gone", run["text"][-1500:]
    step, guard = marked(GUARDED, "step"), marked(GUARDED, "guard")
    assert [(e["line"], e["new"]) for e in report["edits"]] == [
        (step, []),
        (guard + 1, ['            generator_loss.backward(inputs=[p for group in '
                     'self.g_opt.param_groups for p in group["params"]])  # fails',
                     "        self.c_opt.step()  # step"])]


def by_hand() -> dict:
    torch.manual_seed(0)
    generator = nn.Sequential(nn.Linear(4, 8), nn.Tanh(), nn.Linear(8, 6))
    critic = nn.Sequential(nn.Linear(6, 8), nn.Tanh(), nn.Linear(8, 1))
    for _ in range(3):
        real, noise = torch.randn(16, 6), torch.randn(16, 4)
        fake = generator(noise)
        critic_loss = softplus(critic(fake.detach())).mean() + softplus(-critic(real)).mean()
        generator_loss = softplus(-critic(fake)).mean()
        critic_grads = torch.autograd.grad(critic_loss, list(critic.parameters()))
        generator_grads = torch.autograd.grad(generator_loss, list(generator.parameters()))
        with torch.no_grad():
            for p, g in zip(critic.parameters(), critic_grads):
                p -= 0.05 * g
            for p, g in zip(generator.parameters(), generator_grads):
                p -= 0.05 * g
    return {"pair.generator.0.weight": generator[0].weight,
            "pair.generator.2.bias": generator[2].bias,
            "pair.critic.0.weight": critic[0].weight, "pair.critic.2.weight": critic[2].weight}


@pytest.mark.parametrize("name", [NAME, GUARDED])
def test_the_fix_trains_as_by_hand(runs, name, tmp_path):
    trains_as(name, runs[name]["report"], by_hand(), tmp_path)
