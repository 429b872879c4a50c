"""The scenario pages as a reader meets them, read from the notebooks' sources.

* **The fix first.** Every scenario notebook opens, right after its title and promise, with a
  fix box: a Markdown cell tagged ``fix-box`` holding a ``{admonition}`` of class ``fix-box``, the
  fix as a ``diff`` block, and ``{ref}`` links to the labelled sections that prove it (the same rule
  as every summary: each link leads to a section with an executed assert or a cell tagged
  ``raises-exception``). The browser test checks that the box is on the first screen.
"""

from __future__ import annotations

import re
from pathlib import Path

import nbformat
import pytest

import quiz_files
import quizzes
from test_summary_links import REF, SECTIONS, Item, problems_of
from places import REPOSITORY

ROOT = REPOSITORY
SCENARIOS = sorted((ROOT / "notebooks").glob("*.ipynb"))
FIX_BOX_TAG = "fix-box"
DIFF_BLOCK = re.compile(r"^```diff\n(.*?)^```", re.M | re.S)


# ----- the fix first -----

def fix_box_problems(nb, sections) -> list[str]:
    """What is wrong with a notebook's fix box ([] when nothing is)."""
    tagged = [i for i, c in enumerate(nb.cells) if FIX_BOX_TAG in c.metadata.get("tags", [])]
    if len(tagged) != 1:
        return [f"{len(tagged)} cells tagged {FIX_BOX_TAG!r} (one is wanted)"]
    index, source = tagged[0], nb.cells[tagged[0]].source
    problems = []
    if index != 1:
        problems.append(f"the fix box is cell {index}, not the one right after the title")
    if ":class: fix-box" not in source:
        problems.append("the box is not an admonition of class fix-box")
    diff = DIFF_BLOCK.search(source)
    changed = [l for l in diff.group(1).splitlines() if l[:1] in "+-"] if diff else []
    if not 1 <= len(changed) <= 6:
        problems.append(f"the fix is not a small diff ({len(changed)} changed lines)")
    problems += problems_of(Item("fix box", "", "", DIFF_BLOCK.sub("", source)), sections)
    return problems


@pytest.mark.parametrize("path", SCENARIOS, ids=[p.stem for p in SCENARIOS])
def test_every_scenario_opens_with_a_fix_box_linked_to_its_proof(path):
    problems = fix_box_problems(nbformat.read(path, as_version=4), SECTIONS)
    assert not problems, f"{path.name}: " + "; ".join(problems)


def test_the_fix_box_check_catches_a_missing_box_or_an_unproved_link():
    nb = nbformat.read(SCENARIOS[4], as_version=4)
    box = next(c for c in nb.cells if FIX_BOX_TAG in c.metadata.get("tags", []))
    assert fix_box_problems(nb, SECTIONS) == []
    original = box.source
    box.source = REF.sub("{ref}`no-such-label`", original)
    assert any("no such label" in p for p in fix_box_problems(nb, SECTIONS))
    box.source = REF.sub("", original)
    assert any("no {ref} link" in p for p in fix_box_problems(nb, SECTIONS))
    box.source = DIFF_BLOCK.sub("", original)
    assert any("small diff" in p for p in fix_box_problems(nb, SECTIONS))
    box.metadata["tags"] = []
    assert fix_box_problems(nb, SECTIONS) == [f"0 cells tagged {FIX_BOX_TAG!r} (one is wanted)"]


# ----- quizzes that test -----
# Each scenario's predict-then-run quiz (a cell tagged ``quiz`` calling ``display_quiz`` on the
# notebook's quiz file, scripts/quizzes.py). The order of the answers is fixed in the source (``shuffle_answers=False``), so
# the checks below, and the page, are the same on every run.

TAG = re.compile(r"<[^>]+>")
RAW_LABEL = re.compile(r"\blabels?\s*<code>|\b\d\d-[a-z0-9]+(?:-[a-z0-9]+)+\b")
# Words that give the outcome away when the sentence right above the question says them.
GIVES_AWAY = re.compile(r"\b(raises?|raised|fails?|failed|refuses|are gone|no error|trains)\b", re.I)
# Words that give the outcome away in the heading of the quiz's section ("The failure" right above
# a question asking what the next cell does; "Wrong fix: ..." above one asking whether it helps).
HEADING_GIVES_AWAY = re.compile(r"\b(fail\w*|errors?|raises?|raised|wrong fix\w*|no fix|works?|"
                                r"succeeds?|refuses|trains)\b", re.I)
