"""Fast weights that the network's adapt method sets on its layers, read by each layer's forward as
``self.weight``: no method of the layer made them, so the carrier is given at the script's line
that ran the adaptation, named as the script holds it there (``net.first.weight``), never as
``self.`` anything at the top level of a script, where no ``self`` exists."""

from __future__ import annotations

import pytest

from command_runs import command_reports, marked

NAME = "freed_fast_weights_set_by_the_parent.py"


@pytest.fixture(scope="module")
def report(tmp_path_factory):
    return command_reports([NAME], tmp_path_factory.mktemp("fast_weights"))[NAME]["report"]


def test_the_fast_weight_is_named_as_the_script_holds_it(report):
    first = report["carriers"][0]
    assert (first["name"], first["line"], first["function"]) == \
        ("net.first.weight", marked(NAME, "adapted"), "<module>"), report
    assert not any(c["name"].startswith("self.") and c["function"] == "<module>"
                   for c in report["carriers"]), report["carriers"]
