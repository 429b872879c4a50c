"""Which earlier ``autograd.grad`` call went through a node: only one whose inputs the node leads
to. A gradient with respect to adapted copies does not reach a head made from the parameters
(see test_pages_read_from_the_calls.py); a gradient with respect to a function's local view,
gone when the failing backward runs, may have gone anywhere, and is still taken for the call
that freed the graph (forces taken inside a model's forward, then a loss on the energy)."""

from __future__ import annotations

import pytest
import torch
from torch import nn

from autograd_lens.run.watch import Watch


def _energy_and_forces(net: nn.Module, positions: torch.Tensor):
    xyz = positions[:, 1:]  # a view, local to this function
    energy = net(xyz).sum()
    forces, = torch.autograd.grad(energy, xyz)
    return energy, forces


def test_a_gradient_on_a_view_that_is_gone_still_explains_the_freed_energy():
    torch.manual_seed(0)
    net = nn.Sequential(nn.Linear(3, 4), nn.Tanh(), nn.Linear(4, 1))
    positions = torch.randn(5, 4, requires_grad=True)
    watch = Watch()
    with pytest.raises(RuntimeError, match="backward through the graph a second time"):
        with watch:
            energy, forces = _energy_and_forces(net, positions)
            (energy - forces.pow(2).sum()).backward()
    finding = watch.finding
    assert finding is not None and finding.pattern is not None
    assert finding.pattern.key in ("higher_order", "grad_then_backward"), finding.pattern.key
    assert "energy" in [c.name for c in finding.carriers[:2]], finding.carriers
