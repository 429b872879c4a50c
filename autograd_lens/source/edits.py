"""An edit of the user's own lines: what a fix looks like in the program that failed.

An :class:`Edit` replaces one line of a file by zero or more lines. A fix is a list of edits;
applied from the bottom of each file up, they give the fixed program. :class:`Plan` collects
the changes one rule makes, several on one line included, on the lines of a
:class:`~autograd_lens.source.source_file.Source` (the file as the edit rules of
:mod:`autograd_lens.fixes.rules` read it).
"""

from __future__ import annotations

import ast
import difflib
import linecache
from dataclasses import dataclass
from typing import Any

from .source_file import Source


@dataclass(frozen=True)
class Edit:
    """Replace line ``line`` (1-based) of ``file``, whose text is ``old``, by the lines ``new``
    (none: the line is deleted)."""

    file: str
    line: int
    old: str
    new: tuple[str, ...]

    def as_dict(self) -> dict[str, Any]:
        return {"file": self.file, "line": self.line, "old": self.old, "new": list(self.new)}


class Plan:
    """The changes of one fix, by line: lines put before, the line's new text, lines put after."""

    def __init__(self, source: Source) -> None:
        self.source = source
        self.changes: dict[int, tuple[list[str], str | None, list[str]]] = {}

    def _at(self, line: int) -> tuple[list[str], str | None, list[str]]:
        return self.changes.setdefault(line, ([], self.source.text(line), []))

    def before(self, line: int, *texts: str) -> Plan:
        self._at(line)[0].extend(texts)
        return self

    def after(self, line: int, *texts: str) -> Plan:
        self._at(line)[2].extend(texts)
        return self

    def replace(self, line: int, text: str | None) -> Plan:
        before, _, after = self._at(line)
        self.changes[line] = (before, text, after)
        return self

    def replace_span(self, node: ast.AST, text: str) -> Plan:
        """Replace the source of ``node`` (on one line) by ``text``; spans on one line are
        replaced from the right, so earlier offsets stay right."""
        if node.lineno != node.end_lineno:
            raise ValueError("a span over several lines")
        spans = getattr(self, "_spans", {})
        spans.setdefault(node.lineno, []).append((node.col_offset, node.end_col_offset, text))
        self._spans = spans
        line = self.source.text(node.lineno).encode()
        for start, end, new in sorted(spans[node.lineno], reverse=True):
            line = line[:start] + new.encode() + line[end:]
        return self.replace(node.lineno, line.decode())

    def edits(self) -> list[Edit]:
        found = []
        for line, (before, text, after) in sorted(self.changes.items()):
            new = tuple(before) + (() if text is None else (text,)) + tuple(after)
            found.append(Edit(self.source.file, line, self.source.text(line), new))
        return found


def apply(edits: list[Edit], lines: list[str]) -> list[str]:
    """The lines of one file (each ending in a newline) with ``edits`` of that file applied."""
    result = list(lines)
    for edit in sorted(edits, key=lambda e: e.line, reverse=True):
        if result[edit.line - 1].rstrip("\r\n") != edit.old:
            raise ValueError(f"line {edit.line} of {edit.file} is not {edit.old!r}")
        result[edit.line - 1:edit.line] = [text + "\n" for text in edit.new]
    return result


def by_file(edits: list[Edit]) -> dict[str, list[Edit]]:
    files: dict[str, list[Edit]] = {}
    for edit in edits:
        files.setdefault(edit.file, []).append(edit)
    return files


def unified_diff(edits: list[Edit], shown: Any = None) -> str:
    """The edits as a unified diff of each file (``shown``: how to print a file's name)."""
    parts = []
    for file, group in by_file(edits).items():
        lines = linecache.getlines(file)
        name = shown(file) if shown else file
        parts += difflib.unified_diff(lines, apply(group, lines), name, name + " (fixed)", n=1)
    return "".join(part if part.endswith("\n") else part + "\n" for part in parts)
