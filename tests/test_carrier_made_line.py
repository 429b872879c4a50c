"""The freed-graph error's carrier is reported at the line where it got the graph that was
freed, as the replay recorded it: the statement, in the scope that holds the name, that was
running when the node its tensor holds was made (``# got`` in each script), even when the node
itself was made deeper, in the program's own ``forward`` or in a comprehension; the sentence
still says where it enters the failing step (``# read``), and the edit, which locates itself
from that entry, keeps its line (``# edit``)."""

from __future__ import annotations

import pytest

from command_runs import command_reports
from test_recorded_statements import diagnosis, marked

# script: (the carrier, the function whose name holds it, the node made in a frame deeper than
# that function's: the program's own forward)
CASES = {
    "freed_codes_made_in_forward_before_the_loop.py": ("codes", "train", True),
    "freed_fake_made_by_own_generator_class.py": ("fake", "<module>", True),
    "freed_peer_outputs_made_in_a_comprehension.py": ("outs[0]", "<module>", False),
}


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    return command_reports(list(CASES), tmp_path_factory.mktemp("made"))


@pytest.mark.parametrize("name", list(CASES))
def test_the_carrier_is_given_where_it_got_the_graph(runs, name):
    carrier, function, _ = CASES[name]
    first = runs[name]["report"]["carriers"][0]
    assert (first["name"], first["line"], first["function"]) == \
        (carrier, marked(name, "got"), function), first
    assert first["enters"]["line"] == marked(name, "read"), first


@pytest.mark.parametrize("name", list(CASES))
def test_that_line_is_in_the_recording(runs, name):
    carrier, function, deeper = CASES[name]
    recorded = runs[name]["report"]["recorded"]
    named = [h for h in recorded["holders"] + recorded["carrying"] if h["name"] == carrier]
    assert named, recorded["holders"]
    frames = [named[0]["built"], *named[0]["callers"]]
    assert (frames[0]["function"] == "forward") is deeper, frames
    assert any((f["line"], f["function"]) == (marked(name, "got"), function) for f in frames)


@pytest.mark.parametrize("name", list(CASES))
def test_the_text_says_both_lines(runs, name):
    carrier, function, _ = CASES[name]
    got, read = marked(name, "got"), marked(name, "read")
    lines = diagnosis(runs[name]["text"])
    said = [line for line in lines if line.startswith(f"  {carrier}  ")]
    assert said and said[0].startswith(f"  {carrier}  {name}:{got} in {function}: its tensor's "
                                       "node was made by this statement"), lines
    assert f"enters this step's computation at {name}:{read}" in said[0]
    assert f"{carrier}, made at {name}:{got} and entering at {name}:{read}," in \
        runs[name]["text"]


@pytest.mark.parametrize("name", [n for n in CASES if marked(n, "edit")])
def test_the_edit_keeps_its_line(runs, name):
    edits = runs[name]["report"]["edits"]
    assert [e["line"] for e in edits] == [marked(name, "edit")], edits
