"""The node the in-place error reports, among several whose saved views of one tensor share its
version counter: the replay names the one whose saved tensor has the error's versions and size
(the last offsets' loss), not the first of the graph's order (the box loss, saved at version 0,
whose tensor the same writes also moved)."""

from __future__ import annotations

import re

import pytest

from command_runs import SCRIPTS, command_reports

NAME = "inplace_views_of_one_output_share_a_version.py"


def marked(mark: str) -> int:
    return next(n for n, line in enumerate((SCRIPTS / NAME).read_text().splitlines(), 1)
                if re.search(rf"#\s*{mark}\b", line))


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    return command_reports([NAME], tmp_path_factory.mktemp("reported"))[NAME]


def test_the_recorded_node_is_the_one_the_error_reports(run):
    recorded = run["report"]["recorded"]
    assert recorded["node"]["built"]["user"]["line"] == marked("built"), recorded["node"]
    assert recorded["write"]["user"]["line"] == marked("write"), recorded["write"]
    assert f"was built at {NAME}:{marked('built')} " in run["text"], run["text"]
    versions = re.search(r"is at version (\d+); expected version (\d+)", run["text"])
    assert f"at version {versions[2]}; it is at version {versions[1]} now" in run["text"]
