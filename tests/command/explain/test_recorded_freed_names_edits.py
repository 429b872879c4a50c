"""The freed-graph error's carriers ordered and named by the recording, and the edits that follow
from it (autograd_lens.explain.held_names, autograd_lens.explain.recorded_edits), on programs of tests/scripts:

* a loss helper whose autograd.grad call frees the loss it returns, added to terms computed
  before the helper ran (which the first run's reading ranked first): the helper's result,
  which the recording shows holding the freed node, is named first, and the terms that the
  recording shows holding no freed node are not named;
* an entry of a replay memory, or of a list on a module filled by another module: named by the
  list, at the statement that puts entries in;
* edits each run by the command before it is called the fix (verification on), then applied
  here, run, and its weights compared with the program fixed by hand: the fresh output of the
  same call read instead of the clean pass's; a module's running sum started from zero in each
  call; the earlier backward of the same loss left out; a list cleared only on optimizer steps
  also cleared after each backward.
"""

from __future__ import annotations

import ast
import random

import pytest
import torch
import torch.nn.functional as F
from torch import nn

from command_runs import commanded, marked, trains_as
from statements import unsupported
from places import TESTS

SCRIPTS = TESTS / "scripts"
NAMES = ["freed_grad_inside_a_loss_helper.py", "freed_replay_memory_of_graphs.py",
         "freed_attack_reads_the_clean_output.py", "freed_running_sum_on_a_module.py",
         "freed_callback_backward_again.py", "freed_bank_cleared_on_steps.py"]


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    base = tmp_path_factory.mktemp("held_names")
    found = commanded(NAMES, base)
    for name, run in found.items():
        assert run["code"] == 1, run["text"][-800:]
        wrong = unsupported(run["text"], run["report"])
        assert not wrong, f"{name}: statements the recording does not support: {wrong}"
    return found


def _verified(run: dict) -> dict:
    """The report of a run whose printed edit held when the command ran it."""
    report = run["report"]
    assert report["verdict"] == "gone" and report["edits"], run["text"][-1500:]
    return report


# --- names and order ----------------------------------------------------------------------------
def test_the_helper_result_that_holds_the_freed_node_is_named_first(runs):
    name = NAMES[0]
    report = runs[name]["report"]
    first = report["carriers"][0]
    assert (first["name"], first["line"]) == ("robust", marked(name, "carrier")), report["carriers"]
    holders = {h["name"]: h for h in report["recorded"]["holders"]}
    assert holders["robust"]["went"] is True  # the recording: the grad call went through it
    # the terms computed before it hold no freed node, as recorded: not said to carry it
    for term in ("plain", "gated", "imp"):
        assert term not in holders and term not in {c["name"] for c in report["carriers"]}
    freeing = report["recorded"]["node"]["freed_by"]["user"]["line"]
    assert freeing == marked(name, "freeing")


def _puts_into(name: str, line: int, container: str) -> bool:
    """Whether line ``line`` of script ``name`` appends to the list ``container``, written as
    that line writes it."""
    statement = ast.parse((SCRIPTS / name).read_text().splitlines()[line - 1].strip())
    return any(isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) and
               n.func.attr == "append" and ast.unparse(n.func.value) == container
               for n in ast.walk(statement))


@pytest.mark.parametrize("name, put, container, read", [
    ("freed_replay_memory_of_graphs.py", "self.memory", "self.memory", None),
    # named at the line that puts entries in as that line writes it; its entry as read
    ("freed_bank_cleared_on_steps.py", "reader.context", "self.context", "read")])
def test_an_entry_is_named_by_its_list_where_entries_are_put_in(runs, name, put, container, read):
    run = runs[name]
    first = run["report"]["carriers"][0]
    assert first["name"] == put, run["report"]["carriers"]
    assert first["line"] == marked(name, "put") and _puts_into(name, first["line"], put)
    entry = first["enters"]["name"]
    assert entry.startswith(container + "[")  # the entry as detail
    assert f"its entry `{entry}`" in first["why"] and f"its entry `{entry}`" in run["text"]
    if read:
        assert first["enters"]["line"] == marked(name, read)


# --- edits, run by the command, then here, against the programs fixed by hand ------------------
def _helper_by_hand() -> dict:
    torch.manual_seed(0)
    body, gate = nn.Linear(6, 6), nn.Linear(6, 6)
    opt = torch.optim.SGD(list(body.parameters()) + list(gate.parameters()), lr=0.1)
    for _ in range(3):
        x, y = torch.randn(8, 6), torch.randn(8, 6)
        imp = torch.sigmoid(gate(x))
        plain = F.mse_loss(body(x), y)
        gated = F.mse_loss(body(x) * (imp + (1 - imp) * torch.rand_like(imp)), y)
        mask = torch.rand(8, 6, requires_grad=True)
        for _ in range(2):
            moved, = torch.autograd.grad(F.mse_loss(body(x) * mask, y), mask)
            with torch.no_grad():
                mask += 0.1 * moved.sign()
        robust = F.mse_loss(body(x) * mask, y)
        torch.autograd.grad(robust, mask, retain_graph=True)
        total = plain + gated + 0.1 * robust + imp.mean()
        opt.zero_grad()
        total.backward()
        opt.step()
    return {"net.body.weight": body.weight, "net.body.bias": body.bias,
            "net.gate.weight": gate.weight, "net.gate.bias": gate.bias}


