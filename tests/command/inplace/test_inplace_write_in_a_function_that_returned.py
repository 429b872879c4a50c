"""The in-place error where the write sits in a function that has returned, on programs of
tests/scripts/u5_*.py: a module's forward that writes in place a tensor a layer read through a
view (``feats *= gate``), one that writes a tensor it returns after a product saved it
(``mixing.clamp_``), an activation module made with ``inplace=True`` applied to a tensor already
saved, a layer that clips its own weight in its forward, and weights pulled in place by a
function of another module of the program. The command names the tensor and the write's line
(``# write: NAME`` in each script), and an edit it prints, applied and run, trains as the program
written by hand without the write in place.

A weight written in place gets no such edit: out of place or into a copy would leave the weight
as it was. For a weight whose rows a forward rescales in place after using it
(tests/scripts/e5_weight_rows_unit_norm_in_forward.py) the fix says where the rescale goes
instead (after the step, or before the use), the page is the section that shows it, and the
program with the rescale moved either way trains as the same training written by hand.
"""

from __future__ import annotations

import contextlib
import io
import runpy
from pathlib import Path

import pytest
import torch
import torch.nn.functional as F
from torch import nn

from autograd_lens.fixes.patterns import PATTERNS
from command_runs import command_reports, trains_as, value
from script_marks import expectations
from places import REPOSITORY, TESTS

SCRIPTS = TESTS / "scripts"
PROGRAMS = sorted(p.name for p in SCRIPTS.glob("u5_*.py"))
WEIGHT = "e5_weight_rows_unit_norm_in_forward.py"
RESCALE = "self.weight.div_(self.weight.norm(dim=1, keepdim=True))"


@pytest.fixture(scope="module")
def reports(tmp_path_factory):
    return command_reports(PROGRAMS + [WEIGHT], tmp_path_factory.mktemp("u5"))


# A write in another module of the program: the file that holds it.
WRITTEN_IN = {"u5_weight_averaged_by_another_module.py": "slow_weights.py"}


@pytest.mark.parametrize("name", PROGRAMS)
def test_the_written_tensor_and_its_write_are_named(name, reports):
    source = SCRIPTS / WRITTEN_IN.get(name, name)
    want, found = expectations(source)["write"], reports[name]
    assert found["code"] == 1 and found["report"]["pattern"] == "written_in_place", found["text"]
    carriers = [(c["name"], Path(c["file"]).name, c["line"]) for c in found["report"]["carriers"]]
    assert carriers[:1] == [(want[0], source.name, want[1])], found["text"]
    written = source.read_text().splitlines()[want[1] - 1].split("#")[0].strip()
    assert f"Changed by: {written}  (" in found["text"], found["text"]


@pytest.mark.parametrize("name", ["u5_weight_clipped_in_its_forward.py",
                                  "u5_weight_averaged_by_another_module.py"])
def test_a_weight_written_in_place_gets_no_edit(name, reports):
    """Writing the weight out of place, or into a copy, would leave the weight as it was: no
    edit is printed, rather than one that trains a different model."""
    assert reports[name]["report"]["edits"] == [], reports[name]["report"]["edits"]


def ref_gate() -> dict:
    torch.manual_seed(0)
    embed, salience, tags = nn.Embedding(20, 6), nn.Linear(6, 1), nn.Linear(6, 3)
    params = [*embed.parameters(), *salience.parameters(), *tags.parameters()]
    opt = torch.optim.SGD(params, lr=0.1)
    for _ in range(3):
        tokens, labels = torch.randint(20, (4, 5)), torch.randint(3, (4, 5))
        feats = embed(tokens)
        feats = feats * torch.sigmoid(salience(feats))
        loss = F.cross_entropy(tags(feats).reshape(-1, 3), labels.reshape(-1))
        opt.zero_grad()
        loss.backward()
        opt.step()
    return {"model.embed.weight": embed.weight, "model.salience.weight": salience.weight}


def ref_mixture() -> dict:
    torch.manual_seed(0)
    router, experts = nn.Linear(4, 2), [nn.Linear(4, 3) for _ in range(2)]
    params = [*router.parameters()] + [p for e in experts for p in e.parameters()]
    opt = torch.optim.Adam(params, lr=1e-2)
    for _ in range(3):
        x, y = torch.randn(8, 4), torch.randn(8, 3)
        mixing = router(x).softmax(-1)
        mixed = (mixing.unsqueeze(1) @ torch.stack([e(x) for e in experts], 1)).squeeze(1)
        loss = F.mse_loss(mixed, y)
        opt.zero_grad()
        loss.backward()
        opt.step()
    return {"model.router.weight": router.weight, "model.experts.0.weight": experts[0].weight}


def ref_block() -> dict:
    torch.manual_seed(0)
    inp, skip, out = nn.Linear(5, 8), nn.Linear(8, 8), nn.Linear(8, 2)
    opt = torch.optim.SGD([*inp.parameters(), *skip.parameters(), *out.parameters()], lr=0.05)
    for _ in range(3):
        x, y = torch.randn(6, 5), torch.randn(6, 2)
        h = inp(x)
        loss = F.mse_loss(out(F.leaky_relu(h, 0.1) + skip(h)), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
    return {"block.inp.weight": inp.weight, "block.skip.weight": skip.weight}


EDITS = [("u5_inplace_gate_on_a_read_view.py", ref_gate),
         ("u5_inplace_clamp_of_returned_weights.py", ref_mixture),
         ("u5_inplace_activation_module_after_skip.py", ref_block)]


@pytest.mark.parametrize("name, reference", EDITS, ids=[n for n, _ in EDITS])
def test_the_edit_trains_as_the_reference(name, reference, reports, tmp_path):
    trains_as(name, reports[name]["report"], reference(), tmp_path)


def test_a_weight_written_in_place_gets_its_own_fix_and_page(reports):
    """Out of place or into a copy would leave the weight as it was: the fix says where the
    rescale goes instead, and the page is the section that shows it."""
    found = reports[WEIGHT]["report"]
    assert found["pattern"] == "written_in_place" and found["edits"] == [], found
    assert found["fix"] == PATTERNS["written_in_place"].on_weight, found["fix"]
    assert "optimizer.step()" in found["fix"] and "out of place" not in found["fix"].split(";")[0]
    assert found["page"].endswith("/notebooks/08_retain_step_backward.html"), found["page"]
    section = REPOSITORY / "notebooks" / "08_retain_step_backward.ipynb"
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
