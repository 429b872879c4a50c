"""The pattern, its fix text and its page follow what the evidence shows, on programs of
tests/scripts/c6_*.py that look at first like a hidden state carried from one batch into the next
(and must not be named so, nor given the truncated-backpropagation text): a judge's loss
backpropagated by a helper after the painter's backward in the same step (two networks, not a
state across batches), weights computed from the last batch's errors and kept (a kept value, not
a recurrence), weights stepped by a gradient taken with create_graph=True (an unrolled step: no
pattern of the catalogue fits, so the general text and the meta-learning page, no edit), a prefix
computed once when the model is built (its edit is not said to be truncated backpropagation
through time), and a list or dict read back by index or key (a store of values, not a buffer:
each entry kept without its graph, none emptied). Each edit printed, applied and run, trains as
the program written by hand with the fix.
"""

from __future__ import annotations


import pytest
import torch
from torch import nn

from command_runs import command_reports, run_edited, value
from places import TESTS

SCRIPTS = TESTS / "scripts"
PROGRAMS = sorted(p.name for p in SCRIPTS.glob("c6_*.py"))


@pytest.fixture(scope="module")
def reports(tmp_path_factory):
    return command_reports(PROGRAMS, tmp_path_factory.mktemp("c6"))


def page(report: dict) -> str:
    return report["page"].rsplit("/", 1)[-1].removesuffix(".html")


def test_every_program_is_misnamed_no_longer_as_a_hidden_state(reports):
    for name, found in reports.items():
        assert found["code"] == 1, found["text"]
        assert found["report"]["pattern"] != "hidden_state", (name, found["text"])
        assert "truncated backpropagation" not in found["text"], (name, found["text"])
        assert "05_rnn_hidden_state" not in found["report"]["page"], (name, found["text"])


def ref_critic() -> dict:
    """The painter trained by its own loss only; the judge by its loss on a detached batch."""
    torch.manual_seed(0)
    painter = nn.Sequential(nn.Linear(3, 8), nn.Tanh(), nn.Linear(8, 2))
    judge = nn.Sequential(nn.Linear(2, 8), nn.Tanh(), nn.Linear(8, 1))
    opt_p = torch.optim.SGD(painter.parameters(), lr=0.05)
    opt_j = torch.optim.SGD(judge.parameters(), lr=0.05)
    bce = nn.BCEWithLogitsLoss()
    for _ in range(3):
        noise, real = torch.randn(16, 3), torch.randn(16, 2) + 1.0
        painted = painter(noise)
        opt_p.zero_grad()
        grads = torch.autograd.grad(bce(judge(painted), torch.ones(16, 1)),
                                    list(painter.parameters()))
        for p, g in zip(painter.parameters(), grads):
            p.grad = g
        opt_p.step()
        fixed = painted.detach()
        opt_j.zero_grad()
        (bce(judge(real), torch.ones(16, 1)) + bce(judge(fixed), torch.zeros(16, 1))).backward()
        opt_j.step()
    return {"painter.0.weight": painter[0].weight, "judge.0.weight": judge[0].weight,
            "judge.2.weight": judge[2].weight}


def test_a_judge_step_run_by_a_helper_is_two_networks(reports, tmp_path):
    found = reports["c6_critic_step_in_helper.py"]
    assert found["report"]["pattern"] == "two_networks", found["text"]
    assert page(found["report"]) in ("12_gan_discriminator", "04_two_networks"), found["text"]
    space = run_edited("c6_critic_step_in_helper.py", found["report"]["edits"], tmp_path)
    for path, want in ref_critic().items():
        assert torch.allclose(value(space, path), want, atol=1e-6), path


def ref_scales() -> dict:
    """The scales computed from the last batch's errors as constants (under no_grad)."""
    torch.manual_seed(0)
    net = nn.Sequential(nn.Linear(4, 6), nn.ReLU(), nn.Linear(6, 3))
    opt = torch.optim.Adam(net.parameters(), lr=1e-2)
    batches = [(torch.randn(10, 4), torch.randn(10, 3)) for _ in range(4)]
    scales = torch.full((3,), 1.0)
    for inputs, targets in batches:
        errors = (net(inputs) - targets).abs()
        opt.zero_grad()
        (errors * scales).mean().backward()
        opt.step()
        with torch.no_grad():
            scales = errors.mean(0).softmax(0) * 3
            scales = scales / scales.mean()
    return {"net.0.weight": net[0].weight, "net.2.weight": net[2].weight, "scales": scales}


def test_weights_made_from_the_last_errors_are_a_kept_value(reports, tmp_path):
    found = reports["c6_weights_from_last_errors.py"]
    assert found["report"]["pattern"] == "kept_value", found["text"]
    assert page(found["report"]) == "10_detach", found["text"]
    space = run_edited("c6_weights_from_last_errors.py", found["report"]["edits"], tmp_path)
    for path, want in ref_scales().items():
        assert torch.allclose(value(space, path), want, atol=1e-6), path


