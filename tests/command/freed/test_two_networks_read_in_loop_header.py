"""The two-networks rule where the second network's loss takes the first's output in a ``for``
loop's header (``for a, v in zip(actions, values):``): the output is read detached there, in
the header, and the program so edited runs and trains as the program fixed by hand (the
advantage taken against the critic's values as constants)."""

from __future__ import annotations

import torch
from torch import nn

from autograd_lens.explain.carrier import Carrier
from autograd_lens.source.edits import apply
from autograd_lens.fixes.rules import Case
from autograd_lens.fixes.detached_reads import detach_at_use

PROGRAM = '''import torch
from torch import nn

torch.manual_seed(0)
actor, critic = nn.Linear(4, 3), nn.Linear(4, 1)
actor_opt = torch.optim.SGD(actor.parameters(), lr=0.1)
critic_opt = torch.optim.SGD(critic.parameters(), lr=0.1)
for episode in range(3):
    states, returns = torch.randn(5, 4), torch.randn(5)
    dist = torch.distributions.Categorical(logits=actor(states))
    actions = dist.sample()
    values = critic(states).squeeze(-1)
    critic_opt.zero_grad()
    (values - returns).pow(2).mean().backward()
    critic_opt.step()
    terms = []
    for log_p, g, v in zip(dist.log_prob(actions), returns, values):
        terms.append(-log_p * (g - v))
    actor_opt.zero_grad()
    torch.stack(terms).sum().backward()
    actor_opt.step()
'''


def by_hand() -> tuple[torch.Tensor, torch.Tensor]:
    torch.manual_seed(0)
    actor, critic = nn.Linear(4, 3), nn.Linear(4, 1)
    actor_opt = torch.optim.SGD(actor.parameters(), lr=0.1)
    critic_opt = torch.optim.SGD(critic.parameters(), lr=0.1)
    for _ in range(3):
        states, returns = torch.randn(5, 4), torch.randn(5)
        dist = torch.distributions.Categorical(logits=actor(states))
        actions = dist.sample()
        values = critic(states).squeeze(-1)
        critic_opt.zero_grad()
        (values - returns).pow(2).mean().backward()
        critic_opt.step()
        actor_opt.zero_grad()
        (-dist.log_prob(actions) * (returns - values.detach())).sum().backward()
        actor_opt.step()
    return actor.weight.detach(), critic.weight.detach()


def test_the_output_is_detached_in_the_loop_header_and_trains_as_by_hand(tmp_path):
    path = tmp_path / "actor_critic.py"
    path.write_text(PROGRAM)
    line = PROGRAM.splitlines().index(
        "    for log_p, g, v in zip(dist.log_prob(actions), returns, values):") + 1
    carrier = Carrier(name="values", file=str(path), line=line, function="<module>", why="",
                      kind="old")
    fixes = detach_at_use(Case((carrier,), (str(path), line + 3)))
    assert fixes and [(e.line, list(e.new)) for e in fixes[0].edits] == [(line, [
        "    for log_p, g, v in zip(dist.log_prob(actions), returns, values.detach()):"])]
    space: dict = {}
    edited = "".join(apply(list(fixes[0].edits), PROGRAM.splitlines(keepends=True)))
    exec(compile(edited, str(path), "exec"), space)
    actor_weight, critic_weight = by_hand()
    torch.testing.assert_close(space["actor"].weight.detach(), actor_weight)
    torch.testing.assert_close(space["critic"].weight.detach(), critic_weight)
