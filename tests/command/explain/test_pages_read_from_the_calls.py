"""Pages read from what the earlier calls did, not only from the failing graph.

- A discriminator's own step (its loss scores real data and a generated batch that is not
  detached) goes through the generator; the generator's loss then reuses the score of that batch:
  the GAN page, although the generator's loss takes no discriminator weights of its own. A
  critic whose own loss takes no other input (a planner's critic, see
  test_freed_score_and_sample_reused_after_critic_step.py) keeps the two-losses page.
- A table computed once per epoch and taken through a network by every batch of the inner loop
  is a tensor computed outside the loop, not losses of one forward taken in turn.
- A gradient with respect to parameters frees what reaches them; the later gradients with
  respect to the adapted copies do not reach the head made from the prototypes, and are not
  taken for the call that freed it: an inner step of meta-learning, not a gradient penalty.

Each edit is run, and trains as the program written by hand.
"""

from __future__ import annotations

import pytest
import torch
from torch import nn
import torch.nn.functional as F

from command_runs import marked, recorded_runs, trains_as

GAN = "freed_discriminator_score_reused_by_generator.py"
TABLE = "freed_item_table_made_once_per_epoch.py"
META = "freed_head_init_from_prototypes_first_order.py"
PLANNER = "freed_score_and_sample_reused_after_critic_step.py"
PAGES = {GAN: "12_gan_discriminator", TABLE: "13_tensor_outside_loop", META: "20_meta_learning"}


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    return recorded_runs([GAN, TABLE, META], tmp_path_factory.mktemp("pages"))


@pytest.mark.parametrize("name", list(PAGES))
def test_the_page(runs, name):
    report = runs[name]["report"]
    assert report["page"].endswith(f"/{PAGES[name]}.html"), runs[name]["text"]
    assert report["verdict"] == "gone", runs[name]["text"]


def test_the_call_that_freed_the_head_is_the_first_gradient(runs):
    report = runs[META]["report"]
    freed = report["recorded"]["node"]["freed_by"]
    assert (freed["number"], freed["user"]["line"]) == (1, marked(META, "inner")), freed
    assert report["pattern"] == "meta_learning", runs[META]["text"]


def _gan_by_hand() -> dict:
    torch.manual_seed(0)
    upscaler = nn.Sequential(nn.Upsample(scale_factor=2), nn.Conv2d(1, 4, 3, padding=1),
                             nn.ReLU(), nn.Conv2d(4, 1, 3, padding=1))
    judge = nn.Sequential(nn.Conv2d(1, 4, 3, stride=2, padding=1), nn.LeakyReLU(0.2),
                          nn.Flatten(), nn.Linear(4 * 4 * 4, 1), nn.Sigmoid())
    opt_up = torch.optim.Adam(upscaler.parameters(), lr=1e-3)
    opt_judge = torch.optim.Adam(judge.parameters(), lr=1e-3)
    for _ in range(3):
        small, sharp = torch.rand(2, 1, 4, 4), torch.rand(2, 1, 8, 8)
        opt_judge.zero_grad()
        (1 - judge(sharp).mean() + judge(upscaler(small)).mean()).backward()
        opt_judge.step()
        opt_up.zero_grad()
        again = upscaler(small)
        ((again - sharp).pow(2).mean() + 1e-3 * (1 - judge(again).mean())).backward()
        opt_up.step()
    return {"upscaler.1.weight": upscaler[1].weight, "judge.3.weight": judge[3].weight}


def _table_by_hand() -> dict:
    torch.manual_seed(0)
    items, users = nn.Linear(6, 4), nn.Sequential(nn.Linear(4, 4), nn.Tanh())
    features = torch.randn(10, 6)
    batches = [(torch.randint(0, 10, (5, 3)), torch.rand(5, 10).round()) for _ in range(3)]
    opt = torch.optim.Adam([*items.parameters(), *users.parameters()], lr=1e-2)
    for _ in range(2):
        for seen, clicked in batches:
            table = items(features)
            logits = users(table[seen].mean(1)) @ table.T
            opt.zero_grad()
            F.binary_cross_entropy_with_logits(logits, clicked).backward()
            opt.step()
    return {"items.weight": items.weight, "users.0.weight": users[0].weight}


def _meta_by_hand() -> dict:
    torch.manual_seed(0)
    encoder, last = nn.Sequential(nn.Linear(5, 8), nn.ReLU()), nn.Linear(8, 8)
    meta_opt = torch.optim.Adam([*encoder.parameters(), *last.parameters()], lr=1e-3)
    for _ in range(2):
        support, labels = torch.randn(6, 5), torch.arange(3).repeat(2)
        query = torch.randn(6, 5)
        embedded = F.linear(encoder(support), last.weight, last.bias)
        centres = torch.stack([embedded[labels == c].mean(0) for c in range(3)])
        head_w, head_b = 2 * centres, -centres.pow(2).sum(1)
        fast = [last.weight, last.bias]
        for _ in range(3):  # the head's graph kept for the outer loss
            inner = F.cross_entropy(F.linear(F.linear(encoder(support), *fast), head_w, head_b),
                                    labels)
            grads = torch.autograd.grad(inner, fast, retain_graph=True)
            fast = [(p - 0.1 * g).detach().requires_grad_() for p, g in zip(fast, grads)]
        meta_opt.zero_grad()
        F.cross_entropy(F.linear(F.linear(encoder(query), *fast), head_w, head_b),
                        labels).backward()
        meta_opt.step()
    return {"encoder.0.weight": encoder[0].weight, "last.weight": last.weight}


@pytest.mark.parametrize("name, by_hand", [(GAN, _gan_by_hand), (TABLE, _table_by_hand),
                                           (META, _meta_by_hand)])
def test_the_edit_trains_as_by_hand(runs, name, by_hand, tmp_path):
    trains_as(name, runs[name]["report"], by_hand(), tmp_path)
