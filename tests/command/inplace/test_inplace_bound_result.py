"""The in-place error: an in-place method called on a value no name holds, whose result the
statement binds (``scores = torch.exp(h).t_()``), is named by that name: the method returns the
very tensor it wrote. The edit calls its out-of-place twin, and the program trains as one
written out of place by hand."""

from __future__ import annotations

import torch

from command_runs import command_reports, marked, run_edited

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


JITTER = "inplace_weight_jittered_by_a_helper_loop.py"


def test_a_weight_written_under_a_loop_variable_is_named_by_its_module_path(tmp_path):
    """``w.add_(...)`` in a loop over ``module.parameters()``: the weight the node saved is
    named as the program holds it, ``net[2].weight`` (the recording found the module's
    parameter with the written storage), not by the loop's ``w``."""
    found = command_reports([JITTER], tmp_path)[JITTER]
    report = found["report"]
    write = report["recorded"]["write"]
    assert write["names"] == ["w"] and write["weight"] is True
    assert write["parameter"] == "net.2.weight"
    first = report["carriers"][0]
    assert (first["name"], first["line"]) == ("net[2].weight", marked(JITTER, "write"))
    assert "saved a weight, `net[2].weight`" in found["text"]
    # True of torch: the last layer's product saved that weight (its input requires grad),
    # and the first layer's did not save its own (its input does not).
    net = torch.nn.Sequential(torch.nn.Linear(3, 4), torch.nn.Tanh(), torch.nn.Linear(4, 1))
    out = net(torch.randn(6, 3))
    with torch.no_grad():
        net[2].weight.add_(1.0)
    try:
        out.sum().backward()
    except RuntimeError as error:
        assert "[torch.FloatTensor [4, 1]]" in str(error)  # net[2].weight, as the product saved it
    else:
        raise AssertionError("the write of net[2].weight should have been caught")
    net = torch.nn.Sequential(torch.nn.Linear(3, 4), torch.nn.Tanh(), torch.nn.Linear(4, 1))
    out = net(torch.randn(6, 3))
    with torch.no_grad():
        net[0].weight.add_(1.0)
    out.sum().backward()  # net[0].weight was not saved: no error
