"""What the command says happened, checked against what its replay recorded: shared by the tests
that start the command (``command_runs.command_reports`` checks every run it makes) and usable on
any report (``unsupported(text, report)``).

Each check reads one kind of statement of the diagnosis (the lines after the traceback, before
the edit) and holds it to the report's ``recorded`` evidence:

* ``Changed by: ... (FILE:LINE in FUNCTION)``: the recorded write, at its recorded line (or,
  where the line is said to make a module with ``inplace=True``, a write recorded in a library);
* ``runs `M` (a CLASS made at FILE:LINE: `TEXT`)``, and in the short form ``
  `M` (made at FILE:LINE), run at``: the module whose forward the recording shows writing, of
  that class, made at that recorded line;
* ``saved `NAME```: a name that held the written tensor in the recording;
* a step said to have changed a saved tensor ("changed by optimizer.step()", "`opt.step()` at
  FILE:LINE changed", "That write is optimizer step"): said only where one ran before the
  failing call, or wrote the tensor;
* ``backward call N at FILE:LINE`` and ``the backward at FILE:LINE``: a recorded backward call,
  numbered and placed as recorded;
* "assigned only before the loop": only as a guess;
* "Between the save and that write: N backward calls and M optimizer steps ran": the counts
  recorded (never said where the save itself was not recorded);
* "node was made by `TEXT` at FILE:LINE (recorded in a replay)": a statement (or a user frame
  calling it) that the recording shows making the node of a name that holds a freed graph;
* "the loss of backward call N was computed from it ... before the failing loss (computed
  earlier, from the same forward)": call N freed the graph, and the failing loss was recorded
  built before it ran, and not gone through by it;
* a carrier "built here, before" the step that wrote the saved weight: the recording does not
  show the tensor its name holds built through that line after that step;
* "the optimizer step between them changed no weight the later loss reaches (recorded)", in an
  edit's text too: a step ran after the freeing call, and the recording shows none of the
  failing graph's weights written by a step since.
"""

from __future__ import annotations

import re
from pathlib import Path


def diagnosis(text: str) -> list[str]:
    """The lines of the diagnosis (after the traceback, before the edit)."""
    lines = text.split("\nautograd_lens: ", 1)[-1].split("\nThe fix as an edit")[0]
    return lines.splitlines()


# A step said to have run (advice on where to put a write, "right after optimizer.step()", is not).
_STEP = re.compile(r"changed by optimizer\.step\(\)|step\(\)`? at [\w.]+:\d+ changed"
                   r"|optimizer step at [\w.]+:\d+ changed|That write is optimizer step")


def unsupported(text: str, report: dict) -> list[str]:
    """The diagnosis lines of ``text`` (the command's output) that ``report``'s recording does
    not support, each with why; empty when the replay recorded nothing (nothing to hold the
    statements to: the text then says they are guesses)."""
    recorded = report.get("recorded")
    if not recorded:
        return []
    wrong = []
    write = recorded.get("write") or {}
    stepped = recorded.get("steps_before", 0) > 0 or write.get("in_step") is not None
    backwards = {c["number"]: c for c in recorded.get("backwards", [])}
    made = _made(recorded)
    for line in diagnosis(text):
        if line.startswith("Changed by") and write.get("user"):
            user = write["user"]
            if "makes a module (or calls a function) with inplace=True" in line:
                if not write.get("library"):  # the module's line: a library's op wrote it
                    wrong.append(f"the recorded write ran in no library: {line}")
            elif f"{Path(user['file']).name}:{user['line']} in {user['function']}" not in line:
                wrong.append(f"not the recorded write ({user['line']}): {line}")
        for by, maker, file, where, made_text in re.findall(
                r"runs `([^`]+)` \(an? (\w+) made at ([\w.]+):(\d+): `([^`]*)`\)", line):
            if maker != write.get("module") or not _the_module_made(write, by, file, where) or \
                    not _made_site(write).get("text", "").startswith(made_text):
                wrong.append(f"not the recorded module and where it was made: {line}")
        names = set(write.get("names") or ()) | {w["name"] for w in recorded.get("written", [])}
        for saved in re.findall(r"saved `([^`]+)`", line):
            if recorded["kind"] == "modified" and names and saved not in names:
                wrong.append(f"`{saved}` did not hold the written tensor {sorted(names)}: {line}")
        if not stepped and _STEP.search(line):
            wrong.append(f"a step is said, none ran before the failing call: {line}")
        if "assigned only before the loop" in line and "a guess" not in line:
            wrong.append(f"a loop is said without a recording of it: {line}")
        between = re.match(r"Between the save and that write: (\d+) backward calls? and "
                           r"(\d+) optimizer steps? ran", line)
        if line.startswith("Between the save and that write") and (
                not between or (write.get("backward_calls"), write.get("steps")) !=
                tuple(int(n) for n in between.groups())):
            wrong.append(f"not the recorded counts ({write.get('backward_calls')}, "
                         f"{write.get('steps')}): {line}")
        for number, file, where in re.findall(r"backward call (\d+) at ([\w.]+):(\d+)", line):
            call = backwards.get(int(number))
            if call is None or (file, int(where)) != (Path(call["file"]).name, call["line"]):
                wrong.append(f"backward call {number} is not at {file}:{where}: {line}")
        for file, where in re.findall(r"the backward at ([\w.]+):(\d+)", line):
            if int(where) not in {c["line"] for c in backwards.values()}:
                wrong.append(f"no backward was recorded at {file}:{where}: {line}")
        for text_, file, where in re.findall(
                r"node was made by `([^`]+)` at ([\w.]+):(\d+) \(recorded in a replay\)", line):
            if (file, int(where), text_) not in made:
                wrong.append(f"no node of a holder was recorded made at {file}:{where}: {line}")
    return wrong + _module_made(text, write) + _second_loss(text, recorded) + \
        _built_before_the_step(text, recorded)


