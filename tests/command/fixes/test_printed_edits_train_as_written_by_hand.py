"""The edits the command prints, applied and run: the weights they train equal those of the same
training written by hand without the mistake (the references below, computed independently).

On the programs of tests/scripts/u3_*.py the references use out-of-place operations, a stacked
list instead of a filled buffer, each batch's own loss backwarded; the fix and every alternative
printed after "Or" each have their own reference. On the programs of tests/scripts/e4_*.py every
printed edit (the fix and each alternative) trains as one reference: plain gradients and
hand-written update steps, the perturbed second pass by torch.func.
"""

from __future__ import annotations

from pathlib import Path

import pytest
import torch
import torch.nn.functional as F
from torch import nn

from command_runs import command_reports, run_edited, value
from places import TESTS

SCRIPTS = TESTS / "scripts"


def ref_div() -> dict:
    torch.manual_seed(0)
    lin = nn.Linear(4, 3)
    xs, ys = torch.randn(6, 4), torch.rand(6)
    for _ in range(3):
        loss = (((torch.exp(lin(xs)) / 3.0).sum(1) - ys) ** 2).mean()
        grads = torch.autograd.grad(loss, list(lin.parameters()))
        with torch.no_grad():
            for p, g in zip(lin.parameters(), grads):
                p -= 0.05 * g
    return {"model.lin.weight": lin.weight, "model.lin.bias": lin.bias}


def ref_relu() -> dict:
    torch.manual_seed(0)
    enc, dec = nn.Linear(5, 6), nn.Linear(6, 2)
    opt = torch.optim.Adam(list(enc.parameters()) + list(dec.parameters()), lr=1e-2)
    data, target = torch.randn(8, 5), torch.randn(8, 2)
    for _ in range(3):
        loss = F.mse_loss(dec(F.relu(torch.tanh(enc(data)))), target)
        opt.zero_grad()
        loss.backward()
        opt.step()
    return {"enc.weight": enc.weight, "dec.weight": dec.weight, "enc.bias": enc.bias}


def ref_unroll() -> dict:
    torch.manual_seed(0)
    w = nn.Parameter(torch.randn(4, 4) * 0.3)
    x = torch.randn(3, 4)
    for _ in range(3):
        steps = [x]
        for _t in range(1, 5):
            steps.append(torch.tanh(steps[-1] @ w))
        loss = torch.stack(steps, 1).pow(2).mean()
        (g,) = torch.autograd.grad(loss, [w])
        with torch.no_grad():
            w -= 0.1 * g
    return {"model.w": w}


def ref_total() -> dict:
    torch.manual_seed(0)
    net = nn.Sequential(nn.Linear(3, 8), nn.Tanh(), nn.Linear(8, 1))
    batches = [(torch.randn(4, 3), torch.randn(4, 1)) for _ in range(5)]
    for _ in range(2):
        for steps, (x, y) in enumerate(batches, 1):
            loss = F.mse_loss(net(x), y) / steps  # the running mean's newest term
            grads = torch.autograd.grad(loss, list(net.parameters()))
            with torch.no_grad():
                for p, g in zip(net.parameters(), grads):
                    p -= 0.05 * g
    return {"net.0.weight": net[0].weight, "net.2.weight": net[2].weight}


def ref_whiten() -> dict:
    torch.manual_seed(0)
    first, last = nn.Linear(3, 5), nn.Linear(5, 1)
    data, target = torch.randn(12, 3), torch.randn(12, 1)
    mean, square = torch.zeros(5), torch.ones(5)
    for _ in range(3):
        h = first(data)
        with torch.no_grad():  # the statistics as constants, updated outside the graph
            mean, square = 0.9 * mean + 0.1 * h.mean(0), 0.9 * square + 0.1 * (h * h).mean(0)
        loss = F.mse_loss(last((h - mean) / (square - mean ** 2).clamp_min(1e-4).sqrt()), target)
        params = [*first.parameters(), *last.parameters()]
        grads = torch.autograd.grad(loss, params)
        with torch.no_grad():
            for p, g in zip(params, grads):
                p -= 0.05 * g
    return {"model.0.weight": first.weight, "model.2.weight": last.weight,
            "model.1.ema_sq": square}


