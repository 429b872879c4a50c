"""A GAN that scores the generated batch once (``score = judge(fake)``) and builds both losses
from that score, the generator's update first: the critic's backward fails on the generator's
freed graph. Detaching the score would stop the critic's own gradient, and detaching the batch
where it is scored would stop the generator's: the fix scores the batch again, taken as data, in
the critic's loss alone (a shape read, ``zeros_like(score)``, stays). It trains as the program
fixed by hand."""

from __future__ import annotations

import pytest
import torch
from torch import nn
from torch.nn import functional as F

from command_runs import marked, recorded_runs, trains_as

NAME = "freed_gan_shared_score_generator_first.py"


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    return recorded_runs([NAME], tmp_path_factory.mktemp("shared_score"))[NAME]


def test_the_critics_loss_scores_the_batch_again_as_data(run):
    report = run["report"]
    assert report["verdict"] == "gone", run["text"][-1500:]
    assert report["page"].endswith("/12_gan_discriminator.html")
    assert [(e["line"], e["new"]) for e in report["edits"]] == [(marked(NAME, "judged"), [
        "        F.binary_cross_entropy_with_logits(judge(fake.detach()), "
        "torch.zeros_like(score))  # judged"])]


def by_hand() -> dict:
    torch.manual_seed(0)
    maker = nn.Sequential(nn.Linear(2, 12), nn.Tanh(), nn.Linear(12, 5))
    judge = nn.Sequential(nn.Linear(5, 12), nn.LeakyReLU(0.2), nn.Linear(12, 1))
    maker_opt = torch.optim.SGD(maker.parameters(), lr=0.05)
    judge_opt = torch.optim.SGD(judge.parameters(), lr=0.05)
    data = torch.randn(48, 5) + 1.0
    for start in range(0, 48, 12):
        real = data[start:start + 12]
        fake = maker(torch.randn(12, 2))
        maker_opt.zero_grad()
        F.binary_cross_entropy_with_logits(judge(fake), torch.ones(12, 1)).backward()
        maker_opt.step()
        judge_opt.zero_grad()
        loss = F.binary_cross_entropy_with_logits(judge(real), torch.ones(12, 1)) + \
            F.binary_cross_entropy_with_logits(judge(fake.detach()), torch.zeros(12, 1))
        loss.backward()
        judge_opt.step()
    return {"maker.0.weight": maker[0].weight, "judge.0.weight": judge[0].weight,
            "judge.2.bias": judge[2].bias}


def test_the_fix_trains_as_by_hand(run, tmp_path):
    trains_as(NAME, run["report"], by_hand(), tmp_path)
