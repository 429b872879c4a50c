"""A write into a part of a tensor whose value reads the whole tensor (``p[:, i] = ... p @ c``):
a copy made just before the write is the tensor the product reads and saves, so the write still
changes it. The edit writes into a copy under a new name that then takes the old one; it is the
first edit, it holds when run, and the fix trains as a program written by hand without any
in-place write."""

from __future__ import annotations

import pytest
import torch

from command_runs import marked, recorded_runs, trains_as

NAME = "inplace_part_written_from_the_whole.py"


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    return recorded_runs([NAME], tmp_path_factory.mktemp("part"))[NAME]


def test_the_write_into_a_renamed_copy_holds(run):
    report = run["report"]
    assert report["verdict"] == "gone", run["text"][-1500:]
    write = marked(NAME, "write")
    assert [(e["line"], e["new"]) for e in report["edits"]] == [(write, [
        "            p_new = p.clone()",
        "            p_new[:, i] = inflow[:, i] + torch.tanh(p @ self.coupling[:, i])  # write",
        "            p = p_new"])]
    assert "the write goes into a copy under a new name" in run["text"]
    failed = run["text"].split("failed attempts are not to apply:")[1]
    assert "copy made just before it" in failed  # the plain copy was run, and failed


def by_hand() -> dict:
    torch.manual_seed(0)
    coupling = torch.nn.Parameter(torch.randn(4, 4) * 0.3)
    optimizer = torch.optim.SGD([coupling], lr=0.1)
    for _ in range(3):
        inflow, target = torch.randn(8, 4), torch.randn(8, 4)
        columns = list(inflow.unbind(1))
        for i in range(4):
            columns[i] = inflow[:, i] + torch.tanh(torch.stack(columns, 1) @ coupling[:, i])
        loss = (torch.stack(columns, 1) - target).pow(2).mean()
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    return {"chain.coupling": coupling}


def test_the_fix_trains_as_by_hand(run, tmp_path):
    trains_as(NAME, run["report"], by_hand(), tmp_path)
