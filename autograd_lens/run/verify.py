"""Verification: each candidate edit run before it is called the fix.

After a failure, every edit the fixes give is applied to a copy of the program and run in the
sandbox (:mod:`autograd_lens.run.sandbox`: a temporary copy of the program's folder, writes outside
it and the network refused), each in a new process forked from one that was started with the
first run (``Rerun``: it copies the folder and imports torch while the first run goes on, so
a run starts in milliseconds; it runs the first edits beside the replay, see
:class:`autograd_lens.text.edit_runs.Ahead`). A run has the first run's arguments and environment, no
input (stdin is empty), the edited files in place of the originals, and the same watch. It stops
once the backward call that failed and :data:`MORE_CALLS` more have run (or the program made
:data:`MORE_CALLS` + 1 optimizer steps past the step that failed), or when the program ends,
or at its bound in time; then it ends at once, without the program's ``atexit`` handlers.

An edit *holds* (:func:`verdict` ``"gone"``) when its run got past the point that failed without an
error, and every parameter that the failing call would have reached and that an optimizer alive at
the failure updates (in a program without an optimizer, every one it would reach that the program
has written in place by then, a weight updated by hand, or every one it would reach when it wrote
none) still gets a gradient in some call past that point (parameters named by their module and
shape, see :mod:`autograd_lens.run.reached`): a run at its limit goes on until each optimizer that
updates one of them has stepped past the failing call (a generator trained by a loss of its own
after the critic's calls), for at most as many calls and steps again as the first run made up to
its failure, and 20 more. A gradient of zeros alone does not count (two terms that cancel train
nothing); at an optimizer's step any gradient held counts, zeros too: a critic's last bias under
``d_fake - d_real`` holds exactly zero at the critic's step in the program as written. A parameter
that no optimizer updates may lose its gradient, and so may one whose optimizers all stay idle past
that point while another steps (an autoencoder trained first, whose optimizer is still alive when a
flow is fitted on its codes): the run's text names it ("the edit stops gradients into ..."). One
that an optimizer steps past that point counts only if it holds a gradient when that optimizer
steps (a generator that gets one only from the critic's loss, after its own step, has it cleared by
its next ``zero_grad()``). With an optimizer, "every parameter" also takes in those an optimizer
has stepped with a gradient before the failure (it keeps a state for them) that the failing graph
does not show (read inside a checkpointed region, whose graph is built only when its backward
runs). "Past the point" is counted in backward calls, or, for an edit that merges backward calls
into one (fewer calls per step), in optimizer steps: the run passes the step that failed and ends
by itself or makes more steps; a program without optimizer steps whose edit merges backward calls
(:func:`merges`) is past the point when it made its merged call and ended by itself without an
error.

What a run that holds proves: the edited program gets past the failure, keeps training the same
parameters, without an error. It does not prove that the edited program computes what its
author meant; each pattern's proof programs (in the tests) compare the gradient of the edit with
an independent reference.
"""

from __future__ import annotations

import json
import linecache
import os
import subprocess
from typing import Any

from ..source.edits import Edit, apply, by_file
from .counting import MORE_CALLS
from .rerun import Rerun

def bound(seconds_to_failure: float) -> float:
    """How long the re-run may take, in seconds, from the moment its process is ready: three
    times the first run's time to the failure, and a minute more (a busier machine)."""
    return 3 * seconds_to_failure + 60


def verify(edits: list[Edit], module: str | None, target: list[str], calls_before: int,
           rerun: Rerun | None = None, seconds: float | None = None,
           expected: dict[str, int] | None = None, steps_before: int | None = None,
           unstepped: dict[str, int] | None = None, by_hand: bool = False) -> dict:
    """Run the program with ``edits`` applied, in the sandbox (``rerun``'s, if one was started
    before the first run; else a new one, closed after); ``calls_before``: the calls that
    returned before the one that failed; ``steps_before``: the optimizer steps made before it
    (None: not counted); ``expected``: the names of the parameters the failing call would reach
    that an optimizer updates (None: not compared), ``unstepped``: those it would reach that no
    optimizer updates, None when the program has no optimizer (``by_hand``: it has none, and
    ``expected`` are those the program wrote in place, updated by hand); ``seconds``: the
    bound, after which the run is stopped. Returns
    ``{"ran", "backward_calls", "error"}`` and ``"steps"``, ``"ended"`` (the program ended by
    itself), ``"missing"`` (parameters of ``expected`` that got no gradient in any call
    past the failure), ``"untrained"`` (those of ``unstepped`` that got none),
    ``"refused"`` (what the sandbox refused, if that ended the run), and, for :func:`verdict`,
    ``"same_error"``: whether its error is the freed-graph or in-place error again.
    :func:`start_verify` and :func:`finish_verify` do the same in two halves (the run goes on
    between them)."""
    return finish_verify(start_verify(edits, module, target, calls_before, rerun, seconds,
                                      expected, steps_before, unstepped, by_hand))


