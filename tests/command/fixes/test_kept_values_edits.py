"""Values kept from one pass before the loop: the edit that keeps the first carrier as a
constant keeps every other carrier that the same scope assigns only before the loop as one too
(detached alone, the first leaves the other's freed graph in every step). The edited program
trains as one written by hand with that pass under torch.no_grad()."""

from __future__ import annotations

import torch

from command_runs import command_reports, run_edited

NAME = "freed_two_values_kept_from_one_pass_before_the_loop.py"


def test_both_kept_values_are_detached_and_the_program_trains_as_by_hand(tmp_path):
    found = command_reports([NAME], tmp_path)[NAME]
    report = found["report"]
    assert [c["name"] for c in report["carriers"]][:2] == ["reference", "centred"]
    constant = [report["edits"]] + report["alternatives"]
    edits = next(e for e in constant if any("reference.detach()" in line
                                           for edit in e for line in edit["new"]))
    assert [line.strip() for edit in edits for line in edit["new"]] == [
        "reference, offset = scores_and_offset(data)", "reference = reference.detach()",
        "centred = value - offset", "centred = centred.detach()"]
    space = run_edited(NAME, edits, tmp_path)
    torch.manual_seed(0)
    net = torch.nn.Linear(5, 3)
    data, value = torch.randn(12, 5), torch.randn(12)
    with torch.no_grad():
        out = net(data)
        reference, centred = out.log_softmax(1), value - out.mean(1)
    for _ in range(2):
        for batch in torch.arange(12).split(4):
            ratio = (net(data[batch]).log_softmax(1) - reference[batch]).exp()
            loss = -(ratio.mean(1) * centred[batch]).mean()
            grads = torch.autograd.grad(loss, [net.weight, net.bias])
            with torch.no_grad():
                net.weight -= 0.1 * grads[0]
                net.bias -= 0.1 * grads[1]
    torch.testing.assert_close(space["net"].weight.detach(), net.weight.detach())
    torch.testing.assert_close(space["net"].bias.detach(), net.bias.detach())


STATE = "freed_state_beside_a_detached_input.py"


def test_a_detach_of_another_value_in_the_statement_does_not_stop_the_state_edit(tmp_path):
    """``state = cell(torch.cat([x, error.detach()], 1), state)``: the detach is of the error,
    not of the state; the state is detached before it, and the program trains as truncated
    backpropagation written by hand."""
    report = command_reports([STATE], tmp_path)[STATE]["report"]
    assert report["carriers"][0]["name"] == "state"
    assert [line.strip() for e in report["edits"] for line in e["new"]][:1] == \
        ["state = state.detach()"]
    space = run_edited(STATE, report["edits"], tmp_path)
    torch.manual_seed(0)
    cell, head = torch.nn.GRUCell(2, 3), torch.nn.Linear(3, 1)
    trained = list(cell.parameters()) + list(head.parameters())
    state, error = torch.zeros(1, 3), torch.zeros(1, 1)
    for _ in range(3):
        x = torch.randn(1, 1)
        state = cell(torch.cat([x, error], 1), state.detach())
        pred = head(state)
        grads = torch.autograd.grad((pred - x).pow(2).mean(), trained)
        error = (pred - x).detach()
        with torch.no_grad():
            for p, g in zip(trained, grads):
                p -= 0.1 * g
    for p, q in zip(trained, list(space["cell"].parameters()) + list(space["head"].parameters())):
        torch.testing.assert_close(q.detach(), p.detach())
