"""In a notebook (a real kernel, run as the book's notebooks run): the diagnosis names places as
the reader knows them (``In [4], line 3``, never the kernel's temporary file), the earlier
backward by the run of the cell that made it, the edit as a change of the cell's lines, and the
traceback holds no frame of autograd_lens, with or without a debugger's trace function."""

import re

import nbformat
import pytest
from nbclient import NotebookClient

_ANSI = re.compile(r"\x1b\[[0-9;]*m")

SETUP = "import sys\nimport torch\nimport autograd_lens as al\ntorch.manual_seed(0)\n%load_ext autograd_lens"
FORWARD = "w = torch.randn(3, requires_grad=True)\nloss = (w.exp() * w).sum()"
BACKWARD = "loss.backward()"  # run twice: the second run fails
STATE = "W = torch.randn(4, 4, requires_grad=True)\nh = torch.zeros(4)"
STEP = "x = torch.randn(4)\nh = torch.tanh(W @ h + x)\nloss = h.pow(2).sum()\nloss.backward()"
TRACED = """\
import contextlib
events = []
def tracer(frame, event, arg):
    events.append((frame.f_code, event))
    return tracer
def step(guard):
    w = torch.randn(3, requires_grad=True)
    loss = (w * w).sum()
    loss.backward()
    with guard:
        loss.backward()
def traced(guard):
    events.clear()
    sys.settrace(tracer)   # as a debugger does
    try:
        step(guard)
    except RuntimeError as error:
        caught = error
    sys.settrace(None)   # before reading the events: reading them would add to them
    # The events of the frames on the way from step to torch's engine (the guard's wrapper
    # sits below the last of them).
    watched = (step.__code__, torch.Tensor.backward.__code__, torch.autograd.backward.__code__)
    return [(code.co_name, event) for code, event in events if code in watched], caught
%unload_ext autograd_lens
plain_events, _ = traced(contextlib.nullcontext())
guarded_events, guarded_error = traced(al.diagnose_on_error())
raise guarded_error"""
AFTER_TRACED = ('print("the debugger saw the same events:", guarded_events == plain_events, '
                '"| exceptions among them:", sum(e == "exception" for _, e in plain_events))')
# Before the edited cell: a known state, and the x its first line will draw.
BEFORE_EDIT = """\
W.grad = None
h_before = h.detach().clone()
torch.manual_seed(1)
x_seen = torch.randn(4)
torch.manual_seed(1)"""
CHECK_EDIT = """\
h_new = torch.tanh(W.detach() @ h_before + x_seen)
by_hand = torch.outer(2 * h_new * (1 - h_new ** 2), h_before)
print("gradient as derived by hand:", torch.allclose(W.grad, by_hand, atol=1e-6),
      "| state carried on:", torch.allclose(h, h_new, atol=1e-6))"""

CELLS = [SETUP, FORWARD, BACKWARD, BACKWARD, STATE, STEP, STEP]


def _run(sources: list[str]) -> list:
    notebook = nbformat.v4.new_notebook()
    notebook.cells = [nbformat.v4.new_code_cell(source) for source in sources]
    NotebookClient(notebook, timeout=120, kernel_name="python3", allow_errors=True).execute()
    return notebook.cells


def _error(cell) -> tuple[str, str]:
    """(the traceback's frames, the error's message) of a cell that raised."""
    [error] = [o for o in cell.outputs if o.output_type == "error"]
    frames = "\n".join(_ANSI.sub("", line) for line in error.traceback[:-1])
    return frames, error.evalue


@pytest.fixture(scope="module")
def cells():
    """The cells above; then, in a second kernel, the same cells, the carried state's cell with
    the printed edit applied (from a known state, its gradient checked by hand), and a
    debugger's trace function around diagnose_on_error."""
    first = _run(CELLS)
    message = _error(first[6])[1]
    second = _run(CELLS + [BEFORE_EDIT, _edited(STEP, message), CHECK_EDIT, TRACED, AFTER_TRACED])
    return first, message, second


def _edited(source: str, message: str) -> str:
    """The cell's lines with the diff printed in ``message`` applied (one hunk); unchanged
    when there is no diff."""
    if "\n@@ " not in message:
        return source
    diff = message[message.index("@@ "):].splitlines()
    start = int(re.match(r"@@ -(\d+)", diff[0]).group(1))
    lines = source.splitlines()
    new, at = [], start - 1
    for row in diff[1:]:
        if row.startswith("+"):
            new.append(row[1:])
        elif row.startswith(" "):
            assert lines[at] == row[1:], (lines[at], row)
            new.append(row[1:])
            at += 1
        else:
            break
    return "\n".join(lines[:start - 1] + new + lines[at:])


def _text(cell) -> str:
    assert not [o for o in cell.outputs if o.output_type == "error"]
    return "".join(o.get("text", "") for o in cell.outputs)


def test_a_cell_run_twice_names_each_run(cells):
    first, _, _ = cells
    assert first[3].execution_count == first[2].execution_count + 1
    frames, message = _error(first[3])
    now, before = first[3].execution_count, first[2].execution_count
    assert (f"  loss  In [{now}], line 1 in <module>: holds a graph that the backward at "
            f"In [{before}], line 1 already went through") in message
    assert "ipykernel" not in message and not re.search(r"\d+\.py:\d", message)
    assert "cell:" not in message


def test_a_state_carried_across_cells_is_named_and_the_edit_is_the_cells(cells):
    first, message, _ = cells
    now, before = first[6].execution_count, first[5].execution_count
    assert (f"  h  In [{now}], line 2 in <module>: is read here before it is assigned, so it "
            f"brings in a graph that the backward at In [{before}], line 4 already went "
            "through.") in message
    assert (f"The fix as an edit of your cell (") in message
    assert (f"--- In [{now}]\n+++ In [{now}] (fixed)\n@@ -1,2 +1,3 @@\n x = torch.randn(4)\n"
            "+h = h.detach()\n h = torch.tanh(W @ h + x)\n") in message + "\n"
    assert "ipykernel" not in message and "/tmp" not in message


def test_the_edited_cell_runs_and_its_gradient_is_the_hand_derived_one(cells):
    _, _, second = cells
    _text(second[len(CELLS) + 1])  # the edited cell: no error
    assert _text(second[len(CELLS) + 2]) == \
        "gradient as derived by hand: True | state carried on: True\n"


def test_no_frame_of_autograd_lens_in_the_traceback(cells):
    first, _, second = cells
    for cell in (first[3], first[6], second[len(CELLS) + 3]):
        frames, _ = _error(cell)
        assert not re.search(r"autograd_lens[/\\]", frames), frames  # no file of the package
        assert "skipping hidden" not in frames


def test_a_debuggers_trace_function_sees_every_event_it_would_see_without_the_guard(cells):
    _, _, second = cells
    assert _text(second[len(CELLS) + 4]) == \
        "the debugger saw the same events: True | exceptions among them: 3\n"