class Started:
    """A run of edits started by :func:`start_verify`: ``rerun`` runs it as run ``run``
    (None: it could not start), writing ``result``; ``own``: ``rerun`` was started for it
    alone (closed when it ends)."""

    def __init__(self, rerun: Rerun, run: int | None, result: str, seconds: float | None,
                 steps_before: int | None, merges: bool, own: bool) -> None:
        self.rerun, self.run, self.result, self.seconds = rerun, run, result, seconds
        self.steps_before, self.merges, self.own = steps_before, merges, own

    def done(self) -> bool:
        return self.rerun.done(self.run)


def start_verify(edits: list[Edit], module: str | None, target: list[str], calls_before: int,
                 rerun: Rerun | None = None, seconds: float | None = None,
                 expected: dict[str, int] | None = None,
                 steps_before: int | None = None,
                 unstepped: dict[str, int] | None = None,
                 by_hand: bool = False) -> Started | dict:
    """Start the run of ``edits`` (as :func:`verify`) and return at once: the run, for
    :func:`finish_verify`, or the result already (no edit to run)."""
    if not edits:
        return {"ran": False, "backward_calls": 0, "error": "no edit was derived to run"}
    own = rerun is None
    rerun = rerun or Rerun()
    try:
        place = os.path.join(rerun.folder, f"edits_{rerun.runs}")
        os.makedirs(place, exist_ok=True)
        files = {}
        for index, (file, group) in enumerate(by_file(edits).items()):
            copy = os.path.join(place, f"{index}_{os.path.basename(file)}")
            with open(copy, "w", encoding="utf-8") as handle:
                handle.writelines(apply(group, linecache.getlines(file)))
            files[os.path.abspath(file)] = copy
        result = os.path.join(place, "result.json")
        spec = {"files": files, "module": module, "target": target,
                "limit": calls_before + 1 + MORE_CALLS, "result": result,
                "watch_from": calls_before}
        if steps_before is not None:
            spec.update(step_limit=steps_before + 2 + MORE_CALLS, steps_from=steps_before)
        if expected is not None:
            spec["expected"] = expected
            spec["unstepped"] = unstepped
            spec["by_hand"] = by_hand
        run = rerun.start(spec, seconds)
    except BaseException:
        if own:
            rerun.close()
        raise
    return Started(rerun, run, result, seconds, steps_before, merges(edits), own)


def finish_verify(started: Started | dict, poll: Any = None) -> dict:
    """Wait for the run that :func:`start_verify` started (``poll`` called meanwhile, as in
    :meth:`Rerun.wait`) and return its result (see :func:`verify`)."""
    if isinstance(started, dict):
        return started
    try:
        try:
            stderr = started.rerun.wait(started.run, poll)
        except subprocess.TimeoutExpired:
            return {"ran": False, "backward_calls": 0,
                    "error": f"stopped after {started.seconds:.0f} s, the bound on the run"}
        if not os.path.exists(started.result):
            last = (stderr.strip().splitlines() or ["no output"])[-1]
            return {"ran": False, "backward_calls": 0, "error": f"the run did not finish: {last}"}
        with open(started.result, encoding="utf-8") as handle:
            found = json.load(handle)
        found["steps_before"] = started.steps_before
        if started.merges:
            found["merges"] = True
        return found
    finally:
        if started.own:
            started.rerun.close()


def merges(edits: list[Edit]) -> bool:
    """Whether ``edits`` leave fewer backward calls than they replace (one backward of a sum
    in place of two)."""
    def calls(lines: Any) -> int:
        return sum(line.count(".backward(") + line.count("autograd.grad(") for line in lines)
    return calls(line for e in edits for line in e.new) < calls(e.old for e in edits)


def _reached(verified: dict, calls_before: int) -> bool:
    """Whether the run got past the point that failed: past the failing call and the calls
    after it, or (an edit with fewer backward calls per step) past the step that failed, then
    ended by itself or made more steps."""
    if verified["backward_calls"] > calls_before + MORE_CALLS:
        return True
    if verified["backward_calls"] > calls_before and (verified.get("stopped") or
                                                      verified.get("ended")):
        return True  # past the failing call, then stopped or at the program's end
    before = verified.get("steps_before")
    if before is None:
        return verified["backward_calls"] > calls_before
    steps = verified.get("steps", 0)
    if steps > before + MORE_CALLS or (steps > before and verified.get("ended", False)) or \
            (verified["backward_calls"] > calls_before and steps > before):
        return True
    # An edit that merges backward calls (one backward of a sum) and a program without steps
    # past the failure: it ran its merged call and went on to its own end.
    return bool(verified.get("merges")) and verified.get("ended", False) and \
        verified["backward_calls"] >= 1 and steps >= before


