"""Every statement of a summary page proves itself, one link away.

The summary pages (the landing page, the guides and look-up pages, and the Remember list of every
notebook) restate what the notebooks show. Each of their behavioural rows and bullets must carry a
MyST ``{ref}`` link to a labelled section of an executed notebook whose code proves it. This test
finds those rows and bullets and fails when one has no ``{ref}``, when a label does not exist, or
when the labelled section (from the label to the next heading of the same or a higher level) holds
neither an executed code cell with an assertion (see ``ASSERTION``) nor a code cell tagged
``raises-exception``. Every ``{ref}`` of an item must lead to such a section.

What counts as a behavioural item:

* every body row of a Markdown table (not the header row, not the ``| --- |`` separator);
* every bullet (``-``) and numbered item (``1.``), with its indented continuation lines;
* every entry of a ``{glossary}`` block;

on the pages in ``SUMMARY_PAGES`` and in the ``## Remember`` section of every notebook. Fenced code
and directive blocks other than ``{glossary}`` are skipped: they hold code, pictures and API
listings, not statements. The exemptions, each with its reason, are ``EXEMPT_SECTIONS`` (whole
sections about the book's own tooling or sources, not about PyTorch) and ``EXEMPT_ITEMS`` (single
items, matched by their opening words); keep both short.

Quiz feedback is held to the same rule: every answer's feedback in a notebook's quiz must link
(``href="#anchor"``) a section of that notebook, by its label or its heading, that proves it.
"""

from __future__ import annotations

import ast
import json
import re
import shutil
from dataclasses import dataclass
from pathlib import Path

import nbformat
import pytest

import quiz_files
import quizzes
from places import REPOSITORY

ROOT = REPOSITORY
SUMMARY_PAGES = [
    "intro.md",
    "chapters/cheat_sheet.md",
    "chapters/advice_checked.md",
    "chapters/which_fix.md",
    "chapters/glossary.md",
    "chapters/debugging.md",
    "chapters/troubleshooting.md",
    "chapters/api.md",
]
NOTEBOOKS = sorted((ROOT / "notebooks").glob("*.ipynb")) + sorted((ROOT / "chapters").glob("*.ipynb"))

# (page, heading): sections whose rows and bullets are not statements about PyTorch's behaviour.
EXEMPT_SECTIONS = {
    ("chapters/advice_checked.md", "The four articles"): "describes the sources, states no behaviour",
    ("chapters/troubleshooting.md", "Graphviz is missing"): "installing the book's tools",
    ("chapters/troubleshooting.md", "Python 3.12 or newer: `No module named 'distutils'`"):
        "a packaging fact of torchviz, not PyTorch behaviour",
    ("chapters/troubleshooting.md", "Binder"): "the hosting service",
    ("chapters/troubleshooting.md", "Running locally"): "the book's set-up and make targets",
    ("chapters/debugging.md", "How the command works, stage by stage"):
        "the library's folders (tests/package/test_layout.py holds their order), not PyTorch behaviour",
    ("chapters/api.md", "The command and its report"):
        "the fields of the command's JSON report (tests/command/text/test_cli.py checks them), not PyTorch behaviour",
}
# Executed chapters without a Remember list, with the reason.
WITHOUT_REMEMBER = {
    "chapters/workshop_runthrough.ipynb": "the instructor's run-through of the exercises' self-checks; "
                                          "it states nothing about PyTorch that a scenario does not prove",
}
# (page, opening words of the item): single items that are navigation or tooling.
EXEMPT_ITEMS = {
    ("chapters/troubleshooting.md", "**The first cell takes a minute.**"): "Colab set-up time",
    ("chapters/troubleshooting.md", "**\"Runtime disconnected\".**"): "Colab sessions",
}

