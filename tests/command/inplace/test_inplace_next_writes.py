"""The in-place error where the function writes in place two tensors that nodes saved (two
running sums grown with ``+=`` and each read by a product; a memory pair handed from step to
step as a list, unpacked and grown with ``+=``, where the first run already names the write):
the replay records, beside the write the error names, the writes of the graph's other saved
tensors that the backward would meet next (``next_writes``), and the edit that writes every one
of them anew trains as the program written out of place by hand; the edit of the first write
alone is not the fix."""

from __future__ import annotations

import pytest
import torch
from torch import nn
from torch.nn import functional as F

from command_runs import SCRIPTS, command_reports, trains_as

SUMS, MEMORY = "inplace_two_running_sums_each_saved.py", "inplace_memory_pair_grown_in_place.py"


def marked(name: str, mark: str) -> int:
    return next(n for n, line in enumerate((SCRIPTS / name).read_text().splitlines(), 1)
                if f"# {mark}:" in line)


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    return command_reports([SUMS, MEMORY], tmp_path_factory.mktemp("next"))


@pytest.mark.parametrize("name", [SUMS, MEMORY])
def test_the_replay_records_the_next_write(runs, name):
    recorded = runs[name]["report"]["recorded"]
    assert recorded["write"]["user"]["line"] == marked(name, "write")
    assert [w["line"] for w in recorded["next_writes"]] == [marked(name, "next write")]


def sums_by_hand() -> dict:
    torch.manual_seed(0)
    first, second = nn.Parameter(torch.ones(4)), nn.Parameter(torch.ones(4))
    head = nn.Linear(4, 1)
    opt = torch.optim.SGD([first, second, *head.parameters()], lr=0.05)
    for _ in range(2):
        series, target = torch.randn(5, 3, 4), torch.randn(3, 1)
        total = squares = None
        outputs = []
        for x in series:
            total = (total if total is not None else torch.zeros_like(x)) + x
            squares = (squares if squares is not None else torch.zeros_like(x)) + x * x
            outputs.append(head(first * total + second * squares))
        loss = F.mse_loss(torch.stack(outputs).mean(0), target)
        opt.zero_grad()
        loss.backward()
        opt.step()
    return {"moments.first": first, "moments.second": second, "head.weight": head.weight}


def memory_by_hand() -> dict:
    torch.manual_seed(0)
    key, value, query = (nn.Linear(6, 6) for _ in range(3))
    head = nn.Linear(6, 2)
    params = [p for m in (key, value, query, head) for p in m.parameters()]
    opt = torch.optim.Adam(params, lr=1e-2)
    for _ in range(2):
        tokens, labels = torch.randn(4, 3, 6), torch.randint(0, 2, (3,))
        seen = stored = torch.zeros(3, 6)
        reads = []
        for x in tokens:
            keys = torch.tanh(key(x))
            seen, stored = seen + keys, stored + keys * value(x)
            q = torch.sigmoid(query(x))
            reads.append(stored * q / (1.0 + seen * q))
        loss = F.cross_entropy(head(torch.stack(reads).mean(0)), labels)
        opt.zero_grad()
        loss.backward()
        opt.step()
    return {"reader.key.weight": key.weight, "reader.query.weight": query.weight,
            "head.weight": head.weight}


BY_HAND = {SUMS: sums_by_hand, MEMORY: memory_by_hand}


@pytest.mark.parametrize("name", [SUMS, MEMORY])
def test_the_edit_of_every_recorded_write_trains_as_written_by_hand(runs, name, tmp_path):
    report = runs[name]["report"]
    lines = {marked(name, "write"), marked(name, "next write")}
    whole = [edits for edits in report["alternatives"] if {e["line"] for e in edits} == lines]
    assert len(whole) == 1, report["alternatives"]
    trains_as(name, {"edits": whole[0]}, BY_HAND[name](), tmp_path)


@pytest.mark.parametrize("name", [SUMS, MEMORY])
def test_the_first_write_alone_still_fails(runs, name, tmp_path):
    """Why the second edit is needed: the first alone leaves the next write."""
    assert [e["line"] for e in runs[name]["report"]["edits"]] == [marked(name, "write")]
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        trains_as(name, runs[name]["report"], BY_HAND[name](), tmp_path)
