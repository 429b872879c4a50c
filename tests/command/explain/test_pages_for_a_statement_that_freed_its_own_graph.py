"""An ``autograd.grad`` call that fails on a graph the same statement freed in an earlier pass
(a layer's cache of a value made from what the loop differentiates): the recording shows the
freeing call on the failing call's own line, so the pattern is state kept on the module, not "a
gradient taken without create_graph=True, then a loss through the same graph", which the first
run's reading of the last call alone suggests."""

from __future__ import annotations

import pytest

from command_runs import command_reports, marked

NAME = "freed_cached_weights_read_by_each_input_gradient.py"


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    return command_reports([NAME], tmp_path_factory.mktemp("cache"))[NAME]


def test_the_cache_is_named_and_the_page_is_the_module_states(run):
    report, text = run["report"], run["text"]
    freed = report["recorded"]["node"]["freed_by"]["user"]
    assert freed["line"] == report["recorded"]["at"]["line"] == marked(NAME, "fails"), freed
    assert report["carriers"][0]["name"] == "self.mix", report["carriers"]
    assert report["pattern"] == "module_state", text
    assert report["page"].endswith("/16_module_state_with_history.html"), text
    assert "without create_graph" not in text, text