LABEL = re.compile(r"^\(([\w-]+)\)=\s*$")
HEADING = re.compile(r"^(#{1,6})\s+(.*?)\s*$")
REF = re.compile(r"\{ref\}`(?:[^`<]*<([\w-]+)>|([\w-]+))`")
FENCE = re.compile(r"^\s*(`{3,}|~{3,})\s*(\{[\w-]+\})?")
ITEM_START = re.compile(r"^(?:[-*]|\d+\.)\s+")


@dataclass
class Item:
    where: str      # page and section, for the failure message
    page: str
    section: str
    text: str


def _markdown_lines(text: str):
    """(line, inside_glossary) for every line outside fenced blocks; glossary blocks are kept."""
    fence = None
    for line in text.splitlines():
        match = FENCE.match(line)
        if fence is None and match:
            fence = (match.group(1), match.group(2) == "{glossary}")
            continue
        if fence is not None:
            if line.strip().startswith(fence[0]) and line.strip().strip(fence[0][0]) == "":
                fence = None
                continue
            if fence[1]:
                yield line, True
            continue
        yield line, False


def items_of(text: str, page: str, section: str = "") -> list[Item]:
    """The table rows, bullets and glossary entries of a piece of Markdown."""
    found: list[Item] = []
    current: list[str] | None = None

    def close():
        nonlocal current
        if current is not None:
            found.append(Item(f"{page} [{section}]", page, section, " ".join(current)))
        current = None

    for line, in_glossary in _markdown_lines(text):
        heading = HEADING.match(line)
        if heading and not in_glossary:
            close()
            section = heading.group(2)
            continue
        if in_glossary:
            if line and not line[0].isspace():          # a term starts an entry
                close()
                current = [line.strip()]
            elif current is not None and line.strip():
                current.append(line.strip())
            continue
        stripped = line.strip()
        if stripped.startswith("|"):
            close()
            if re.fullmatch(r"\|[\s:|-]+\|?", stripped):
                found.pop()                               # the previous row was the header
                continue
            found.append(Item(f"{page} [{section}]", page, section, stripped))
            continue
        if ITEM_START.match(line):
            close()
            current = [stripped]
        elif current is not None and line.startswith(" ") and stripped:
            current.append(stripped)
        elif not stripped or not line.startswith(" "):
            close()
    close()
    return found


def remember_text(path: Path) -> str:
    """The Markdown of a notebook's `## Remember` section (up to the next heading of level 1 or 2)."""
    nb = nbformat.read(path, as_version=4)
    lines, inside = [], False
    for cell in nb.cells:
        if cell.cell_type != "markdown":
            continue
        for line in cell.source.splitlines():
            heading = HEADING.match(line)
            if heading and len(heading.group(1)) <= 2:
                inside = heading.group(2).strip() == "Remember"
                if inside:
                    lines.append(line)
                continue
            if inside:
                lines.append(line)
    return "\n".join(lines)


def all_items() -> list[Item]:
    items = []
    for page in SUMMARY_PAGES:
        items += items_of((ROOT / page).read_text(), page)
    for path in NOTEBOOKS:
        page = str(path.relative_to(ROOT))
        if page in WITHOUT_REMEMBER:
            continue
        text = remember_text(path)
        assert text, f"{page} has no '## Remember' section"
        items += items_of(text, page)
    return [i for i in items
            if (i.page, i.section) not in EXEMPT_SECTIONS
            and not any(i.page == p and ITEM_START.sub("", i.text, count=1).startswith(w)
                        for p, w in EXEMPT_ITEMS)]


# ----- labels and the sections they open -----

@dataclass
class Section:
    source: str     # where the label is
    proves: bool    # an executed assert, or a raises-exception cell, before the next heading
    text: str = ""  # the section's prose and code, from its label to the next heading of its level


def _cells(path: Path):
    """(kind, source, tags, executed) for the cells of a notebook or, for Markdown, one cell."""
    if path.suffix == ".md":
        return [("markdown", path.read_text(), [], False)]
    nb = nbformat.read(path, as_version=4)
    return [(c.cell_type, c.source, c.metadata.get("tags", []),
             c.cell_type == "code" and c.get("execution_count") is not None) for c in nb.cells]