def test_weights_stepped_by_a_gradient_get_the_general_text_and_no_edit(reports):
    found = reports["c6_unrolled_decay.py"]
    assert found["report"]["pattern"] == "unknown", found["text"]
    assert found["report"]["carriers"][0]["name"] == "weights", found["text"]
    assert page(found["report"]) == "20_meta_learning", found["text"]
    assert "no carrier named" not in found["text"], found["text"]
    assert found["report"]["edits"] == [], found["text"]


def test_a_prefix_made_once_is_not_said_to_be_truncated_backpropagation(reports):
    found = reports["c6_prefix_made_once.py"]
    # made once in __init__ and never assigned again: computed once, not updated with history
    assert found["report"]["pattern"] == "outside_loop", found["text"]
    assert page(found["report"]) == "13_tensor_outside_loop", found["text"]
    assert "truncated backpropagation" not in found["text"], found["text"]
    # Detached where forward reads it, the prefix's own network (seed, shape_prefix) would never
    # get a gradient again: the edit computes the prefix again where forward reads it instead.
    assert [(e["line"], e["new"]) for e in found["report"]["edits"]] == [(16, [
        "        tokens = torch.cat([torch.tanh(self.shape_prefix(self.seed)), x])"
        "  # carrier: self.prefix"])], found["text"]


def test_the_prefix_computed_again_trains_its_network(reports, tmp_path):
    torch.manual_seed(0)
    seed = nn.Parameter(torch.randn(2, 4))
    shape_prefix, head = nn.Linear(4, 4), nn.Linear(4, 1)
    opt = torch.optim.SGD([seed, *shape_prefix.parameters(), *head.parameters()], lr=0.1)
    for _ in range(3):
        x = torch.randn(5, 4)
        opt.zero_grad()
        head(torch.cat([torch.tanh(shape_prefix(seed)), x])).mean().pow(2).backward()
        opt.step()
    space = run_edited("c6_prefix_made_once.py", reports["c6_prefix_made_once.py"]["report"]
                       ["edits"], tmp_path)
    for path, want in {"model.seed": seed, "model.shape_prefix.weight": shape_prefix.weight}.items():
        torch.testing.assert_close(value(space, path).detach(), want.detach(), rtol=1e-5, atol=1e-6)


def ref_anchors() -> dict:
    """The anchors as constants: computed under no_grad, kept for the whole run."""
    torch.manual_seed(0)
    reference, student = nn.Linear(5, 4), nn.Linear(5, 4)
    prototypes = torch.randn(3, 5)
    with torch.no_grad():
        anchors = [reference(p) for p in prototypes]
    opt = torch.optim.SGD(student.parameters(), lr=0.1)
    data = [(torch.randn(6, 5), k % 3) for k in range(6)]
    for x, k in data:
        opt.zero_grad()
        (student(x) - anchors[k]).pow(2).mean().backward()
        opt.step()
    return {"student.weight": student.weight, "student.bias": student.bias}


def test_a_list_read_back_by_index_is_a_store_of_values_not_a_buffer(reports, tmp_path):
    """Emptying it (the buffer's fix) would lose the anchors the later steps read: the fix
    keeps each entry, without its graph."""
    found = reports["c6_cache_read_by_index.py"]
    assert found["report"]["pattern"] == "kept_value", found["text"]
    assert page(found["report"]) == "10_detach", found["text"]
    assert ".clear()" not in found["text"] and "del " not in found["text"], found["text"]
    space = run_edited("c6_cache_read_by_index.py", found["report"]["edits"], tmp_path)
    for path, want in ref_anchors().items():
        assert torch.allclose(value(space, path), want, atol=1e-6), path


def ref_last_epoch() -> dict:
    """Last epoch's predictions kept as constants: each stored without its graph."""
    torch.manual_seed(0)
    model = nn.Linear(6, 3)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    inputs, labels = torch.randn(8, 6), torch.randint(0, 3, (8,))
    kept = {}
    for epoch in range(2):
        for ids in torch.arange(8).split(4):
            probs = model(inputs[ids]).softmax(1)
            target = torch.nn.functional.one_hot(labels[ids], 3).float()
            if epoch > 0:
                target = 0.5 * target + 0.5 * torch.stack([kept[j] for j in ids.tolist()])
            opt.zero_grad()
            (-(target * probs.log()).sum(1).mean()).backward()
            opt.step()
            with torch.no_grad():
                kept.update(zip(ids.tolist(), probs.clone()))
    return {"model.weight": model.weight, "model.bias": model.bias}


def test_a_dict_read_back_in_a_comprehension_is_stored_detached(reports, tmp_path):
    """A detach before the statement would read a key the comprehension has not bound yet; the
    values are stored without their graph where the program puts them in, instead."""
    found = reports["c6_cache_read_in_comprehension.py"]
    assert found["report"]["pattern"] == "kept_value", found["text"]
    lines = [line for e in found["report"]["edits"] for line in e["new"]]
    assert lines and all("[j] =" in line for line in lines), found["text"]
    space = run_edited("c6_cache_read_in_comprehension.py", found["report"]["edits"], tmp_path)
    for path, want in ref_last_epoch().items():
        assert torch.allclose(value(space, path), want, atol=1e-6), path