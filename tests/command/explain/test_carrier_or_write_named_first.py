"""The carrier or the write the command names first, on programs of tests/scripts/u4_*.py: a bank
of features that a plain object reaches deeper than the model does, features handed to a loss
function after the backward that went through them, a weight written in place under no_grad
before the backward while the optimizer's step comes after it, an in-place op whose own output a
node had saved, a memory read inside reentrant checkpoints whose backward calls free it for each
other, and a forward that takes a gradient and returns a value computed from the graph that
gradient freed.

Each script says in comments what the command must name first (`# enters: NAME`, `# write:
NAME`, on that line). No step that had not run may be said to have changed a weight. An edit
the command prints, applied and run, must train as the same program written by hand without
the mistake (the references below).
"""

from __future__ import annotations

from pathlib import Path

import pytest
import torch
import torch.nn.functional as F
from torch import nn

from command_runs import entered, command_reports, run_edited, value
from script_marks import expectations
from places import TESTS

SCRIPTS = TESTS / "scripts"
PROGRAMS = sorted(p.name for p in SCRIPTS.glob("u4_*.py"))


@pytest.fixture(scope="module")
def reports(tmp_path_factory):
    return command_reports(PROGRAMS, tmp_path_factory.mktemp("u4"))


@pytest.mark.parametrize("name", PROGRAMS)
def test_the_carrier_or_the_write_comes_first(name, reports):
    want, found = expectations(SCRIPTS / name), reports[name]
    assert found["code"] == 1
    carriers = [entered(c) for c in found["report"]["carriers"]]
    assert want and carriers[:1] == [want.get("enters") or want["write"]], found["text"]


def test_a_step_that_has_not_run_is_never_named(reports):
    """The weight was clamped before the backward; the optimizer's step further down the loop
    had not run yet in the first iteration, where the program fails."""
    text = reports["u4_inplace_max_norm_before_backward.py"]["text"]
    assert "Changed by: w.mul_(" in text and "Changed by: opt.step()" not in text, text
    assert "steps the optimizer" not in text and "an earlier call" not in text, text


def ref_sigmoid() -> dict:
    torch.manual_seed(0)
    inp, out = nn.Linear(5, 7), nn.Linear(7, 5)
    opt = torch.optim.Adam(list(inp.parameters()) + list(out.parameters()), lr=1e-2)
    data = torch.randn(12, 5)
    for _ in range(3):
        gate = torch.exp(-inp(data).pow(2))
        loss = F.mse_loss(out(gate), data) + 1e-2 * torch.sigmoid(gate).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
    return {"model.inp.weight": inp.weight, "model.out.weight": out.weight}


def ref_moments() -> dict:
    """Both losses of the generator's step backwarded through the one forward: the graph
    kept for the second."""
    torch.manual_seed(0)
    gen = nn.Sequential(nn.Linear(3, 8), nn.Tanh(), nn.Linear(8, 5))
    body, head = nn.Sequential(nn.Linear(5, 6), nn.LeakyReLU(0.2)), nn.Linear(6, 1)
    opt_g = torch.optim.Adam(gen.parameters(), lr=1e-3)
    for _ in range(3):
        real = torch.randn(8, 5)
        feats = body(gen(torch.randn(8, 3)))
        logits = head(feats)
        opt_g.zero_grad()
        F.binary_cross_entropy_with_logits(logits, torch.ones_like(logits)).backward(
            retain_graph=True)
        with torch.no_grad():
            real_feats = body(real)
        (0.1 * (feats.mean(0) - real_feats.mean(0)).pow(2).sum()).backward()
        opt_g.step()
    return {"gen.0.weight": gen[0].weight, "gen.2.weight": gen[2].weight}


def ref_memory() -> dict:
    """The blocks checkpointed without the reentrant implementation: one backward through the
    reference pass, as without checkpoints."""
    from torch.utils.checkpoint import checkpoint
    torch.manual_seed(0)
    inp, reference = nn.Linear(4, 4), nn.Sequential(nn.Linear(4, 4), nn.Tanh())
    readers = [nn.Linear(4, 4) for _ in range(2)]
    params = [*inp.parameters(), *reference.parameters()] + [p for r in readers for p in r.parameters()]
    opt = torch.optim.SGD(params, lr=0.05)
    for _ in range(2):
        x, ref, y = torch.randn(3, 4), torch.randn(3, 4), torch.randn(3, 4)
        feats, h = reference(ref), inp(x)
        for i, reader in enumerate(readers):
            h = checkpoint(lambda v, r=reader, m=feats * (i + 1): torch.tanh(r(v) + m), h,
                           use_reentrant=False)
        loss = F.mse_loss(h, y)
        opt.zero_grad()
        loss.backward()
        opt.step()
    return {"net.reference.0.weight": reference[0].weight, "net.inp.weight": inp.weight}


def edited_run(name: str, report: dict, folder: Path) -> dict:
    return run_edited(name, report["edits"], folder)


EDITS = [
    pytest.param("u4_inplace_sigmoid_on_saved_output.py", ref_sigmoid, id="sigmoid"),
    # The detach the command prints here leaves the loss function's loss without a graph: a known
    # shortfall of the edit rules (the carrier is right), held strictly until they are fixed.
    pytest.param("u4_feature_loss_function_after_backward.py", ref_moments, id="moments",
                 marks=pytest.mark.xfail(strict=True, reason="the edit detaches the features")),
    # The detach of the memory runs clean but leaves the reference pass untrained.
    pytest.param("u4_memory_read_in_reentrant_checkpoint.py", ref_memory, id="memory",
                 marks=pytest.mark.xfail(strict=True, reason="the edit detaches the memory")),
]


@pytest.mark.parametrize("name, reference", EDITS)
def test_the_edit_trains_as_the_reference(name, reference, reports, tmp_path):
    space = edited_run(name, reports[name]["report"], tmp_path)
    for path, expected in reference().items():
        torch.testing.assert_close(value(space, path).detach(), expected.detach(),
                                   rtol=1e-5, atol=1e-6)
