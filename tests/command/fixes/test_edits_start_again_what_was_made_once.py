"""Two values made once and reused where each use needs a new graph, each edited so that it is
made again, run, and trained as the program written by hand:

* a total started before the first of two passes over a batch only (``total = torch.zeros(())``,
  then ``total += ...`` after ``total.backward()``): started again before the second pass;
* a block's scale computed once in its constructor from its own parameter, read in its forward
  inside a bigger model (the recording holds it as ``net.block.scale``): computed again where
  the forward reads it."""

from __future__ import annotations

import pytest
import torch
from torch import nn

from command_runs import marked, recorded_runs, trains_as

TOTAL = "accumulated_total_not_started_again.py"
SCALE = "freed_scale_made_in_a_blocks_constructor.py"


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    return recorded_runs([TOTAL, SCALE], tmp_path_factory.mktemp("again"))


def test_the_total_is_started_again_before_the_second_pass(runs, tmp_path):
    report = runs[TOTAL]["report"]
    assert report["verdict"] == "gone", runs[TOTAL]["text"][-1500:]
    assert report["carriers"][0]["name"] == "total", report["carriers"]
    assert report["carriers"][0]["line"] == marked(TOTAL, "enters")
    again = marked(TOTAL, "again")
    assert [(e["line"], e["new"]) for e in report["edits"]] == [(again, [
        "    total = torch.zeros(())", "    for k, head in enumerate(heads):  # again"])]
    trains_as(TOTAL, report, total_by_hand(), tmp_path)


def total_by_hand() -> dict:
    torch.manual_seed(0)
    trunk = nn.Linear(5, 8)
    heads = nn.ModuleList(nn.Linear(8, 1) for _ in range(3))
    params = list(trunk.parameters()) + list(heads.parameters())
    opt = torch.optim.SGD(params, lr=0.05)

    def total_loss(x, y):
        feats = trunk(x).tanh()
        return sum(((head(feats).squeeze(1) - y[:, k]) ** 2).mean()
                   for k, head in enumerate(heads))
    for _ in range(3):
        x, y = torch.randn(6, 5), torch.randn(6, 3)
        opt.zero_grad()
        total_loss(x, y).backward()
        with torch.no_grad():
            nudges = [0.01 * p.grad.sign() for p in params]
            for p, e in zip(params, nudges):
                p.add_(e)
        opt.zero_grad()
        total_loss(x, y).backward()
        with torch.no_grad():
            for p, e in zip(params, nudges):
                p.sub_(e)
        opt.step()
    return {"trunk.weight": trunk.weight, "heads.2.bias": heads[2].bias}


def test_the_scale_is_computed_again_where_the_forward_reads_it(runs, tmp_path):
    report, text = runs[SCALE]["report"], runs[SCALE]["text"]
    assert report["verdict"] == "gone", text[-1500:]
    first = report["carriers"][0]
    assert (first["name"], first["line"]) == ("self.scale", marked(SCALE, "made")), first
    assert "`net.block.scale`" in text, text  # the name that holds it, as recorded
    read = marked(SCALE, "read")
    assert [(e["line"], e["new"]) for e in report["edits"]] == [(read, [
        "        return self.lin(x) * self.log_scale.exp()  # read"])]
    trains_as(SCALE, report, scale_by_hand(), tmp_path)


def scale_by_hand() -> dict:
    torch.manual_seed(0)
    lin = nn.Linear(4, 4)
    log_scale = nn.Parameter(torch.zeros(4))
    out = nn.Linear(4, 1)
    opt = torch.optim.SGD([*lin.parameters(), log_scale, *out.parameters()], lr=0.1)
    for _ in range(3):
        x, y = torch.randn(8, 4), torch.randn(8, 1)
        loss = nn.functional.mse_loss(out(torch.tanh(lin(x) * log_scale.exp())), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
    return {"net.block.log_scale": log_scale, "net.block.lin.weight": lin.weight,
            "net.out.weight": out.weight}
