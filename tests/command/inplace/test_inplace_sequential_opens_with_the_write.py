"""A module made with ``inplace=True`` as the first of an ``nn.Sequential``, run on a view of
the output a node of the same operation saved (``nn.ReLU(inplace=True)`` on a transposed ReLU
output): the first run's reading of the source finds the statement that makes the module but no
name; the recorded write then gives the write as it ran, the tensor written (``z``) at the line
that ran the module, and the module (``self.head[0]``) that wrote it, never a nameless write
said to be at the line that makes the module. The edit turns the flag off where the module is
made, and the fix trains as the program written by hand."""

from __future__ import annotations

import pytest
import torch
from torch import nn

from command_runs import marked, recorded_runs, trains_as

NAME = "inplace_sequential_opens_with_the_write.py"


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    return recorded_runs([NAME], tmp_path_factory.mktemp("sequential"))[NAME]


def test_the_tensor_written_is_named_where_the_module_ran(run):
    first, line = run["report"]["carriers"][0], marked(NAME, "write")
    assert (first["name"], first["line"], first["function"]) == ("z", line, "forward"), first
    assert first["why"] == "is written in place here after ReluBackward0 saved it", first
    text = run["text"]
    made = marked(NAME, "made")
    assert (f"which runs `self.head[0]` (a ReLU made at {NAME}:{made}: `self.head = "
            "nn.Sequential(nn.ReLU(inplace=True), nn.Linear(8, 1))`), whose forward wrote it "
            "in place.") in text, text
    assert (first["made"]["line"], first["made"]["text"]) == (made, (
        "self.head = nn.Sequential(nn.ReLU(inplace=True), nn.Linear(8, 1))")), first
    assert f"`self.head[0]` (made at {NAME}:{made}), run at {NAME}:{line}, wrote in place" \
        in text, text
    assert f"changed in place at {NAME}:{marked(NAME, 'made')}" not in text, text


def test_the_edit_turns_the_flag_off_where_the_module_is_made(run):
    report = run["report"]
    assert report["verdict"] == "gone", run["text"][-1500:]
    assert [(e["line"], e["new"]) for e in report["edits"]] == [(marked(NAME, "made"), [
        "        self.head = nn.Sequential(nn.ReLU(inplace=False), nn.Linear(8, 1))  # made"])]


def by_hand() -> dict:
    torch.manual_seed(0)
    encode, head = nn.Conv1d(3, 8, 3, padding=1), nn.Linear(8, 1)
    optimizer = torch.optim.SGD([*encode.parameters(), *head.parameters()], lr=0.1)
    for _ in range(3):
        x, y = torch.randn(4, 3, 9), torch.randn(4)
        z = head(torch.relu(torch.relu(encode(x)).transpose(1, 2)))
        loss = ((z.mean(dim=(1, 2)) - y) ** 2).mean()
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    return {"model.encode.weight": encode.weight, "model.head.1.weight": head.weight}


def test_the_fix_trains_as_by_hand(run, tmp_path):
    trains_as(NAME, run["report"], by_hand(), tmp_path)
