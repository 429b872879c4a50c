"""A line of an installed library is named by its path inside the package (as
``lightning/pytorch/core/module.py:1137``), not by its file's name alone, wherever the command
names a place; the program's own lines keep their file's name.

The library is a stand-in of a framework's shape (its module calls ``loss.backward()`` for the
program, as Lightning's ``manual_backward`` does), put in a temporary ``sys.path`` entry.
"""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from autograd_lens.source.places import place, shown_file

MODULE = '''\
import torch


class FakeModule(torch.nn.Module):
    def manual_backward(self, loss):
        loss.backward()
'''

TRAIN = '''\
import torch
from fakelight.pytorch.core.module import FakeModule


class Net(FakeModule):
    def __init__(self):
        super().__init__()
        self.lin = torch.nn.Linear(3, 1)


torch.manual_seed(0)
net = Net()
features = torch.tanh(net.lin.weight * torch.ones(4, 3))
for step in range(2):
    loss = (net.lin(features) ** 2).mean()
    net.manual_backward(loss)
'''


@pytest.fixture(scope="module")
def installed(tmp_path_factory):
    """The stand-in package in a temporary sys.path entry, and a program that uses it."""
    root = tmp_path_factory.mktemp("places")
    package = root / "site" / "fakelight" / "pytorch" / "core"
    package.mkdir(parents=True)
    for folder in (package, package.parent, package.parent.parent):
        (folder / "__init__.py").write_text("")
    (package / "module.py").write_text(MODULE)
    (root / "project").mkdir()
    (root / "project" / "train.py").write_text(TRAIN)
    return root


def test_the_earlier_backward_in_a_library_is_named_by_its_package_path(installed):
    env = dict(os.environ, PYTHONPATH=str(installed / "site"), OMP_NUM_THREADS="1")
    done = subprocess.run([sys.executable, "-m", "autograd_lens", "--no-verify", "train.py"],
                          cwd=installed / "project", env=env, capture_output=True, text=True,
                          timeout=300)
    assert done.returncode == 1, done.stderr
    carrier = next(line for line in done.stderr.splitlines() if line.startswith("  features  "))
    # Where it got the graph (the replay's recording), the library's backward by its package
    # path, and where it enters the step.
    assert carrier.startswith("  features  train.py:13 in <module>: "), carrier
    assert ("holds a graph that the backward at fakelight/pytorch/core/module.py:6 already went "
            "through") in carrier, carrier
    assert "enters this step's computation at train.py:15" in carrier, carrier
    assert "--- train.py\n+++ train.py (fixed)" in done.stderr
    assert " module.py:" not in done.stderr


def test_place_names_a_library_line_by_its_package_path(installed, monkeypatch):
    module = installed / "site" / "fakelight" / "pytorch" / "core" / "module.py"
    monkeypatch.syspath_prepend(str(installed / "site"))
    monkeypatch.chdir(installed / "project")
    assert place(str(module), 6) == "fakelight/pytorch/core/module.py:6"
    assert place(str(installed / "project" / "train.py"), 13) == "train.py:13"


def test_a_file_of_the_standard_library_and_of_torch_by_their_package_paths():
    import json

    import torch.nn.modules.module as torch_module
    assert shown_file(json.__file__) == "json/__init__.py"
    assert shown_file(torch_module.__file__) == "torch/nn/modules/module.py"


def test_a_notebook_cell_without_a_shell_is_a_cell_not_a_file():
    assert place("/tmp/ipykernel_1234/2859123600.py", 3) == "a cell, line 3"