def ref_second_pass(again: bool) -> dict:
    """The second pass reads the first output as data, or (``again``) a first output computed
    again from the weights as the step left them."""
    torch.manual_seed(0)
    net = nn.Sequential(nn.Linear(8, 8), nn.Tanh(), nn.Linear(8, 4))
    clean = torch.randn(6, 4)
    noisy = clean + 0.3 * torch.randn(6, 4)

    def descend(loss):
        grads = torch.autograd.grad(loss, list(net.parameters()))
        with torch.no_grad():
            for p, g in zip(net.parameters(), grads):
                p -= 0.05 * g
    for _ in range(3):
        coarse = net(torch.cat([noisy, torch.zeros_like(noisy)], 1))
        descend((coarse - clean).pow(2).mean())
        if again:
            coarse = net(torch.cat([noisy, torch.zeros_like(noisy)], 1))
        else:
            coarse = coarse.detach()
        descend((coarse + net(torch.cat([noisy, coarse], 1)) - clean).pow(2).mean())
    return {"net.0.weight": net[0].weight, "net.2.bias": net[2].bias}


def ref_cache() -> dict:
    torch.manual_seed(0)
    basis = torch.randn(4, 4) * 0.5
    head = nn.Linear(4, 1)
    x, y = torch.randn(8, 4), torch.randn(8, 1)
    proj = torch.tanh(basis)  # the cache: the head's gradients do not depend on its graph
    scale = proj.pow(2).sum(0) + 1.0
    for _ in range(3):
        loss = F.mse_loss(head(x @ proj / scale), y)
        grads = torch.autograd.grad(loss, list(head.parameters()))
        with torch.no_grad():
            for p, g in zip(head.parameters(), grads):
                p -= 0.05 * g
    return {"model.head.weight": head.weight, "model.head.bias": head.bias}


def ref_summary() -> dict:
    torch.manual_seed(0)
    enc = nn.Linear(5, 5)
    data, target = torch.randn(7, 5), torch.randn(7)
    summary = torch.zeros(5)
    for _ in range(3):
        h = torch.tanh(enc(data))
        summary = (0.8 * summary + 0.2 * h.mean(0)).detach()  # kept as a constant
        loss = F.mse_loss((h * summary).sum(1), target) + 0.1 * summary.abs().max()
        grads = torch.autograd.grad(loss, list(enc.parameters()))
        with torch.no_grad():
            for p, g in zip(enc.parameters(), grads):
                p -= 0.05 * g
    return {"model.enc.weight": enc.weight, "model.summary": summary}


def ref_lbfgs() -> dict:
    torch.manual_seed(0)
    log_t = nn.Parameter(torch.zeros(()))
    logits, labels = torch.randn(20, 3) * 3, torch.randint(0, 3, (20,))
    opt = torch.optim.LBFGS([log_t], lr=0.1, max_iter=5)

    def closure():  # the forward inside: every evaluation builds its own graph
        opt.zero_grad()
        nll = F.cross_entropy(logits / log_t.exp(), labels)
        nll.backward()
        return nll
    for _ in range(3):
        opt.step(closure)
    return {"scaler.log_t": log_t}


def ref_plain() -> dict:
    """Training with no gradient logged: what logging must leave unchanged."""
    torch.manual_seed(0)
    net = nn.Sequential(nn.Linear(4, 6), nn.ReLU(), nn.Linear(6, 1))
    x, y = torch.randn(10, 4), torch.randn(10, 1)
    for _ in range(3):
        grads = torch.autograd.grad(F.mse_loss(net(x), y), list(net.parameters()))
        with torch.no_grad():
            for p, g in zip(net.parameters(), grads):
                p -= 0.1 * g
    return {"net.0.weight": net[0].weight, "net.2.weight": net[2].weight}


def ref_penalty() -> dict:
    torch.manual_seed(0)
    net = nn.Sequential(nn.Linear(2, 10), nn.Softplus(), nn.Linear(10, 1))
    inputs, y = torch.randn(12, 2), torch.randn(12, 1)
    params = {k: v.detach() for k, v in net.named_parameters()}

    def loss(p):  # the data loss plus the penalty on the input gradient, by torch.func
        def out(x):
            return torch.func.functional_call(net, p, (x,))
        slope = torch.func.vmap(torch.func.jacrev(lambda row: out(row[None]).sum()))(inputs)
        return F.mse_loss(out(inputs), y) + 0.1 * slope.pow(2).mean()
    for _ in range(3):
        grads = torch.func.grad(loss)(params)
        params = {k: v - 0.05 * grads[k] for k, v in params.items()}
    return {"net.0.weight": params["0.weight"], "net.2.weight": params["2.weight"]}


def ref_per_key() -> dict:
    """Each speaker's state passed on as a value without its graph (a GRU cell's missing state
    is zeros), each turn's loss backwarded alone."""
    torch.manual_seed(0)
    speakers = ["ana", "ben"]
    cell, head = nn.GRUCell(2, 4), nn.Linear(4, 1)
    turns = {who: torch.randn(3, 5, 2) for who in speakers}
    params = list(cell.parameters()) + list(head.parameters())
    state = {who: torch.zeros(5, 4) for who in speakers}
    for turn in range(3):
        for who in speakers:
            out = cell(turns[who][turn], state[who])
            state[who] = out.detach()
            grads = torch.autograd.grad(head(out).pow(2).mean(), params)
            with torch.no_grad():
                for p, g in zip(params, grads):
                    p -= 0.1 * g
    return {"cell.weight_ih": cell.weight_ih, "cell.weight_hh": cell.weight_hh,
            "head.weight": head.weight}