# An assertion: an `assert` statement, `al.expect_freed_graph_error` (which raises when the expected
# error does not come), or a call of a function defined in the same notebook that asserts (the
# notebooks' `check(...)`, `assert_grads(...)` helpers).
ASSERTION = re.compile(r"^\s*assert\b|\bexpect_freed_graph_error\(", re.M)


def asserting_helpers(sources: list[str]) -> set[str]:
    """Names of the functions defined in these cells whose body asserts."""
    names: set[str] = set()
    for source in sources:
        code = "\n".join(l for l in source.splitlines() if not l.lstrip().startswith(("%", "!")))
        try:
            tree = ast.parse(code)
        except SyntaxError:
            continue
        for node in ast.walk(tree):
            if isinstance(node, ast.FunctionDef) and any(isinstance(n, ast.Assert) for n in ast.walk(node)):
                names.add(node.name)
    return names


def _proves(kind, source, tags, executed, helpers: set[str]) -> bool:
    if kind != "code":
        return False
    if "raises-exception" in tags:
        return True
    if not executed:
        return False
    return ASSERTION.search(source) is not None or any(
        re.search(rf"(?<![\w.]){re.escape(name)}\(", source) for name in helpers)


def labelled_sections() -> dict[str, Section]:
    sections: dict[str, Section] = {}
    paths = [ROOT / "intro.md", *sorted((ROOT / "chapters").glob("*.md")),
             *sorted((ROOT / "notebooks").glob("*.ipynb")), *sorted((ROOT / "chapters").glob("*.ipynb"))]
    for path in paths:
        open_labels: list[list] = []        # [label, level or None, proves, lines of text]
        cells = _cells(path)
        helpers = asserting_helpers([c[1] for c in cells if c[0] == "code"])
        for kind, source, tags, executed in cells:
            if kind == "markdown":
                for line, _ in _markdown_lines(source):
                    label = LABEL.match(line.strip())
                    if label:
                        open_labels.append([label.group(1), None, False, []])
                        continue
                    heading = HEADING.match(line)
                    if heading:
                        level = len(heading.group(1))
                        still_open = []
                        for entry in open_labels:
                            if entry[1] is None:
                                entry[1] = level            # the label's own heading
                                still_open.append(entry)
                            elif level > entry[1]:
                                still_open.append(entry)    # a subsection: still inside
                            else:
                                sections[entry[0]] = Section(str(path.relative_to(ROOT)), entry[2],
                                                             "\n".join(entry[3]))
                        open_labels = still_open
                    for entry in open_labels:
                        entry[3].append(line)
                continue
            for entry in open_labels:
                entry[3].append(source)
            if _proves(kind, source, tags, executed, helpers):
                for entry in open_labels:
                    entry[2] = True
        for entry in open_labels:
            sections[entry[0]] = Section(str(path.relative_to(ROOT)), entry[2], "\n".join(entry[3]))
    return sections


ITEMS = all_items()
SECTIONS = labelled_sections()


NO_PROOF = "the section has no executed assert and no cell tagged raises-exception"


def problems_of(item: Item, sections: dict[str, Section]) -> list[str]:
    labels = [a or b for a, b in REF.findall(item.text)]
    if not labels:
        return ["no {ref} link to the notebook section that proves it"]
    problems = []
    for label in labels:
        if label not in sections:
            problems.append(f"{{ref}} `{label}`: no such label")
        elif not sections[label].proves:
            problems.append(f"{{ref}} `{label}` ({sections[label].source}): {NO_PROOF}")
    return problems


@pytest.mark.parametrize("item", ITEMS, ids=[f"{i.page}:{i.text[:50]}" for i in ITEMS])
def test_summary_item_links_to_its_proof(item):
    problems = problems_of(item, SECTIONS)
    assert not problems, f"{item.where}: {item.text[:120]!r}: " + "; ".join(problems)


