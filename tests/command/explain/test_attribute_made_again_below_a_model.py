"""The recorded edit for an attribute made once (``explain.made_again.attribute_made_again``)
when the recording names it below a model (``model.kernel.scale``: a kernel module of a model,
whose constructor makes ``self.scale = self.log_scale.exp()`` once and whose ``forward`` reads
it): each read of ``self.scale`` in the class's other methods gets the expression again, as it
does for a name one level down (``net.scale``)."""

from __future__ import annotations

import textwrap

import pytest

from autograd_lens.explain.carrier import Carrier
from autograd_lens.explain.made_again import attribute_made_again

PROGRAM = textwrap.dedent('''\
    import torch
    from torch import nn


    class Kernel(nn.Module):
        def __init__(self):
            super().__init__()
            self.log_scale = nn.Parameter(torch.zeros(3))
            self.scale = self.log_scale.exp()

        def forward(self, a):
            return (a / self.scale).sum()


    class Model(nn.Module):
        def __init__(self):
            super().__init__()
            self.kernel = Kernel()

        def loss(self, a):
            return self.kernel(a)


    model = Model()
    for step in range(2):
        loss = model.loss(torch.ones(3))
        loss.backward()
    ''')


@pytest.mark.parametrize("name, holder", [("model.kernel.scale", "model.kernel.scale"),
                                          ("kernel.scale", "kernel.scale")])
def test_the_reads_in_the_owners_methods_compute_it_again(tmp_path, name, holder):
    path = tmp_path / "gp.py"
    path.write_text(PROGRAM)
    enters = PROGRAM.splitlines().index("    loss = model.loss(torch.ones(3))") + 1
    carrier = Carrier(name, str(path), enters, "<module>", "", "old")
    evidence = {"holders": [{"name": holder, "owner": "Kernel"}]}
    fixes = attribute_made_again(carrier, evidence)
    assert [(e.line, e.new) for f in fixes for e in f.edits] == [
        (12, ("        return (a / self.log_scale.exp()).sum()",))], fixes