ALTERNATIVES = {"u3_penalty_backward_after_loss_backward.py": [ref_penalty],
                "u3_grad_in_a_logging_helper.py": [ref_plain],
                "u3_second_pass_on_own_output.py": [lambda: ref_second_pass(True)],
                # the cache filled again whenever a graph is recorded, stored without its
                # graph where it is filled, or given None after each backward: the basis is
                # not stepped, so the head trains as with the cache detached, each time
                "u3_cache_filled_once_two_tensors.py": [ref_cache, ref_cache, ref_cache],
                # the write into a copy, with the part read copied too: the same numbers
                "u3_inplace_slice_write_in_loop.py": [ref_unroll]}


REFERENCES = {"u3_cache_filled_once_two_tensors.py": ref_cache,
              "u3_penalty_backward_after_loss_backward.py": ref_penalty,
              "u3_grad_in_a_logging_helper.py": ref_plain,
              "u3_lbfgs_forward_before_closure.py": ref_lbfgs,
              "u3_state_read_after_the_call.py": ref_summary,
              "u3_second_pass_on_own_output.py": lambda: ref_second_pass(False),
              "u3_two_running_buffers.py": ref_whiten,
              "u3_total_in_dict_entry.py": ref_total,
              "u3_inplace_div_in_returned_forward.py": ref_div,
              "u3_inplace_torch_relu_in_helper.py": ref_relu,
              "u3_inplace_slice_write_in_loop.py": ref_unroll,
              "u3_state_per_key_in_dict.py": ref_per_key}


_REPORTS: dict[str, dict] = {}  # the command run once on each program, for every test of it


def reported(name: str, folder: Path) -> dict:
    """The command's run on the program (see :func:`command_reports`), made once."""
    if name not in _REPORTS:
        (folder / "command").mkdir()
        _REPORTS[name] = command_reports([name], folder / "command")[name]
    return _REPORTS[name]


def edited_run(name: str, folder: Path, choice: int = 0) -> dict:
    """The program with the command's edit applied (``choice`` 0: the fix; 1, 2...: the
    alternatives it prints after "Or"), run: its globals."""
    found = reported(name, folder)["report"]
    fixes = [found["edits"]] + found["alternatives"]
    assert len(fixes) == len(ALTERNATIVES.get(name, ())) + 1, fixes  # each one is checked
    return run_edited(name, fixes[choice], folder)


@pytest.mark.parametrize("name", sorted(REFERENCES))
def test_the_edit_trains_as_the_out_of_place_reference(name, tmp_path):
    space = edited_run(name, tmp_path)
    for path, expected in REFERENCES[name]().items():
        torch.testing.assert_close(value(space, path).detach(), expected.detach(),
                                   rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("name", sorted(ALTERNATIVES))
def test_every_alternative_trains_as_its_reference(name, tmp_path):
    for choice, reference in enumerate(ALTERNATIVES[name], 1):
        space = edited_run(name, tmp_path, choice)
        for path, expected in reference().items():
            torch.testing.assert_close(value(space, path).detach(), expected.detach(),
                                       rtol=1e-5, atol=1e-6)


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
    """The teacher's soft targets computed without a graph, once per outer pass; the student
    alone trained."""
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


EVERY_EDIT = {"e4_entry_of_a_dict_before_epochs.py": ref_soft_targets,
              "e4_perturbed_second_pass.py": ref_perturbed,
              "e4_renamed_loss_backward_twice.py": ref_renamed,
              "e4_weights_before_epochs.py": ref_weights,
              "e4_state_read_in_time_loop.py": ref_chunks}


def edited_runs(name: str, folder: Path) -> list[dict]:
    """The program with each edit the command printed (the first and every alternative)
    applied, run: their globals."""
    found = reported(name, folder)["report"]
    printed = [found["edits"]] + found["alternatives"]
    runs = []
    for number, edits in enumerate(printed):
        (folder / str(number)).mkdir()
        runs.append(run_edited(name, edits, folder / str(number)))
    return runs


@pytest.mark.parametrize("name", sorted(EVERY_EDIT))
def test_the_edit_trains_as_the_reference(name, tmp_path):
    for space in edited_runs(name, tmp_path):  # each printed edit is checked
        for path, expected in EVERY_EDIT[name]().items():
            torch.testing.assert_close(value(space, path).detach(), expected.detach(),
                                       rtol=1e-5, atol=1e-6)
