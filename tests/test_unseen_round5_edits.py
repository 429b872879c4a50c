"""Edits and fix texts on programs of tests/scripts/e5_*.py, each failing on the command as it
was before them: a generator's code and its sample both read again after the critic's backward
went through the sample (the sample is named first, and detached in the critic's step); a
loss built from parts that a loop's header cut from the logits before a step (no edit: building
the logits again would change nothing); a weight rescaled in place inside its forward after it
was used (its own fix, which the tests run: the rescale after the step, or before the use); a
list that an object's own forward hooks fill, read by the method that runs the network, never
emptied (emptied at the top of that method)."""

from __future__ import annotations

import contextlib
import io
import runpy
from pathlib import Path

import pytest
import torch
from torch import nn
from torch.nn import functional as F

from autograd_lens.fixes.patterns import PATTERNS
from command_runs import entered, command_reports, trains_as, value
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


def test_a_carrier_read_in_a_loop_header_is_not_built_again_unread(reports):
    """The loss of each part comes from the loop's header, which read the old logits once:
    building the logits again before the backward would change nothing, so no edit is printed
    (the fix in words still says to build the loss after the step)."""
    found = reports["e5_inplace_one_forward_stepped_per_slice.py"]
    assert found["code"] == 1 and "Changed by: opt.step()  (" in found["text"], found["text"]
    assert found["report"]["edits"] == [], found["report"]["edits"]
    assert "build the loss" in found["report"]["fix"], found["report"]["fix"]


WEIGHT = "e5_weight_rows_unit_norm_in_forward.py"
RESCALE = "self.weight.div_(self.weight.norm(dim=1, keepdim=True))"


def test_a_weight_written_in_place_gets_its_own_fix_and_page(reports):
    """Out of place or into a copy would leave the weight as it was: the fix says where the
    rescale goes instead, and the page is the section that shows it."""
    found = reports[WEIGHT]["report"]
    assert found["pattern"] == "written_in_place" and found["edits"] == [], found
    assert found["fix"] == PATTERNS["written_in_place"].on_weight, found["fix"]
    assert "optimizer.step()" in found["fix"] and "out of place" not in found["fix"].split(";")[0]
    assert found["page"].endswith("/notebooks/08_retain_step_backward.html"), found["page"]
    section = Path(__file__).parent.parent / "notebooks" / "08_retain_step_backward.ipynb"
    assert "(08-weight-written-in-forward)=" in section.read_text()


def _moved(where: str) -> str:
    """The program with the rescale where the fix says: right after the step, or at the start
    of the forward, before the weight is used."""
    lines = (SCRIPTS / WEIGHT).read_text().splitlines()
    at = next(i for i, line in enumerate(lines) if RESCALE in line)
    del lines[at - 1:at + 1]  # the rescale and its ``with torch.no_grad():``
    if where == "after the step":
        step = next(i for i, line in enumerate(lines) if line.strip() == "opt.step()")
        lines[step + 1:step + 1] = ["    with torch.no_grad():",
                                    "        " + RESCALE.replace("self.", "head.")]
    else:
        use = next(i for i, line in enumerate(lines) if "scores = feats @" in line)
        lines[use:use] = ["        with torch.no_grad():", "            " + RESCALE]
    return "\n".join(lines) + "\n"


def ref_unit_rows(where: str) -> dict:
    """The same training by hand: plain tensors, autograd.grad, the SGD update and the row
    normalisation written out."""
    torch.manual_seed(0)
    body = nn.Sequential(nn.Linear(5, 7), nn.SiLU())
    weight = torch.randn(4, 7) * 0.3
    params = [p.detach().clone() for p in body.parameters()]
    for _ in range(3):
        x, labels = torch.randn(6, 5), torch.randint(4, (6,))
        if where == "before the use":
            weight = weight / weight.norm(dim=1, keepdim=True)
        w1, b1, w = params[0].requires_grad_(), params[1].requires_grad_(), \
            weight.requires_grad_()
        loss = F.cross_entropy(F.silu(x @ w1.t() + b1) @ w.t(), labels)
        grads = torch.autograd.grad(loss, [w1, b1, w])
        params = [(p - 0.1 * g).detach() for p, g in zip([w1, b1], grads[:2])]
        weight = (w - 0.1 * grads[2]).detach()
        if where == "after the step":
            weight = weight / weight.norm(dim=1, keepdim=True)
    return {"head.weight": weight, "body.0.weight": params[0]}


@pytest.mark.parametrize("where", ["after the step", "before the use"])
def test_the_weight_fix_trains_as_the_reference(where, tmp_path):
    program = tmp_path / WEIGHT
    program.write_text(_moved(where))
    with contextlib.redirect_stdout(io.StringIO()) as printed:
        space = runpy.run_path(str(program), run_name="__main__")
    assert "TRAINED" in printed.getvalue()
    for path, expected in ref_unit_rows(where).items():
        torch.testing.assert_close(value(space, path).detach(), expected, rtol=1e-5, atol=1e-6)
