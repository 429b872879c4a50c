"""The command's statements about what happened, held to its replay's recording (see
``statements.py``; ``command_runs.command_reports`` applies the same check to every run of the
command in the tests). Two programs where no optimizer step runs before the failing backward,
on which the command said one did: a second carrier "built before `opt.step()` ... changed in
place a weight its graph saved" (the write was an embedding's max_norm), and the pattern "a
weight a node saved, changed by optimizer.step()" where the replay found no saved tensor in the
error's state (a dropout made in-place scaled what an in-place ReLU saved)."""

from __future__ import annotations

import pytest

from command_runs import command_reports
from statements import diagnosis, unsupported

SCRIPTS = ["inplace_tied_output_weight_renormed_by_next_lookup.py",
           "inplace_relu_output_dropped_out_in_place.py"]


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    return command_reports(SCRIPTS, tmp_path_factory.mktemp("held"))  # checks unsupported()


@pytest.mark.parametrize("name", SCRIPTS)
def test_no_step_is_said_where_none_ran(runs, name):
    found = runs[name]
    recorded = found["report"]["recorded"]
    assert recorded["kind"] == "modified" and recorded["steps_before"] == 0, recorded
    assert found["report"]["pattern"] == "written_in_place", found["text"]
    for line in diagnosis(found["text"]):
        assert "step()` at" not in line and "changed by optimizer.step()" not in line, line


def test_the_check_finds_what_the_recording_does_not_show():
    """The checker itself: each kind of statement it reads, false, is flagged."""
    report = {"recorded": {
        "kind": "modified", "steps_before": 0, "backwards": [
            {"number": 1, "file": "/x/train.py", "line": 30}],
        "write": {"user": {"file": "/x/train.py", "line": 12, "function": "forward"},
                  "names": ["h"], "in_step": None},
        "written": []}}
    text = "\n".join([
        "autograd_lens: this backward meets a saved tensor that was changed in place",
        "Changed by: h += 1  (train.py:13 in forward)",
        "MulBackward0 saved `g` (slot self) at version 0; it is at version 1 now.",
        "  out  train.py:20 in <module>: is built here, before `opt.step()` at train.py:33 "
        "changed in place a weight its graph saved.",
        "Likely pattern: a weight a node saved, changed by optimizer.step() before the backward.",
        "  h  train.py:9 in <module>: assigned only before the loop.",
        "the graph was freed by backward call 1 at train.py:31.",
        "the backward at train.py:44 failed."])
    wrong = unsupported(text, report)
    assert len(wrong) == 7, wrong
    right = "\n".join([
        "autograd_lens: this backward meets a saved tensor that was changed in place",
        "Changed by: h += 1  (train.py:12 in forward)",
        "MulBackward0 saved `h` (slot self) at version 0; it is at version 1 now.",
        "Fix: change it right after optimizer.step(), not between the forward and the backward.",
        "  h  train.py:9 in <module>: assigned only before the loop (a guess).",
        "the graph was freed by backward call 1 at train.py:30.",
        "the backward at train.py:30 failed."])
    assert unsupported(right, report) == []
    assert unsupported(text, {"recorded": None}) == []  # nothing recorded: nothing to hold to


def test_the_check_holds_a_second_loss_to_its_recorded_order():
    """A second loss of the same forward, and a step said to change none of its weights: each
    said true only where the recording shows it (the failing loss built before the call that
    freed its graph, not gone through by it; no step since writing a weight it reaches)."""
    said = ("autograd_lens: this backward reaches a graph that an earlier call already went "
            "through.\n  sketch  train.py:32 in <module>: its tensor's node ... holds the shared "
            "part of the graph: the loss of backward call 1 was computed from it, and that call "
            "went through it before the failing loss (computed earlier, from the same forward) "
            "was backpropagated.\nThe fix as an edit of your program (...; the optimizer step "
            "between them changed no weight the later loss reaches (recorded)):")
    recorded = {"kind": "freed", "backwards": [], "steps": [{"after_backward_calls": 1}],
                "node": {"freed_by": {"number": 1}},
                "root": {"built": {"backward_calls": 0}, "went": False, "stepped": False}}
    assert unsupported(said, {"recorded": recorded}) == []
    later = dict(recorded, root={"built": {"backward_calls": 1}, "went": False, "stepped": False})
    gone = dict(recorded, root={"built": {"backward_calls": 0}, "went": True, "stepped": False})
    stepped = dict(recorded, root={"built": {"backward_calls": 0}, "went": False,
                                   "stepped": True})
    for wrong in (later, gone):
        assert [w for w in unsupported(said, {"recorded": wrong}) if "second loss" in w], wrong
    assert [w for w in unsupported(said, {"recorded": stepped}) if "a step said" in w]
    unstepped = dict(recorded, steps=[])
    assert [w for w in unsupported(said, {"recorded": unstepped}) if "a step said" in w]


def test_the_check_holds_a_modules_construction_site_to_the_recording():
    """"runs `M` (a CLASS made at FILE:LINE: `TEXT`)": the module the recording shows writing,
    of that class, made at that recorded line; a different line, class or module is flagged."""
    made = {"file": "/x/net.py", "line": 18, "function": "__init__",
            "text": "nn.Dropout(0.25, inplace=True),"}
    write = {"user": {"file": "/x/net.py", "line": 23, "function": "forward"}, "names": [],
             "in_step": None, "library": {"file": "/t/functional.py", "line": 1},
             "module": "Dropout", "module_names": ["self.main[2]"],
             "module_made": {"user": made, "chain": [], "library": None}}
    report = {"recorded": {"kind": "modified", "steps_before": 0, "backwards": [],
                           "write": write, "written": []}}

    def said(by: str, maker: str, line: int) -> str:
        return ("autograd_lens: this backward meets a saved tensor\nChanged by: return "
                f"self.main(x)  (net.py:23 in forward), which runs `{by}` (a {maker} made at "
                f"net.py:{line}: `nn.Dropout(0.25, inplace=True)`), whose forward wrote it.")
    assert unsupported(said("self.main[2]", "Dropout", 18), report) == []
    short = "autograd_lens, in short: `self.main[2]` (made at net.py:{}), run at net.py:23, wrote"
    assert unsupported(short.format(18), report) == []
    assert [w for w in unsupported(short.format(20), report) if "made" in w]
    for wrong in (said("self.main[2]", "Dropout", 17), said("self.main[1]", "Dropout", 18),
                  said("self.main[2]", "ReLU", 18)):
        assert [w for w in unsupported(wrong, report) if "made" in w], wrong
