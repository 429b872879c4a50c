"""The freed-graph error's carrier is reported at the line where it got the graph that was
freed, as the replay recorded it: the statement, in the scope that holds the name, that was
running when the node its tensor holds was made (``# got`` in each script), even when the node
itself was made deeper, in the program's own ``forward`` or in a comprehension; for an
attribute, the method of its object that made the node (an index write into a tensor an inner
module keeps), or that called the helper function that made it (a forward storing a helper's
result), named as that method writes it; for a tensor handed to a method, the caller's
name where it was made; for an entry of a list whose every entry was made by one statement and
holds a freed graph, the list. The sentence still says where it enters the failing step (``# read``)
and by which name, and the edit, which locates itself from that entry, keeps its line
(``# edit``)."""

from __future__ import annotations

import re

import pytest

from command_runs import command_reports
from test_recorded_statements import diagnosis, marked

# script: (the carrier, the function whose name holds it, the node made in a frame deeper than
# that function's: the program's own forward; the name where it enters, when another)
CASES = {
    "freed_codes_made_in_forward_before_the_loop.py": ("codes", "train", True, ""),
    "freed_fake_made_by_own_generator_class.py": ("fake", "<module>", True, ""),
    "freed_peer_outputs_made_in_a_comprehension.py": ("outs", "<module>", False, "outs[0]"),
    "freed_cache_written_by_an_inner_module.py": ("self.slots", "forward", True,
                                                  "self.memory.slots"),
    "freed_codes_handed_to_a_fit_method.py": ("codes", "<module>", False, "inputs"),
    "freed_scale_stored_from_a_helper_in_forward.py": ("self.scale", "forward", False, ""),
}


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    return command_reports(list(CASES), tmp_path_factory.mktemp("made"))


@pytest.mark.parametrize("name", list(CASES))
def test_the_carrier_is_given_where_it_got_the_graph(runs, name):
    carrier, function, _, entering = CASES[name]
    first = runs[name]["report"]["carriers"][0]
    assert (first["name"], first["line"], first["function"]) == \
        (carrier, marked(name, "got"), function), first
    assert first["enters"]["line"] == marked(name, "read"), first
    assert first["enters"]["name"] == (entering or carrier), first


@pytest.mark.parametrize("name", list(CASES))
def test_that_line_is_in_the_recording(runs, name):
    carrier, function, deeper, entering = CASES[name]
    recorded = runs[name]["report"]["recorded"]
    last = carrier.split(".")[-1]  # an attribute is held, at the failure, from outside
    named = [h for h in recorded["holders"] + recorded["carrying"]
             if h["name"] in (carrier, entering) or (carrier.startswith("self.") and
                                                     h["name"].endswith("." + last))]
    assert named, recorded["holders"]
    frames = [named[0]["built"], *named[0]["callers"]]
    assert (frames[0]["function"] == "forward") is deeper, frames
    assert any((f["line"], f["function"]) == (marked(name, "got"), function) for f in frames)
    if entering.startswith(carrier + "["):  # a list named: every entry of it holds a freed graph
        held = {h["name"] for h in recorded["holders"] + recorded["carrying"]}
        assert {f"{carrier}[{j}]" for j in range(named[0]["entries"])} <= held, held


@pytest.mark.parametrize("name", list(CASES))
def test_the_text_says_both_lines(runs, name):
    carrier, function, _, entering = CASES[name]
    got, read = marked(name, "got"), marked(name, "read")
    alias = f" as `{entering}`" if entering else ""
    lines = diagnosis(runs[name]["text"])
    said = [line for line in lines if line.startswith(f"  {carrier}  ")]
    made = "the nodes of its entries were" if entering.startswith(carrier + "[") else \
        "its tensor's node was"
    assert said and said[0].startswith(f"  {carrier}  {name}:{got} in {function}: {made} made "
                                       "by this statement"), lines
    assert re.search(rf"(enters this step's computation|read) at {name}:{read}\b"
                     + (re.escape(f" (as `{entering}`)") if entering else ""), said[0]), said[0]
    assert f"{carrier}, made at {name}:{got} and entering at {name}:{read}{alias}," in \
        runs[name]["text"]


@pytest.mark.parametrize("name", [n for n in CASES if marked(n, "edit")])
def test_the_edit_keeps_its_line(runs, name):
    edits = runs[name]["report"]["edits"]
    assert [e["line"] for e in edits] == [marked(name, "edit")], edits


@pytest.mark.parametrize("name, page", [
    ("freed_peer_outputs_made_in_a_comprehension.py", "02_two_losses_one_forward"),
    ("freed_codes_made_in_forward_before_the_loop.py", "13_tensor_outside_loop")])
def test_losses_of_one_forward_in_turn_get_their_page(runs, name, page):
    """Made once per pass of an outer loop, and freed and failed on by the one backward call of
    an inner loop (the recording shows both calls at that line): losses of one forward
    backpropagated in turn; made before every loop: a tensor computed outside the loop."""
    report = runs[name]["report"]
    recorded = report["recorded"]
    freed = recorded["node"]["freed_by"]["user"]
    assert freed["line"] == recorded["at"]["line"]
    assert report["page"].endswith(f"/{page}.html"), report["page"]