MAX_LENGTH_RATIO = 2.0      # the longest option at most twice the shortest (visible text)


def visible(html: str) -> str:
    return " ".join(TAG.sub("", html).split())


def quiz_of(nb, folder: Path = ROOT / "notebooks"):
    """(the quiz cell's index, its question dict, the shuffle flag) of a notebook's one quiz, the
    question read from the quiz file the cell names (``folder`` is the notebook's folder)."""
    (question,) = quiz_files.questions(nb, folder)
    return quizzes.quiz_cell_index(nb), question, quiz_files.shuffled(nb)


def sentence_above(nb, index: int) -> str:
    """The prose right above the quiz, headings and labels left out: the paragraphs of the first
    Markdown cell above it other than the 'Predict, then run' prompt ('' when code comes first)."""
    for cell in reversed(nb.cells[:index]):
        if cell.cell_type == "markdown" and not cell.source.startswith("**Predict, then run.**"):
            return visible(re.sub(r"^\(.*\)=$|^#+ .*$", "", cell.source, flags=re.M)).strip()
        if cell.cell_type == "code":
            return ""
    return ""


def heading_above(nb, index: int) -> str:
    """The title of the section the quiz sits in: the last heading above it ('' if none)."""
    for cell in reversed(nb.cells[:index]):
        if cell.cell_type == "markdown":
            titles = re.findall(r"^#+ (.*)$", cell.source, flags=re.M)
            if titles:
                return titles[-1]
    return ""


def quiz_problems(nb, quiz=None) -> list[str]:
    """What lets one quiz give its answer away, or leaves a wrong pick without the right answer.
    ``quiz`` is what ``quiz_of(nb)`` returns (the test of this check passes altered copies)."""
    index, question, shuffle = quiz or quiz_of(nb)
    answers = question["answers"]
    right = [a for a in answers if a["correct"]]
    problems = []
    if shuffle is not False:
        problems.append("answers shuffled at render time (the order must be fixed in the source)")
    if len(right) != 1:
        return problems + [f"{len(right)} right answers"]
    lengths = [len(visible(a["answer"])) for a in answers]
    if max(lengths) > MAX_LENGTH_RATIO * min(lengths):
        problems.append(f"options of very different lengths {lengths}")
    for a in answers:
        if RAW_LABEL.search(visible(a["feedback"])) or RAW_LABEL.search(a["feedback"]):
            problems.append(f"feedback shows a raw label: {visible(a['feedback'])[:80]!r}")
        if not a["correct"] and visible(right[0]["answer"]) not in visible(a["feedback"]):
            problems.append(f"the feedback of {visible(a['answer'])[:40]!r} does not say which answer is right")
    above = sentence_above(nb, index)
    if GIVES_AWAY.search(above):
        problems.append(f"the sentence above the question gives the outcome away: {above!r}")
    heading = heading_above(nb, index)
    if HEADING_GIVES_AWAY.search(heading):
        problems.append(f"the heading of the quiz's section gives the outcome away: {heading!r}")
    raising = [i for i, c in enumerate(nb.cells) if "raises-exception" in c.metadata.get("tags", [])]
    if raising and raising[0] < index:
        problems.append("the failure's output comes before the quiz")
    return problems


def right_positions(quizzes_found) -> list[int]:
    return [next(i for i, a in enumerate(q[1]["answers"]) if a["correct"]) for q in quizzes_found]


NOTEBOOKS = {p.stem: nbformat.read(p, as_version=4) for p in SCENARIOS}


@pytest.mark.parametrize("name", sorted(NOTEBOOKS))
def test_the_quiz_does_not_give_its_answer_away(name):
    problems = quiz_problems(NOTEBOOKS[name])
    assert not problems, f"{name}: " + "; ".join(problems)


def test_the_right_answer_moves_between_quizzes():
    check_positions([quiz_of(nb) for nb in NOTEBOOKS.values()])


def check_positions(quizzes_found):
    """``quizzes_found``: what ``quiz_of`` returns, for each notebook."""
    quizzes_found = list(quizzes_found)
    positions = right_positions(quizzes_found)
    assert len(set(positions)) > 1, f"every quiz has its right answer at position {positions[0] + 1}"
    longest = [max(range(len(a)), key=lambda i: len(visible(a[i]["answer"])))
               for a in (q[1]["answers"] for q in quizzes_found)]
    same = sum(p == l for p, l in zip(positions, longest))
    assert same <= len(positions) // 2, f"the right answer is the longest in {same} of {len(positions)} quizzes"


