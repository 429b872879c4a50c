"""Values read again after a backward went through them, on programs of tests/scripts/e5_*.py: a
generator's code and its sample both read again after the critic's backward went through the
sample (the sample is named first, and detached in the critic's step), and a list that an
object's own forward hooks fill, read by the method that runs the network, never emptied
(emptied at the top of that method). The command names the carrier first, on the line where it
enters (``# enters: NAME`` in each script), and its edit, applied and run, trains as the program
written by hand.
"""

from __future__ import annotations


import pytest
import torch
from torch import nn
from torch.nn import functional as F

from command_runs import entered, command_reports, trains_as
from script_marks import expectations
from places import TESTS

SCRIPTS = TESTS / "scripts"
PROGRAMS = ["e5_gan_code_and_sample_both_reused.py", "e5_hook_list_of_activations.py"]
NAMED = [n for n in PROGRAMS if "enters" in expectations(SCRIPTS / n)]


@pytest.fixture(scope="module")
def reports(tmp_path_factory):
    return command_reports(PROGRAMS, tmp_path_factory.mktemp("e5"))


@pytest.mark.parametrize("name", NAMED)
def test_the_carrier_comes_first(name, reports):
    want, found = expectations(SCRIPTS / name), reports[name]
    assert found["code"] == 1, found["text"]
    carriers = [entered(c) for c in found["report"]["carriers"]]
    assert carriers[:1] == [want["enters"]], found["text"]


def ref_code_and_sample() -> dict:
    """The critic scores the sample detached: its step trains the critic only."""
    torch.manual_seed(0)
    to_code = nn.Sequential(nn.Linear(3, 5), nn.Tanh())
    to_sample = nn.Linear(5, 4)
    critic = nn.Sequential(nn.Linear(4, 6), nn.ELU(), nn.Linear(6, 1))
    g_opt = torch.optim.SGD([*to_code.parameters(), *to_sample.parameters()], lr=0.05)
    c_opt = torch.optim.SGD(critic.parameters(), lr=0.05)
    real = torch.randn(40, 4) * 0.5 + 1.0
    for step in range(3):
        batch = real[step * 8:(step + 1) * 8]
        code = to_code(torch.randn(8, 3))
        sample = to_sample(code)
        c_opt.zero_grad()
        (critic(sample.detach()).mean() - critic(batch).mean()).backward()
        c_opt.step()
        g_opt.zero_grad()
        (-critic(sample).mean() + 0.01 * code.abs().mean()).backward()
        g_opt.step()
    return {"to_code.0.weight": to_code[0].weight, "to_sample.weight": to_sample.weight,
            "critic.0.weight": critic[0].weight}


def ref_activation_penalty() -> dict:
    """Each step's penalty over that step's activations only, the network written out."""
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(4, 9), nn.ReLU(), nn.Linear(9, 9), nn.ReLU(), nn.Linear(9, 3))
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    first, second, out = model[0], model[2], model[4]
    for _ in range(3):
        x, labels = torch.randn(10, 4), torch.randint(3, (10,))
        a1 = F.relu(F.linear(x, first.weight, first.bias))
        a2 = F.relu(F.linear(a1, second.weight, second.bias))
        logits = F.linear(a2, out.weight, out.bias)
        loss = F.cross_entropy(logits, labels) + 1e-3 * (a1.abs().mean() + a2.abs().mean())
        opt.zero_grad()
        loss.backward()
        opt.step()
    return {"model.0.weight": first.weight, "model.2.weight": second.weight}


EDITS = [("e5_gan_code_and_sample_both_reused.py", ref_code_and_sample),
         ("e5_hook_list_of_activations.py", ref_activation_penalty)]


@pytest.mark.parametrize("name, reference", EDITS, ids=[n for n, _ in EDITS])
def test_the_edit_trains_as_the_reference(name, reference, reports, tmp_path):
    trains_as(name, reports[name]["report"], reference(), tmp_path)