def test_the_parser_finds_the_summaries():
    """Guard against a parser that silently finds nothing: every page kind yields items."""
    pages = {i.page for i in ITEMS}
    for page in ["intro.md", "chapters/cheat_sheet.md", "chapters/advice_checked.md",
                 "chapters/which_fix.md", "chapters/glossary.md", "chapters/debugging.md"]:
        assert page in pages, f"no rows or bullets found on {page}"
    assert sum(p.startswith("notebooks/") for p in pages) == len(list((ROOT / "notebooks").glob("*.ipynb")))
    assert len(ITEMS) > 150


def test_the_check_catches_a_missing_or_unproved_link():
    """The check itself can fail: a row without a link, a wrong label, a section without a proof."""
    row = Item("x", "x", "", "| a | b |")
    assert problems_of(row, SECTIONS)
    assert problems_of(Item("x", "x", "", "- see {ref}`no-such-label-anywhere`"), SECTIONS)
    unproved = {"bare": Section("x", False)}
    assert problems_of(Item("x", "x", "", "- see {ref}`text <bare>`"), unproved)
    proved = {"good": Section("x", True)}
    assert not problems_of(Item("x", "x", "", "- see {ref}`text <good>`"), proved)


# ----- quiz feedback: a statement too, one link away from its proof -----

QUIZ_LINK = re.compile(r'href="#([A-Za-z0-9_-]+)"')


@dataclass
class Feedback:
    page: str       # the notebook the quiz is in
    answer: str
    text: str


def quiz_feedbacks(path: Path, page: str | None = None) -> list[Feedback]:
    """The feedback of every answer of the notebook's quiz (read from the quiz file its quiz cell
    names, scripts/quizzes.py)."""
    page = page or str(path.relative_to(ROOT))
    nb = nbformat.read(path, as_version=4)
    if not any(quizzes.TAG in c.metadata.get("tags", []) for c in nb.cells):
        return []
    return [Feedback(page, answer.get("answer", ""), answer.get("feedback", ""))
            for question in quiz_files.questions(nb, path.parent) for answer in question.get("answers", [])]


def anchor_of(label: str) -> str:
    """The HTML id the book gives a MyST label: docutils drops the leading digits and hyphens."""
    return re.sub(r"^[^A-Za-z]+", "", label)


def heading_sections() -> dict[str, Section]:
    """Every notebook's headings as sections too, keyed ``page#anchor`` (the id the book gives the
    heading: its text without Markdown marks, through docutils' ``make_id``); a quiz may link a
    heading instead of a label."""
    from docutils.nodes import make_id

    sections: dict[str, Section] = {}
    for path in NOTEBOOKS:
        page = str(path.relative_to(ROOT))
        cells = _cells(path)
        helpers = asserting_helpers([c[1] for c in cells if c[0] == "code"])
        open_headings: list[list] = []      # [key, level, proves]
        for kind, source, tags, executed in cells:
            if kind == "markdown":
                for line, _ in _markdown_lines(source):
                    heading = HEADING.match(line)
                    if not heading:
                        continue
                    level = len(heading.group(1))
                    for entry in open_headings:
                        if entry[1] >= level:
                            sections[entry[0]] = Section(page, entry[2])
                    open_headings = [e for e in open_headings if e[1] < level]
                    title = re.sub(r"[`*]", "", heading.group(2))
                    open_headings.append([f"{page}#{make_id(title)}", level, False])
            elif _proves(kind, source, tags, executed, helpers):
                for entry in open_headings:
                    entry[2] = True
        for entry in open_headings:
            sections[entry[0]] = Section(page, entry[2])
    return sections


HEADING_SECTIONS = heading_sections()


