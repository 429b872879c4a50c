"""Two losses of one forward, the second scaled in its backward's own statement: the recording
takes the failing call's loss to be the scaled loss (the product made in that statement only
scales it), so it is a second loss of the same forward, made before the first backward ran. The
carrier is the code the first loss took in, at the forward's statement that made it under that
name; a function's argument of the same name (the model's width) is never where it enters. The
edit sums the losses, and the program then trains as one written by hand."""

from __future__ import annotations

import pytest
import torch
from torch import nn
from torch.nn import functional as F

from command_runs import command_reports, marked, trains_as

NAME = "freed_second_loss_scaled_in_its_backward.py"


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    return command_reports([NAME], tmp_path_factory.mktemp("scaled"))[NAME]


def test_the_scaled_loss_is_a_second_loss_of_the_same_forward(run):
    report = run["report"]
    root = report["recorded"]["root"]
    assert root["built"]["user"]["line"] < marked(NAME, "fails") - 1, root
    assert root["went"] is False, root
    assert report["pattern"] == "shared_trunk", run["text"]
    assert report["page"].endswith("/notebooks/02_two_losses_one_forward.html"), run["text"]


def test_the_code_is_named_where_the_forward_made_it_never_at_the_width_argument(run):
    first = run["report"]["carriers"][0]
    assert (first["name"], first["line"], first["function"]) == \
        ("code", marked(NAME, "got"), "forward"), run["text"]
    assert (first.get("enters") or {}).get("function") != "__init__", first
    assert " in __init__" not in run["text"], run["text"]


def by_hand() -> dict:
    torch.manual_seed(0)
    mapping, generator, encoder, critic = (nn.Linear(4, 6), nn.Linear(6, 8), nn.Linear(8, 6),
                                           nn.Linear(8, 1))
    layers = [mapping, generator, encoder, critic]
    opt = torch.optim.Adam([p for layer in layers for p in layer.parameters()], lr=1e-2)
    for _ in range(3):
        code = mapping(torch.randn(5, 4))
        fake = torch.tanh(generator(code))
        rec_loss = F.mse_loss(encoder(fake), code)
        adv_loss = F.softplus(-critic(fake)).mean()
        opt.zero_grad()
        (adv_loss + rec_loss * 0.5).backward()
        opt.step()
    return {"model.mapping.weight": mapping.weight, "model.encoder.weight": encoder.weight,
            "model.critic.weight": critic.weight}


def test_the_summed_losses_train_as_by_hand(run, tmp_path):
    trains_as(NAME, run["report"], by_hand(), tmp_path)