def test_the_quiz_checks_catch_a_quiz_that_gives_itself_away():
    import copy

    nb = nbformat.read(SCENARIOS[4], as_version=4)
    index, question, shuffle = quiz_of(nb)
    assert quiz_problems(nb) == []

    def altered(change, shuffle=False):
        changed = copy.deepcopy(question)
        change(changed["answers"])
        return quiz_problems(nb, (index, changed, shuffle))

    def raw_label(answers):
        wrong = next(a for a in answers if not a["correct"])
        wrong["feedback"] = 'See <a href="#x">it</a> (label <code>05-error-on-batch-2</code>).'

    def long_right(answers):
        right = next(a for a in answers if a["correct"])
        right["answer"] = right["answer"] * 3

    problems = altered(raw_label)
    assert any("raw label" in p for p in problems)
    assert any("does not say which answer is right" in p for p in problems)
    assert any("very different lengths" in p for p in altered(long_right))
    assert any("shuffled" in p for p in altered(lambda answers: None, shuffle=True))
    nb.cells.insert(index - 1, nbformat.v4.new_markdown_cell("## The failure\n\nRun the loop:"))
    assert [p for p in quiz_problems(nb, (index + 1, question, False)) if "gives" in p] == [
        "the heading of the quiz's section gives the outcome away: 'The failure'"]
    nb.cells[index - 1].source = "## Wrong fix: `h.clone()`\n\nBatch 1 trains. Batch 2 fails."
    problems = quiz_problems(nb, (index + 1, question, False))
    assert any("the sentence above the question gives the outcome away" in p for p in problems)
    assert any("the heading of the quiz's section gives the outcome away: 'Wrong fix" in p for p in problems)
    nb.cells.insert(0, nbformat.v4.new_code_cell("x", metadata={"tags": ["raises-exception"]}))
    assert any("comes before the quiz" in p for p in quiz_problems(nb, (index + 2, question, False)))


def test_the_position_check_catches_quizzes_that_all_put_the_answer_first():
    altered = [right_answer_first(quiz_of(nb)) for nb in NOTEBOOKS.values()]
    with pytest.raises(AssertionError, match="every quiz has its right answer at position 1"):
        check_positions(altered)


def right_answer_first(quiz):
    """A copy of a quiz (as ``quiz_of`` returns it) that lists its right answer first (as every quiz
    once did)."""
    import copy

    index, question, shuffle = copy.deepcopy(quiz)
    question["answers"].sort(key=lambda a: not a["correct"])
    return index, question, shuffle


# The promise at the top of each scenario ("**You will see** ...") must not answer the quiz below it:
# it says what the page shows, not what the failing call does.
PROMISE = re.compile(r"\*\*You will see\*\*(.*?)(?:\*Time to read|\Z)", re.S)
PROMISE_GIVES_AWAY = re.compile(r"\b(raises?|raised|fails|failed|refuses|no error|the real error|"
                                r"the error (?:on|when|in)|runs but|never fail)\b", re.I)


def promise_problems(nb) -> list[str]:
    found = PROMISE.search(nb.cells[0].source)
    if not found:
        return ["no '**You will see**' promise in the first cell"]
    promise = " ".join(found.group(1).split())
    return [f"the promise gives the outcome away ({m.group(0)!r}): {promise[:120]!r}"
            for m in PROMISE_GIVES_AWAY.finditer(promise)]


@pytest.mark.parametrize("name", sorted(NOTEBOOKS))
def test_the_promise_does_not_answer_the_quiz(name):
    problems = promise_problems(NOTEBOOKS[name])
    assert not problems, f"{name}: " + "; ".join(problems)


def test_the_promise_check_catches_what_05_and_12_once_said():
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_markdown_cell(
        "# RNN\n\n**The situation:** a chunked sequence. **You will see** the error on the second batch, "
        "the graph. *Time to read: 12 minutes.*")])
    assert promise_problems(nb) == [
        "the promise gives the outcome away ('the error on'): 'the error on the second batch, the graph.'"]
    nb.cells[0].source = "**You will see** the real error, the shared part of the graph."
    assert len(promise_problems(nb)) == 1
