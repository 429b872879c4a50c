"""A short form keeps the conditions its proof states, where words can tell.

A page's title and description (``_ext/pages.yml``) shorten the whole page; every summary item
(the rows and bullets that ``test_summary_links.py`` collects) shortens the sections it links. Some
conditions change the truth of an outcome, and the proof names them in words a machine can find:
a proof that separates a ``fused=True`` optimizer from a plain one, plain SGD from momentum, one
layer from a hidden layer, a ``Linear`` layer on the data from a convolution (which saves its weight),
a checkpointed region from ordinary layers, one backward on summed losses from two, anomaly mode on
from the start of the run from anomaly mode for one step. When a short form states
such an outcome and its proof names the condition, the short form must name it too.

What this cannot check, and is left to reading: whether the short form names the condition the
right way round (it finds the word, not the sense); conditions the proof states in other words
(a value that "reaches backward" is not a vocabulary that can be listed); and a short form whose
proof does not mention the condition at all (then the proof, not the summary, is short).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import nbformat
import pytest
import yaml

from test_summary_links import ITEMS, REF, ROOT, SECTIONS


@dataclass(frozen=True)
class Condition:
    name: str
    outcome: str    # the short form states this kind of outcome ...
    stated: str     # ... its proof separates cases by this ...
    kept: str       # ... so the short form must say which case it means


CONDITIONS = [
    Condition("which optimizer implementation",
              outcome=r"\bstep\(\)|optimizer\.step|retain.{0,40}\bstep\b",
              stated=r"fused=True", kept=r"fused|non-fused|plain SGD"),
    Condition("an optimizer with state",
              outcome=r"same update|repeats? the (?:same )?update",
              stated=r"momentum", kept=r"momentum|plain SGD"),
    Condition("how deep the model is",
              outcome=r"stale gradient|the old gradient|at the old weights",
              stated=r"hidden layer|one layer|two-layer|two layers",
              kept=r"hidden layer|one layer|one-layer|two-layer|two layers|saved (?:a |the )?weight"),
    # A one-layer convolution saves its weight even on the data, so "one layer" alone is not it.
    Condition("which kind of layer",
              outcome=r"stale gradient|the old gradient|at the \*?old\*? weights",
              stated=r"convolution|Conv[123]d", kept=r"Linear|no node saved (?:a |the )?weight"),
    # Over a shared body, two backward calls still fail with the advantage detached: the fix is the
    # pair, one backward on the summed losses (or retain_graph on the first) and the detach.
    Condition("how many backward calls the actor-critic makes",
              outcome=r"detach(?:es|ed)? (?:the |each |its )?advantages?",
              stated=r"backward on the sum", kept=r"\bsum(?:med)?\b|one backward|retain"),
    # The nodes a freed-graph error stops at were built before the failing step: anomaly mode
    # names their lines only if it was on when they were built, from the start of the run.
    Condition("when anomaly mode must be on",
              outcome=r"anomaly[^.]{0,120}\bline", stated=r"from (?:the|its) start|start of the run",
              kept=r"from (?:the|its) start|start of the run|built (?:it|the node)|earlier step"),
]


@dataclass
class ShortForm:
    where: str
    text: str
    proof_text: str     # what it shortens: its page, or the sections it links


def page_text(page: str) -> str:
    path = ROOT / f"{page}.ipynb"
    if not path.is_file():
        path = ROOT / f"{page}.md"
    if path.suffix == ".md":
        return path.read_text()
    return "\n".join(cell.source for cell in nbformat.read(path, as_version=4).cells)


def page_short_forms() -> list[ShortForm]:
    pages = yaml.safe_load((ROOT / "_ext" / "pages.yml").read_text())
    return [ShortForm(f"_ext/pages.yml: {page}", f"{entry.get('title', '')} {entry.get('description', '')}",
                      page_text(page))
            for page, entry in pages.items() if (ROOT / f"{page}.ipynb").is_file()]


def item_short_forms() -> list[ShortForm]:
    return [ShortForm(f"{i.where}: {i.text[:60]!r}", i.text,
                      "\n".join(SECTIONS[a or b].text for a, b in REF.findall(i.text) if (a or b) in SECTIONS))
            for i in ITEMS]


SHORT_FORMS = page_short_forms() + item_short_forms()


def dropped_conditions(form: ShortForm) -> list[str]:
    """The conditions its proof names for an outcome the short form states without them."""
    proof_text = form.proof_text
    text = REF.sub(" ", form.text)      # the link texts are not the statement
    return [c.name for c in CONDITIONS
            if re.search(c.outcome, text, re.I) and re.search(c.stated, proof_text, re.I)
            and not re.search(c.kept, text, re.I)]


@pytest.mark.parametrize("form", SHORT_FORMS, ids=[f.where[:90] for f in SHORT_FORMS])
def test_short_form_keeps_the_conditions_of_its_proof(form):
    dropped = dropped_conditions(form)
    assert not dropped, (f"{form.where} states an outcome without saying {', '.join(dropped)}, "
                         "which its proof separates: name the case it holds for")


def test_the_check_catches_a_dropped_condition():
    """Short forms as they were before the last review fail here; their corrections pass."""
    proof = ("SGD(fused=True) runs; momentum 0.9 differs; a hidden layer fails; "
             "one layer gives the old gradient")
    wrong = [
        "retain_graph=True, step(), backward again: in-place error or stale gradient",
        "Copying gradients back and stepping again repeats the same update.",
        "`retain_graph=True` (with `step()`: the in-place error)",
        "reuse the old loss (stale gradient or in-place error)",
    ]
    for text in wrong:
        assert dropped_conditions(ShortForm("x", text, proof)), text
    right = "retain, step(), backward: a hidden layer and a non-fused step give the in-place error"
    assert dropped_conditions(ShortForm("x", right, proof)) == []
    # "One layer" was not the condition: a one-layer convolution saves its weight.
    conv_proof = "one Linear layer on the data: the old gradient; a one-layer Conv1d raises"
    one_layer = "with one layer, no error at all, and a silently stale gradient"
    assert dropped_conditions(ShortForm("x", one_layer, conv_proof)) == ["which kind of layer"]
    one_linear = "with one `Linear` layer on the data, no error at all, and a silently stale gradient"
    assert dropped_conditions(ShortForm("x", one_linear, conv_proof)) == []
    # Detaching the advantage alone leaves two backward calls through a shared body failing.
    sum_proof = "Fix: one backward on the sum, the advantage detached in the actor loss"
    for text in ("Clear buffers after each update; in actor-critic, detach the advantage.",
                 "drop every stored tensor that carries a graph, detach advantages"):
        assert dropped_conditions(ShortForm("x", text, sum_proof)) == [
            "how many backward calls the actor-critic makes"], text
    summed = "Actor-critic: one backward on the summed losses, advantage detached."
    assert dropped_conditions(ShortForm("x", summed, sum_proof)) == []
    # Anomaly mode for the failing step alone names no line: the old graph was built before it.
    anomaly_proof = "anomaly mode on from the start of the run; on for the failing step alone, no line"
    for text in ("run the failing step once under anomaly mode: diagnose prints the line",
                 "Run your script under python -m autograd_lens; anomaly mode shows the line."):
        assert dropped_conditions(ShortForm("x", text, anomaly_proof)) == ["when anomaly mode must be on"], text
    fixed = "anomaly mode on from the start adds its line"
    assert dropped_conditions(ShortForm("x", fixed, anomaly_proof)) == []
    # A proof that never separates the cases asks nothing of its short form.
    assert dropped_conditions(ShortForm("x", wrong[0], "the second backward fails")) == []
