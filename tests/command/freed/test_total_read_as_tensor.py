"""A running total of losses that the program reads back as a tensor (``running.item()`` in a
log line): the edit keeps it a tensor, without a graph (``loss.detach()``), so that the log line
still runs, rather than a number, which has no ``.item()``; the edited program trains as
backward on each micro-batch's loss, written by hand. (A total never read as a tensor becomes a
number: tests/scripts/carrier_total_scaled_backward.py, in test_edits.)"""

from __future__ import annotations


import torch
import torch.nn.functional as F
from torch import nn

from command_runs import command_reports, run_edited, value

NAME = "carrier_total_read_with_item.py"


def reference() -> dict:
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 1))
    opt = torch.optim.SGD(model.parameters(), lr=0.05)
    data, target = torch.randn(32, 4), torch.randn(32, 1)
    for _ in range(2):
        for i, (xb, yb) in enumerate(zip(data.split(8), target.split(8))):
            (F.mse_loss(model(xb), yb) / 2).backward()
            if i % 2 == 1:
                opt.step()
                opt.zero_grad()
    return {"model.0.weight": model[0].weight, "model.2.weight": model[2].weight}


def test_the_total_stays_a_tensor_and_the_edit_trains_as_the_reference(tmp_path):
    found = command_reports([NAME], tmp_path)[NAME]
    assert found["code"] == 1 and found["report"]["pattern"] == "accumulated_loss", found["text"]
    new = [line.split("#")[0].strip() for edit in found["report"]["edits"] for line in edit["new"]]
    assert "running = running + loss.detach()" in new and "loss.backward()" in new, new
    assert "is a tensor without a graph" in found["text"]
    space = run_edited(NAME, found["report"]["edits"], tmp_path)
    for path, expected in reference().items():
        torch.testing.assert_close(value(space, path).detach(), expected.detach(),
                                   rtol=1e-5, atol=1e-6)
