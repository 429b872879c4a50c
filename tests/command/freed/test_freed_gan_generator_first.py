"""A GAN whose round trains the generator first (several times) and the critic last, on the
last generated batch taken without a detach: the failing read is the critic's own, so the fix
detaches it there (the read that leads to the critic's optimizer step), not the generator's
read, and not a batch made again. The program reads that batch after the loop that assigns it,
so the edit, which reads the same name at the same line, is not left out as reading a name
unbound on some path. The fix trains as the program fixed by hand."""

from __future__ import annotations

import pytest
import torch
from torch import nn
from torch.nn import functional as F

from command_runs import marked, recorded_runs, trains_as

NAME = "freed_gan_generator_steps_first.py"


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    return recorded_runs([NAME], tmp_path_factory.mktemp("gan_first"))[NAME]


def test_the_critics_own_read_is_detached(run):
    report = run["report"]
    assert report["verdict"] == "gone", run["text"][-1500:]
    assert [(e["line"], e["new"]) for e in report["edits"]] == [(marked(NAME, "scores"), [
        "    critic_loss = F.softplus(-critic(real)).mean() + "
        "F.softplus(critic(fake.detach())).mean()  # scores"])]
    assert "left out" not in run["text"]


def by_hand() -> dict:
    torch.manual_seed(0)
    gen = nn.Sequential(nn.Linear(4, 16), nn.ReLU(), nn.Linear(16, 8), nn.Tanh())
    critic = nn.Sequential(nn.Linear(8, 16), nn.LeakyReLU(0.1), nn.Linear(16, 1))
    gen_opt = torch.optim.Adam(gen.parameters(), lr=1e-3)
    critic_opt = torch.optim.SGD(critic.parameters(), lr=0.02)
    real_data = torch.randn(64, 8)
    for start in range(0, 64, 16):
        real = real_data[start:start + 16]
        for _ in range(2):
            fake = gen(torch.randn(16, 4))
            gen_opt.zero_grad()
            F.softplus(-critic(fake)).mean().backward()
            gen_opt.step()
        critic_opt.zero_grad()
        (F.softplus(-critic(real)).mean() + F.softplus(critic(fake.detach())).mean()).backward()
        critic_opt.step()
    return {"gen.0.weight": gen[0].weight, "critic.0.weight": critic[0].weight}


def test_the_fix_trains_as_by_hand(run, tmp_path):
    trains_as(NAME, run["report"], by_hand(), tmp_path)
