"""A value kept by a layer (``self.norm``) and read back in the branch ``if self.norm is not
None and ...:`` whose ``else`` computes it: the edit reads it there only under
``torch.no_grad()``, so each pass that records a graph computes it again, and the attack the
loop differentiates moves as in the program written by hand."""

from __future__ import annotations

import pytest
import torch

from command_runs import marked, recorded_runs, run_edited

NAME = "freed_cache_read_while_its_input_is_attacked.py"


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    return recorded_runs([NAME], tmp_path_factory.mktemp("cache"))[NAME]


def test_the_cache_is_read_only_without_grad_and_the_attack_moves_as_by_hand(run, tmp_path):
    report = run["report"]
    assert report["verdict"] == "gone", run["text"][-1500:]
    assert report["pattern"] == "module_state", run["text"]
    guard = marked(NAME, "reused") - 1
    assert [(e["line"], e["new"]) for e in report["edits"]] == [(guard, [
        "        if self.norm is not None and self.training and not torch.is_grad_enabled():"])]
    space = run_edited(NAME, report["edits"], tmp_path)
    torch.testing.assert_close(space["attack"].detach(), attack_by_hand(), rtol=1e-5, atol=1e-6)


def attack_by_hand() -> torch.Tensor:
    torch.manual_seed(0)
    lin = torch.nn.Linear(3, 2).requires_grad_(False)
    x, target = torch.randn(4, 3), torch.randn(4, 2)
    weights = torch.rand(4, 4) + 0.5
    attack = torch.zeros(4, 4, requires_grad=True)
    for _ in range(3):
        given = weights + attack
        loss = ((lin(given / given.sum(1, keepdim=True) @ x) - target) ** 2).mean()
        g, = torch.autograd.grad(loss, attack)
        with torch.no_grad():
            attack += 0.05 * g.sign()
    return attack.detach()