def verdict(verified: dict, calls_before: int) -> str:
    """What the re-run shows: "gone" (it got past the point that failed without an error, the
    same parameters still getting gradients), "still_fails" (the same kind of error again),
    "lost_gradients" (past the point, but parameters the failing call would reach get no
    gradient), "refused" (the sandbox refused what the program needed: it shows nothing about
    the edit), "not_reached" (it ended cleanly before the point that failed: it shows nothing),
    "other_error" (another error), "not_run"."""
    if not verified["ran"]:
        return "not_run"
    if verified.get("refused"):
        return "refused"
    if verified["error"] and verified.get("same_error", True):
        return "still_fails"
    if verified["error"]:
        return "other_error"
    if not _reached(verified, calls_before):
        return "not_reached"
    return "lost_gradients" if verified.get("missing") else "gone"


HOLDS = ("gone",)
FAILED = ("still_fails", "other_error", "lost_gradients")


def announce(calls_before: int, seconds: float, runs: int = 1) -> str:
    """The line said before re-runs that repeat a long healthy phase (10 calls or more)."""
    if calls_before < 10:
        return ""
    edits = "the suggested edit" if runs == 1 else f"each of the {runs} suggested edits"
    return (f"\nautograd_lens: running the program again with {edits} in a sandbox: each run "
            f"repeats the {calls_before} backward calls that ran before the one that failed "
            f"(stopped after {seconds:.0f} s at most).\n")


def happened(verified: dict, calls_before: int) -> str:
    """What the run of one edit showed, as a clause."""
    said = verdict(verified, calls_before)
    count = verified["backward_calls"]
    calls = "1 backward call" if count == 1 else f"{count} backward calls"
    if said == "not_run":
        return f"it could not run ({verified['error']})"
    if said == "refused":
        return f"not checked: {verified['refused']}"
    if said == "still_fails":
        return f"it still fails, after {calls}: {verified['error']}"
    if said == "other_error":
        return f"it stopped on another error, after {calls}: {verified['error']}"
    stepped = "untrained" in verified  # the program had an optimizer at the failure
    # Without an optimizer, what counts is what was written in place before the failure (a
    # weight updated by hand; torch.compile's own writes too): what the version counters show.
    updates = (" and that {} written in place before it" if verified.get("by_hand") else
               " and an optimizer updates" + (" past that point" if verified.get("idle") else "")
               ) if stepped else ""
    if said == "lost_gradients":
        lost, before = verified["missing"], " (or that an optimizer trained before it)"
        return (f"past the call that failed, but {len(lost)} parameter"
                f"{'s' if len(lost) != 1 else ''} that the failing call would reach"
                f"{before if stepped and not verified.get('by_hand') else ''}"
                f"{updates.format('was' if len(lost) == 1 else 'were')} no longer "
                f"get{'s' if len(lost) == 1 else ''} a gradient (other than zeros) in any call "
                "past it (held when an optimizer that updates it steps): "
                f"{_names(lost)}")
    if said == "not_reached":
        return (f"not checked: the run ended after {calls}, before reaching the point that "
                f"failed (the first run's call {calls_before + 1}); the re-run reads no input "
                "(stdin is empty)")
    steps = verified.get("steps", 0)
    past = f"{calls}" + (f" and {steps} optimizer step{'s' if steps != 1 else ''}" if steps else "")
    said = (f"{past} ran without an error, past the point that failed, every parameter that "
            f"the failing call would reach{updates.format('was')} "
            "still getting a gradient")
    idle = verified.get("idle") or []
    if idle:
        said += (f"; the edit stops gradients into {_names(idle)}, which no optimizer updated "
                 "past that point (the program no longer trains it there)")
    untrained = verified.get("untrained") or []
    if untrained:
        said += (f"; the edit stops gradients into {_names(untrained)}, which " +
                 ("the program does not update" if verified.get("by_hand") else
                  "no optimizer updates"))
    return said


def _names(names: list[str]) -> str:
    return ", ".join(names[:4]) + (f" and {len(names) - 4} more" if len(names) > 4 else "")


def describe(verified: dict, calls_before: int) -> str:
    """One paragraph for the text report about one run (see :func:`happened`)."""
    return f"autograd_lens: ran the suggested edit: {happened(verified, calls_before)}."