def _memory_by_hand() -> dict:
    torch.manual_seed(0)
    random.seed(0)
    net = nn.Sequential(nn.Linear(3, 8), nn.Tanh(), nn.Linear(8, 1))
    opt = torch.optim.SGD(net.parameters(), lr=0.05)
    memory = []
    for t in range(8):
        memory.append((net(torch.randn(3)), float(t % 2)))
        if len(memory) >= 3:
            sample = random.sample(memory, 3)
            loss = sum((v - r).pow(2).sum() for v, r in sample) / 3
            opt.zero_grad()
            loss.backward()
            memory.clear()
            opt.step()
    return {"critic.net.0.weight": net[0].weight, "critic.net.2.weight": net[2].weight}


def _attack_by_hand() -> dict:
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(5, 8), nn.Tanh(), nn.Linear(8, 3))
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    for _ in range(3):
        x, y = torch.randn(4, 5), torch.randint(0, 3, (4,))
        opt.zero_grad()
        F.cross_entropy(model(x), y).backward()
        for _ in range(2):
            with torch.no_grad():
                model[0].weight.add_(0.01 * torch.sign(model[0].weight.grad))
            F.cross_entropy(model(x), y).backward()
        opt.step()
    return {"model.0.weight": model[0].weight, "model.2.weight": model[2].weight,
            "model.2.bias": model[2].bias}


def _sum_by_hand() -> dict:
    torch.manual_seed(0)
    members = [nn.Linear(4, 2).requires_grad_(False) for _ in range(2)]
    probe = nn.Linear(4, 4)
    opt = torch.optim.SGD(probe.parameters(), lr=0.1)
    for step in range(3):
        h = probe(torch.randn(1, 4))
        average = (members[0](h) + members[1](h)) / 2
        loss = F.cross_entropy(average, torch.tensor([step % 2]))
        opt.zero_grad()
        loss.backward()
        opt.step()
    return {"probe.weight": probe.weight, "probe.bias": probe.bias}


def _callback_by_hand() -> dict:
    torch.manual_seed(0)
    model = nn.Linear(3, 1)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    for x, y in [(torch.randn(4, 3), torch.randn(4, 1)) for _ in range(3)]:
        F.mse_loss(model(x), y).backward()
        opt.step()
        opt.zero_grad()
    return {"trainer.model.weight": model.weight, "trainer.model.bias": model.bias}


def _bank_by_hand() -> dict:
    torch.manual_seed(0)
    writer, reader = nn.Linear(4, 4), nn.Linear(4, 4)
    opt = torch.optim.SGD(list(writer.parameters()) + list(reader.parameters()), lr=0.1)
    for step in range(4):
        feats = torch.tanh(writer(torch.randn(2, 4)))
        loss = reader(torch.cat([torch.randn(3, 4), feats])).pow(2).mean() / 2
        loss.backward()
        if step % 2 == 1:
            opt.step()
            opt.zero_grad()
    return {"writer.lin.weight": writer.weight, "reader.lin.weight": reader.weight,
            "reader.lin.bias": reader.bias}


@pytest.mark.parametrize("name, reference, expected", [
    ("freed_grad_inside_a_loss_helper.py", _helper_by_hand, None),
    ("freed_replay_memory_of_graphs.py", _memory_by_hand, None),
    ("freed_attack_reads_the_clean_output.py", _attack_by_hand,
     ("stale", "        loss_adv = F.cross_entropy(attacked, y)  # stale")),
    ("freed_running_sum_on_a_module.py", _sum_by_hand,
     ("accumulated", "            total = total + member(x)")),
    ("freed_callback_backward_again.py", _callback_by_hand, ("freeing", None)),
    ("freed_bank_cleared_on_steps.py", _bank_by_hand,
     ("freeing", ("    loss.backward()  # freeing", "    reader.forget()"))),
])
def test_the_edit_ran_clean_and_trains_as_the_program_fixed_by_hand(runs, name, reference,
                                                                     expected, tmp_path):
    report = _verified(runs[name])
    if expected is not None:
        mark, new = expected
        by_line = {e["line"]: e["new"] for e in report["edits"]}
        line = marked(name, mark)
        assert line in by_line, report["edits"]
        if new is None:
            assert by_line[line] == [], by_line  # the line left out
        elif isinstance(new, tuple):
            assert tuple(by_line[line]) == new, by_line
        else:
            assert new in by_line[line], by_line
    trains_as(name, report, reference(), tmp_path)


def test_the_callback_backward_is_recorded_as_the_same_loss(runs):
    """Why leaving the earlier backward out is offered there: it started from the very roots
    the failing call starts from (see test_recorded_freed_roots for another loss's)."""
    freed = runs["freed_callback_backward_again.py"]["report"]["recorded"]["node"]["freed_by"]
    assert freed["same_roots"] is True, freed
