"""Edits that must run and train what the program meant, on programs of tests/scripts/w8_*.py:
for the in-place error, a write into the very tensor a node saved as its result (exp's rates
rescaled column by column in a loop; a softmax's masked entries turned into their complements),
fixed by a copy made before the writes (before the loop), not by copying the part read; an
in-place method called on a result no name holds (a sigmoid's result squeezed with squeeze_),
fixed by its out-of-place twin; and two += into one hidden state, each after a node saved it,
where the recorded write alone out of place still fails: the verified run prints the edit of
both writes as the fix and the edit of one as a failed attempt. For weights changed between two
backward calls of one forward: a trainer object's optimizer (an attribute, found by the step's
line) stepping between them, fixed by building the second loss again after the step with every
value it reads from the forward's outputs (a penalty too); and weights nudged in place by a
helper object's method between a retained backward and a second backward of the same loss (a
sharpness-aware step by hand), fixed by building the loss again right after the call of that
method.
Each edit, applied and run, gives the weights of an independent reference written here.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch
from torch import nn

import forked_command
from command_runs import command_reports, trains_as
from places import TESTS

SCRIPTS = TESTS / "scripts"
PROGRAMS = sorted(p.name for p in SCRIPTS.glob("w8_*.py"))


@pytest.fixture(scope="module")
def reports(tmp_path_factory):
    folder = tmp_path_factory.mktemp("w8")
    found = command_reports([n for n in PROGRAMS if n not in VERIFIED], folder)
    for name in VERIFIED:  # run with the edits verified, as the command does by default
        report = folder / f"{name}.json"
        code, _, text = forked_command.command(["--report", str(report), str(SCRIPTS / name)],
                                               Path.cwd())
        found[name] = {"code": code, "text": text, "report": json.loads(report.read_text())}
    return found


def ref_rates() -> dict:
    """The rescaled rates built out of place, one column at a time."""
    torch.manual_seed(0)
    lin = nn.Linear(6, 3)
    scale = torch.tensor([0.5, 2.0, 1.5])
    opt = torch.optim.SGD(lin.parameters(), lr=0.05)

    def head(x):
        return torch.stack([torch.exp(lin(x))[:, j] * scale[j] + 0.1 for j in range(3)], dim=1)

    for _ in range(3):
        x, counts = torch.randn(10, 6), torch.rand(10, 3) * 4
        loss = (head(x) - counts * torch.log(head(x))).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
    return {"head.lin.weight": lin.weight, "head.lin.bias": lin.bias}


def ref_complement() -> dict:
    """The complement taken with torch.where, out of place."""
    torch.manual_seed(0)
    net = nn.Sequential(nn.Linear(5, 8), nn.Tanh(), nn.Linear(8, 4))
    opt = torch.optim.SGD(net.parameters(), lr=0.1)
    for _ in range(3):
        x = torch.randn(12, 5)
        mask = torch.rand(12, 4) > 0.6
        soft = torch.softmax(net(x), dim=1)
        p = torch.where(mask, 1 - soft, soft)
        loss = -torch.log(p.clamp(min=1e-4)).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
    return {"net.0.weight": net[0].weight, "net.2.weight": net[2].weight}


def ref_gated() -> dict:
    torch.manual_seed(0)
    gate, value = nn.Linear(4, 1), nn.Linear(4, 3)
    opt = torch.optim.SGD(list(gate.parameters()) + list(value.parameters()), lr=0.1)
    for _ in range(3):
        x, y = torch.randn(9, 4), torch.randn(9, 3)
        loss = (value(x) * torch.sigmoid(gate(x)) - y).pow(2).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
    return {"model.gate.weight": gate.weight, "model.value.weight": value.weight}


def ref_residual() -> dict:
    torch.manual_seed(0)
    inp = nn.Linear(3, 6)
    ff1 = nn.Sequential(nn.Linear(6, 6), nn.Tanh())
    ff2 = nn.Sequential(nn.Linear(6, 6), nn.Tanh())
    out = nn.Linear(6, 2)
    params = [p for m in (inp, ff1, ff2, out) for p in m.parameters()]
    opt = torch.optim.SGD(params, lr=0.1)
    for _ in range(3):
        x, y = torch.randn(7, 3), torch.randn(7, 2)
        h = inp(x)
        h = h + ff1(h)
        loss = (out(h + 0.5 * ff2(h)) - y).pow(2).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
    return {"model.inp.weight": inp.weight, "model.ff1.0.weight": ff1[0].weight,
            "model.ff2.0.weight": ff2[0].weight, "model.out.weight": out.weight}


def ref_trainer() -> dict:
    """The second loss from a second forward after the first step; the first loss's gradients
    stay in .grad (no zero_grad between), as in the program."""
    torch.manual_seed(0)
    body, head, aux = nn.Linear(5, 6), nn.Linear(6, 2), nn.Linear(6, 1)
    params = [p for m in (body, head, aux) for p in m.parameters()]
    opt = torch.optim.SGD(params, lr=0.05)

    def losses(x, y):
        h = torch.tanh(body(x))
        fit = (head(h) - y).pow(2).mean()
        return fit, fit + 0.1 * aux(h).pow(2).mean()

    for _ in range(3):
        x, y = torch.randn(8, 5), torch.randn(8, 2)
        opt.zero_grad()
        losses(x, y)[0].backward()
        opt.step()
        losses(x, y)[1].backward()
        opt.step()
    return {"trainer.net.body.weight": body.weight, "trainer.net.head.weight": head.weight,
            "trainer.net.aux.weight": aux.weight}


def ref_nudged() -> dict:
    """The second gradient taken at the nudged weights, from a forward run there."""
    torch.manual_seed(0)
    net = nn.Sequential(nn.Linear(3, 5), nn.ReLU(), nn.Linear(5, 1))
    opt = torch.optim.SGD(net.parameters(), lr=0.1)
    params = list(net.parameters())
    for _ in range(3):
        x, y = torch.randn(6, 3), torch.randn(6, 1)
        grads = torch.autograd.grad((net(x) - y).pow(2).mean(), params)
        nudges = [0.05 * g.sign() for g in grads]
        with torch.no_grad():
            for p, d in zip(params, nudges):
                p.add_(d)
        opt.zero_grad()
        (net(x) - y).pow(2).mean().backward()
        with torch.no_grad():
            for p, d in zip(params, nudges):
                p.sub_(d)
        opt.step()
    return {"net.0.weight": net[0].weight, "net.2.weight": net[2].weight}


CASES = {
    "w8_rates_rescaled_per_column.py": ref_rates,
    "w8_softmax_masked_complement.py": ref_complement,
    "w8_gate_squeezed_in_place.py": ref_gated,
    "w8_residuals_added_in_place.py": ref_residual,
    "w8_trainer_two_losses_one_step_between.py": ref_trainer,
    "w8_weights_nudged_by_a_helper.py": ref_nudged,
}
VERIFIED = ("w8_residuals_added_in_place.py",)  # its first edit fails: the run decides


def test_every_program_has_its_reference():
    assert sorted(CASES) == PROGRAMS


@pytest.mark.parametrize("name", PROGRAMS)
def test_the_edit_trains_as_the_reference(name, reports, tmp_path):
    found = reports[name]
    assert found["code"] == 1, found["text"]
    assert found["report"]["pattern"] == ("modified_in_place" if "_step_" in name else
                                          "written_in_place"), found["text"]
    trains_as(name, found["report"], CASES[name](), tmp_path)


def test_the_copy_goes_before_the_loop(reports):
    edits = reports["w8_rates_rescaled_per_column.py"]["report"]["edits"]
    assert [(e["old"].strip(), [n.strip() for n in e["new"]]) for e in edits] == [
        ("for j in range(3):", ["rates = rates.clone()", "for j in range(3):"])]


def test_the_squeeze_is_made_out_of_place(reports):
    edits = reports["w8_gate_squeezed_in_place.py"]["report"]["edits"]
    assert [e["new"][0].split("#")[0].strip() for e in edits] == [
        "g = torch.sigmoid(self.gate(x)).squeeze(-1)"], edits


def test_both_additions_out_of_place_and_the_one_alone_a_failed_attempt(reports):
    found = reports["w8_residuals_added_in_place.py"]
    edits = found["report"]["edits"]
    assert [e["new"][0].strip() for e in edits] == [
        "h = h + self.ff1(h)", "h = h + (0.5 * self.ff2(h))"], found["text"]
    assert "this failed attempt is not to apply" in found["text"], found["text"]
