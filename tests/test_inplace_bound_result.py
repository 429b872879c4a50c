"""The in-place error: an in-place method called on a value no name holds, whose result the
statement binds (``scores = torch.exp(h).t_()``), is named by that name: the method returns the
very tensor it wrote. The edit calls its out-of-place twin, and the program trains as one
written out of place by hand."""

from __future__ import annotations

import torch

from command_runs import command_reports, run_edited
from test_recorded_statements import marked

NAME = "inplace_method_result_bound_to_a_name.py"


def test_the_written_result_is_named_by_the_name_bound_to_it(tmp_path):
    y = torch.ones(2, 3)
    assert y.t_() is y  # an in-place method returns the tensor it wrote
    found = command_reports([NAME], tmp_path)[NAME]
    report = found["report"]
    first = report["carriers"][0]
    assert (first["name"], first["line"]) == ("scores", marked(NAME, "write"))
    write = report["recorded"]["write"]
    assert write["user"]["line"] == marked(NAME, "write") and write["names"] == []
    assert "ExpBackward0 saved `scores` (slot result)" in found["text"]
    assert [line.strip() for e in report["edits"] for line in e["new"]] == \
        ["scores = torch.exp(self.proj(x)).t()  # write"]
    space = run_edited(NAME, report["edits"], tmp_path)
    torch.manual_seed(0)
    proj = torch.nn.Linear(3, 4)
    for _ in range(2):
        loss = torch.exp(proj(torch.randn(5, 3))).t().sum(0).pow(2).mean()
        grads = torch.autograd.grad(loss, [proj.weight, proj.bias])
        with torch.no_grad():
            proj.weight -= 0.01 * grads[0]
            proj.bias -= 0.01 * grads[1]
    torch.testing.assert_close(space["model"].proj.weight.detach(), proj.weight.detach())
    torch.testing.assert_close(space["model"].proj.bias.detach(), proj.bias.detach())
