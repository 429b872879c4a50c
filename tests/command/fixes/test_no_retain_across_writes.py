"""No retain_graph=True across weights the program writes in place itself: between two
backward calls, a sharpness-aware step nudges the weights under torch.no_grad(), and the second
loss reuses the first pass's prediction. Keeping the first graph would meet the nudged weights
(the in-place error); the edit computes the prediction again at the nudged weights, and the
edited program trains as sharpness-aware minimization written by hand."""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

from command_runs import command_reports, run_edited, value

NAME = "carrier_weights_perturbed_between_backwards.py"


def reference() -> dict:
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(4, 6), nn.Tanh(), nn.Linear(6, 3))
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    for _ in range(3):
        x, y = torch.randn(10, 4), torch.randint(3, (10,))
        params = list(model.parameters())
        grads = torch.autograd.grad(F.cross_entropy(model(x), y), params)
        nudges = [0.05 * g / (g.norm() + 1e-12) for g in grads]
        with torch.no_grad():
            for p, n in zip(params, nudges):
                p.add_(n)
        sharp = torch.autograd.grad(F.cross_entropy(model(x), y), params)
        with torch.no_grad():
            for p, n in zip(params, nudges):
                p.sub_(n)
        for p, g in zip(params, sharp):
            p.grad = g
        opt.step()
    return {"model.0.weight": model[0].weight, "model.2.weight": model[2].weight}


def test_no_retain_across_the_nudge_and_the_recompute_trains_as_the_reference(tmp_path):
    found = command_reports([NAME], tmp_path)[NAME]
    assert found["code"] == 1, found["text"]
    new = [line.split("#")[0].strip() for edit in found["report"]["edits"] for line in edit["new"]]
    assert "retain_graph=True" not in " ".join(new + found["report"]["alternatives"]), new
    assert "scores = model(x)" in new, new
    space = run_edited(NAME, found["report"]["edits"], tmp_path)
    for path, expected in reference().items():
        torch.testing.assert_close(value(space, path).detach(), expected.detach(),
                                   rtol=1e-5, atol=1e-6)
