"""The edits the command prints for the programs of tests/scripts/e4_*.py, applied and run: the
weights they train to equal those of the same training written by hand without the mistake (the
references below, written independently: plain gradients and hand-written update steps, the
perturbed second pass by torch.func). Where an edit cannot do what it would say (a running value
stored detached that the forward returns, a generated batch detached where a gradient penalty
differentiates through it, a detach put before a line that already detaches the same name), the
command gives none, and says so."""

from __future__ import annotations

import contextlib
import io
import json
from pathlib import Path

import pytest
import torch
import torch.nn.functional as F
from torch import nn

from autograd_lens.__main__ import main
from command_runs import run_edited, value

SCRIPTS = Path(__file__).parent / "scripts"


def _sgd(params: list, grads: tuple, lr: float) -> None:
    with torch.no_grad():
        for p, g in zip(params, grads):
            p -= lr * g


def ref_perturbed() -> dict:
    """The gradient taken at the weights moved along the normalised first gradient, applied at
    the weights before the move (each tensor normalised on its own)."""
    torch.manual_seed(0)
    net = nn.Sequential(nn.Linear(3, 5), nn.Tanh(), nn.Linear(5, 2))
    inputs, labels = torch.randn(10, 3), torch.randint(0, 2, (10,))
    params = {k: v.detach() for k, v in net.named_parameters()}

    def loss(p):
        return F.cross_entropy(torch.func.functional_call(net, p, (inputs,)), labels)
    for _ in range(3):
        first = torch.func.grad(loss)(params)
        moved = {k: v + 0.05 * first[k] / (first[k].norm() + 1e-12) for k, v in params.items()}
        second = torch.func.grad(loss)(moved)
        params = {k: v - 0.1 * second[k] for k, v in params.items()}
    return {"net.0.weight": params["0.weight"], "net.2.weight": params["2.weight"],
            "net.2.bias": params["2.bias"]}


def ref_renamed() -> dict:
    """Two backward calls through one loss, the first of it halved: one and a half times its
    gradient, each step."""
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(4, 6), nn.ReLU(), nn.Linear(6, 1))
    pairs = [(torch.randn(5, 4), torch.randn(5, 1)) for _ in range(3)]
    params = list(model.parameters())
    for x, y in pairs:
        grads = torch.autograd.grad(((model(x) - y) ** 2).mean(), params)
        _sgd(params, tuple(1.5 * g for g in grads), 0.05)
    return {"model.0.weight": model[0].weight, "model.2.weight": model[2].weight}


def ref_weights() -> dict:
    """The sample weights computed once without a graph; the policy alone trained."""
    torch.manual_seed(0)
    policy = nn.Sequential(nn.Linear(3, 8), nn.Tanh(), nn.Linear(8, 2))
    baseline_net = nn.Linear(3, 1)
    states, choices = torch.randn(12, 3), torch.randint(0, 2, (12,))
    rewards = torch.rand(12)
    with torch.no_grad():
        weights = rewards - baseline_net(states).squeeze(1)
    params = list(policy.parameters())
    for _ in range(3):
        logp = torch.log_softmax(policy(states), 1)[torch.arange(12), choices]
        _sgd(params, torch.autograd.grad(-(weights * logp).mean(), params), 0.05)
    return {"policy.0.weight": policy[0].weight, "policy.2.weight": policy[2].weight,
            "baseline_net.weight": baseline_net.weight}


def ref_chunks() -> dict:
    """Truncated backpropagation through time over chunks of two steps: the state is cut once
    a chunk, and each chunk's backward goes through both of its steps."""
    torch.manual_seed(0)
    cell = nn.GRUCell(3, 4)
    sequence = torch.randn(6, 2, 3)
    params = list(cell.parameters())
    h = torch.zeros(2, 4)
    for chunk in sequence.split(2):
        h = h.detach()
        for x in chunk:
            h = cell(x, h)
        _sgd(params, torch.autograd.grad(h.pow(2).mean(), params), 0.1)
    return {"cell.weight_ih": cell.weight_ih, "cell.weight_hh": cell.weight_hh}


def ref_soft_targets() -> dict:
    """The teacher's soft targets computed without a graph, each round; the student alone
    trained."""
    torch.manual_seed(0)
    teacher = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 3))
    student = nn.Linear(4, 3)
    params = list(student.parameters())
    for _ in range(2):
        inputs = torch.randn(16, 4)
        with torch.no_grad():
            soft = torch.softmax(teacher(inputs) / 2.0, dim=1)
        for _ in range(3):
            loss = -(soft * torch.log_softmax(student(inputs), dim=1)).sum(1).mean()
            _sgd(params, torch.autograd.grad(loss, params), 0.1)
    return {"student.weight": student.weight, "student.bias": student.bias,
            "teacher.0.weight": teacher[0].weight}


REFERENCES = {"e4_entry_of_a_dict_before_epochs.py": ref_soft_targets,
              "e4_perturbed_second_pass.py": ref_perturbed,
              "e4_renamed_loss_backward_twice.py": ref_renamed,
              "e4_weights_before_epochs.py": ref_weights,
              "e4_state_read_in_time_loop.py": ref_chunks}
NO_EDIT = ["e4_potential_returned.py", "e4_penalty_on_mixed_batch.py",
           "e4_detach_branch_not_taken.py"]


def command(name: str, folder: Path) -> tuple[dict, str]:
    """The command's report on the program, and what it printed."""
    report, err = folder / "report.json", io.StringIO()
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(err):
        with contextlib.suppress(SystemExit):
            main(["--report", str(report), "--no-verify", str(SCRIPTS / name)])
    return json.loads(report.read_text()), err.getvalue()


def edited_runs(name: str, folder: Path) -> list[dict]:
    """The program with each edit the command printed (the first and every alternative)
    applied, run: their globals."""
    found, _ = command(name, folder)
    printed = [found["edits"]] + found["alternatives"]
    runs = []
    for number, edits in enumerate(printed):
        (folder / str(number)).mkdir()
        runs.append(run_edited(name, edits, folder / str(number)))
    return runs


@pytest.mark.parametrize("name", sorted(REFERENCES))
def test_the_edit_trains_as_the_reference(name, tmp_path):
    for space in edited_runs(name, tmp_path):  # each printed edit is checked
        for path, expected in REFERENCES[name]().items():
            torch.testing.assert_close(value(space, path).detach(), expected.detach(),
                                       rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("name", NO_EDIT)
def test_no_edit_where_the_edit_would_cut_a_graph_the_step_needs(name, tmp_path):
    found, err = command(name, tmp_path)
    assert found["carriers"] and found["pattern"] not in ("", "unknown")  # diagnosed all the same
    assert found["edits"] == [] and found["alternatives"] == []
    assert "no edit of your lines is suggested" in err and "The fix as an edit" not in err