def _module_made(text: str, write: dict) -> list[str]:
    """The short form's module and where it was made (see the module's docstring)."""
    return [f"not the recorded module and where it was made: {by} at {file}:{where}"
            for by, file, where in re.findall(r"`([^`]+)` \(made at ([\w.]+):(\d+)\), run at",
                                              text)
            if not _the_module_made(write, by, file, where)]


def _made_site(write: dict) -> dict:
    """The user's line that made the module whose forward made the recorded write, or {}."""
    return (write.get("module_made") or {}).get("user") or {}


def _the_module_made(write: dict, by: str, file: str, where: str) -> bool:
    """Whether ``by``, made at ``file``:``where``, is the recorded write's module and its site."""
    site = _made_site(write)
    return by == (write.get("module_names") or [""])[0] and \
        (file, int(where)) == (Path(site.get("file", "")).name, site.get("line"))


def _second_loss(text: str, recorded: dict) -> list[str]:
    """The statements about a second loss of the same forward (see the module's docstring)."""
    wrong = []
    root = recorded.get("root") or {}
    freed = (recorded.get("node") or {}).get("freed_by") or {}
    for number in re.findall(r"the loss of backward call (\d+) was computed from it, and that "
                             r"call went through it before the failing loss \(computed earlier",
                             text):
        built = (root.get("built") or {}).get("backward_calls")
        if int(number) != freed.get("number") or built is None or built >= int(number) or \
                root.get("went") is not False:
            wrong.append(f"not a second loss as recorded (freed by {freed.get('number')}, "
                         f"built after {built} calls, went {root.get('went')}): call {number}")
    if "changed no weight the later loss reaches (recorded)" in text and (
            root.get("stepped") is not False or not any(
                s["after_backward_calls"] >= freed.get("number", 1 << 30)
                for s in recorded.get("steps", []))):
        wrong.append(f"a step said to change no weight of the later loss: stepped "
                     f"{root.get('stepped')}, steps {recorded.get('steps')}")
    return wrong


def _made(recorded: dict) -> set[tuple[str, int, str]]:
    """Where the recording shows each holder's node made: (file name, line, text) of the
    statement and of each user frame that called it."""
    return {(Path(f["file"]).name, f["line"], f.get("text", ""))
            for h in recorded.get("holders", []) + recorded.get("carrying", [])
            for f in [h.get("built") or {}, *h.get("callers", [])] if f.get("file")}


_CARRIER = re.compile(r"^  (\S+)  ([\w.]+):(\d+) in [^:]+: (.*)$")


def _built_before_the_step(text: str, recorded: dict) -> list[str]:
    """A carrier said to be "built here, before" the step that wrote the saved weight: not
    where the recording shows the tensor its name holds built through that line after that
    step."""
    step = (recorded.get("write") or {}).get("in_step")
    if step is None:
        return []
    wrong = []
    for line in diagnosis(text):
        found = _CARRIER.match(line)
        if not found or not found.group(4).startswith("is built here, before `"):
            continue
        name, file, where = found.group(1), found.group(2), int(found.group(3))
        if any(h["name"] == name and h.get("built") and (h.get("steps") or 0) >= step and
               any((Path(f["file"]).name, f["line"]) == (file, where)
                   for f in [h["built"], *h.get("callers", [])])
               for h in recorded.get("holders", [])):
            wrong.append(f"`{name}` was recorded built there after step {step}: {line}")
    return wrong
