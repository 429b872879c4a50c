"""A gradient taken with create_graph=True keeps the graph, as torch documents (retain_graph
defaults to create_graph): a backward through the same graph after it runs, and so does a
backward of the gradient's own graph; the command, watching such a healthy program, adds nothing
to what it prints or to its exit code."""

from __future__ import annotations

import contextlib
import io

import torch

from autograd_lens.__main__ import main


HEALTHY = """import torch
x = torch.randn(4, 2, requires_grad=True)
y = torch.sin(x).sum()
(g,) = torch.autograd.grad(y, x, create_graph=True)
y.backward()
g.sum().backward()
print(bool(torch.allclose(x.grad, (torch.cos(x) - torch.sin(x)).detach())))
"""


def test_create_graph_keeps_the_graph_as_torch_documents(tmp_path):
    """retain_graph defaults to create_graph: after grad(..., create_graph=True) a backward
    through the same graph runs, and the command, watching, adds nothing to that healthy run."""
    x = torch.randn(4, 2, requires_grad=True)
    y = torch.sin(x).sum()
    (g,) = torch.autograd.grad(y, x, create_graph=True)
    y.backward()  # the graph was kept: no error
    torch.testing.assert_close(x.grad, torch.cos(x).detach())
    g.sum().backward()  # and the gradient's own graph too
    torch.testing.assert_close(x.grad, (torch.cos(x) - torch.sin(x)).detach())
    script = tmp_path / "healthy.py"
    script.write_text(HEALTHY)
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            code = main(["--no-verify", str(script)])
        except SystemExit as leaving:
            code = leaving.code
    assert (code or 0, out.getvalue(), err.getvalue()) == (0, "True\n", "")
