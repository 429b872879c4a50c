"""Edits and fix texts on programs of tests/scripts/e5_*.py, each failing on the command as it
was before them: a generator's code and its sample both read again after the critic's backward
went through the sample (the sample is named first, and detached in the critic's step)."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch
from torch import nn
from torch.nn import functional as F

from command_runs import command_reports, run_edited, value
from test_unseen_round4_carriers import expectations

SCRIPTS = Path(__file__).parent / "scripts"
ROUND5 = sorted(p.name for p in SCRIPTS.glob("e5_*.py"))
NAMED = [n for n in ROUND5 if "enters" in expectations(SCRIPTS / n)]


@pytest.fixture(scope="module")
def reports(tmp_path_factory):
    return command_reports(ROUND5, tmp_path_factory.mktemp("e5"))


@pytest.mark.parametrize("name", NAMED)
def test_the_carrier_comes_first(name, reports):
    want, found = expectations(SCRIPTS / name), reports[name]
    assert found["code"] == 1, found["text"]
    carriers = [(c["name"], c["line"]) for c in found["report"]["carriers"]]
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


EDITS = [("e5_gan_code_and_sample_both_reused.py", ref_code_and_sample)]


@pytest.mark.parametrize("name, reference", EDITS, ids=[n for n, _ in EDITS])
def test_the_edit_trains_as_the_reference(name, reference, reports, tmp_path):
    space = run_edited(name, reports[name]["report"]["edits"], tmp_path)
    for path, expected in reference().items():
        torch.testing.assert_close(value(space, path).detach(), expected.detach(),
                                   rtol=1e-5, atol=1e-6)


def test_a_carrier_read_in_a_loop_header_is_not_built_again_unread(reports):
    """The loss of each part comes from the loop's header, which read the old logits once:
    building the logits again before the backward would change nothing, so no edit is printed
    (the fix in words still says to build the loss after the step)."""
    found = reports["e5_inplace_one_forward_stepped_per_slice.py"]
    assert found["code"] == 1 and "Changed by: opt.step()  (" in found["text"], found["text"]
    assert found["report"]["edits"] == [], found["report"]["edits"]
    assert "build the loss" in found["report"]["fix"], found["report"]["fix"]