def feedback_problems(feedback: Feedback, sections: dict[str, Section],
                      headings: dict[str, Section] | None = None) -> list[str]:
    """What keeps a feedback from proving itself: no link, a link to no label (or heading) of its
    own notebook, or a link to a section with no executed assert and no raises-exception cell."""
    headings = HEADING_SECTIONS if headings is None else headings
    anchors = QUIZ_LINK.findall(feedback.text)
    if not anchors:
        return ["no link to the section of this notebook that proves it"]
    problems = []
    for anchor in anchors:
        labels = [l for l, s in sections.items() if s.source == feedback.page and anchor_of(l) == anchor]
        if not labels and f"{feedback.page}#{anchor}" in headings:
            sections = {**sections, f"{feedback.page}#{anchor}": headings[f"{feedback.page}#{anchor}"]}
            labels = [f"{feedback.page}#{anchor}"]
        if not labels:
            problems.append(f"#{anchor}: no label of {feedback.page} makes this anchor")
        elif not any(sections[l].proves for l in labels):
            problems.append(f"#{anchor} ({labels[0]}): {NO_PROOF}")
    return problems


FEEDBACKS = [f for path in NOTEBOOKS for f in quiz_feedbacks(path)]


@pytest.mark.parametrize("feedback", FEEDBACKS, ids=[f"{f.page}:{f.answer[:40]}" for f in FEEDBACKS])
def test_quiz_feedback_links_to_its_proof(feedback):
    problems = feedback_problems(feedback, SECTIONS)
    assert not problems, f"{feedback.page}, answer {feedback.answer[:60]!r}: " + "; ".join(problems)


def test_every_scenario_quiz_feedback_is_found():
    """Guard against a parser that finds nothing: every scenario has a quiz with feedback."""
    pages = {f.page for f in FEEDBACKS}
    scenarios = sorted((ROOT / "notebooks").glob("*.ipynb"))
    assert pages >= {str(p.relative_to(ROOT)) for p in scenarios}
    assert len(FEEDBACKS) >= 2 * len(scenarios)


def test_the_quiz_check_catches_a_feedback_without_proof(tmp_path):
    """A deliberately broken copy of a real notebook: one feedback loses its link, another links to
    a section that proves nothing, a third to a label that does not exist. Each is caught."""
    source = ROOT / "notebooks" / "06_accumulating_loss.ipynb"
    page = str(source.relative_to(ROOT))
    (question,) = json.loads(quizzes.quiz_path(source).read_text())
    first, second = (a["feedback"] for a in question["answers"][:2])
    links = QUIZ_LINK.findall(second)
    assert QUIZ_LINK.findall(first) and links, "the notebook's quiz links its proof"
    question["answers"][0]["feedback"] = QUIZ_LINK.sub('href="https://example.org/"', first)
    question["answers"][1]["feedback"] = second.replace(f'href="#{links[0]}"', 'href="#no-such-section-here"', 1)
    copy = tmp_path / source.name
    shutil.copy(source, copy)
    quizzes.quiz_path(copy).parent.mkdir()
    quizzes.quiz_path(copy).write_text(quiz_files.file_text([question]))
    problems = [feedback_problems(f, SECTIONS) for f in quiz_feedbacks(copy, page)]
    assert any("no link" in p for ps in problems for p in ps)
    assert any("no label" in p for ps in problems for p in ps)
    unproved = {"06-total-fails-on-step-2": Section(page, False)}
    assert feedback_problems(Feedback(page, "a", 'see <a href="#total-fails-on-step-2">x</a>'), unproved, {})
    assert feedback_problems(Feedback(page, "a", 'see <a href="#why">x</a>'), {},
                             {f"{page}#why": Section(page, False)})
    assert not feedback_problems(Feedback(page, "a", 'see <a href="#why">x</a>'), {},
                                 {f"{page}#why": Section(page, True)})
    # and the untouched notebook has none
    assert not any(feedback_problems(f, SECTIONS) for f in quiz_feedbacks(source))
