"""The page the command links follows the situation the evidence shows, not only the pattern
(tests/scripts/page_*.py): the same loss built again and backpropagated twice, a checkpointed
block's output scored twice, a critic trained several times on one batch of fakes, losses of one
forward walked over by a loop, a second loss built and backpropagated by a helper, an attribute
computed once in ``__init__``, a running mean of the losses backpropagated, values memoised by
key, blocks under a reentrant checkpoint that read a kept tensor, attention banks kept between
micro-steps.

Each script fails, and says in a comment which page the command must link: `# page: PAGE`,
on the line of the backward that fails. The JSON report's page and the printed "See:" line both
link it, and nothing printed claims an earlier call that did not happen.
"""

from __future__ import annotations

import re
from pathlib import Path
from types import SimpleNamespace

import pytest

from command_runs import command_reports
from autograd_lens.explain.pages import page_for
from autograd_lens.predict.verdict import Evidence
from places import TESTS

SCRIPTS = TESTS / "scripts"
PAGE_SCRIPTS = sorted(p.name for p in SCRIPTS.glob("page_*.py"))


def wanted(script: Path) -> tuple[str, int]:
    for number, line in enumerate(script.read_text().splitlines(), 1):
        match = re.search(r"# page: (\S+)", line)
        if match:
            return match.group(1), number
    raise AssertionError(f"{script.name} says no page")


@pytest.fixture(scope="module")
def reports(tmp_path_factory):
    return command_reports(PAGE_SCRIPTS, tmp_path_factory.mktemp("pages"))


@pytest.mark.parametrize("name", PAGE_SCRIPTS)
def test_the_page_is_the_situations(name, reports):
    page, line = wanted(SCRIPTS / name)
    found = reports[name]
    assert found["code"] == 1, found["text"]
    assert found["report"]["page"].endswith(f"/{page}.html"), found["text"]
    assert f"See: {found['report']['page']}\n" in found["text"], found["text"]
    assert re.search(rf"{re.escape(name)}\", line {line}\b", found["text"]), found["text"]


@pytest.mark.parametrize("name", PAGE_SCRIPTS)
def test_it_names_the_earlier_backward(name, reports):
    # Every script runs a backward (or a reentrant checkpoint runs one inside the backward) that
    # returns before the one that fails; a carrier listed says where that backward is.
    text = reports[name]["text"]
    assert "an earlier call already went through" in text
    if "Carried in by" in text:  # where it is, or that the failing backward ran it itself
        assert re.search(r"the backward at \S+:\d+ already went through|an earlier backward run "
                         r"inside this one \(by a checkpoint", text), text


def test_a_pattern_that_names_its_situation_keeps_its_own_page():
    """A pattern that says its situation itself (backward twice, a GAN's fake batch, the in-place
    error, ...) keeps its own page whatever the scene shows; a scene that shows nothing, or only
    a module's attribute holding a list the loss sums (no weights on the way), changes no page."""
    every = SimpleNamespace(outer_step=True, same_loss=True, from_collection=True, critic=True,
                            critic_step=True,
                            consumer=True, reentrant=True, made_once=True, kept_on_module=True,
                            self_built=True, memoised=True, after_inner_step=True)
    none = SimpleNamespace(**{fact: False for fact in vars(every)})
    for key in ("backward_twice", "accumulated_loss", "checkpoint", "custom_function",
                "grad_then_backward", "higher_order", "meta_learning", "gan_discriminator",
                "modified_in_place", "written_in_place"):
        assert page_for(key, Evidence(checkpointed=True), every) is None, key
    assert page_for("shared_trunk", Evidence(), none) is None
    kept = SimpleNamespace(**{**vars(none), "kept_on_module": True})
    assert page_for("growing_buffer", Evidence(), kept) is None  # a list the loss sums
