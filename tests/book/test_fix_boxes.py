"""Every scenario page's fix box, run as shown.

A scenario page opens with its fix as a diff (the Markdown cell tagged ``fix-box``). This file
takes that diff, applies it to the page's failing code, runs the program the code becomes, and
compares its gradients with a reference computed independently, as the page's proof does.

The failing code is the page's own: the cells named in ``BOXES`` (joined in order, cut after the
``until`` line when the cell goes on to assert the failure), run after every code cell the page
has before them (quizzes left out), in one fresh IPython namespace per page.

Applying a box. The box's old side (context and ``-`` lines) must occur in the failing code in
order, compared without comments and trailing blanks, with one indentation shift for the whole
box (a box may show a loop body without its indentation). The page's lines from the first to the
last matched line are replaced by the box's new side (context and ``+`` lines) exactly: a line of
the page that sits between two lines of the box and is not shown in it is gone, as it would be for
a reader who types the box in. So a box that is right only with a line it does not show (the
``opt.zero_grad()`` between a step and a backward, say) fails here, with the hidden line named.
No patch library is in the environment; the applier is the few lines of ``apply_box``.

Wrong fixes. Each wrong fix a page's "Wrong fix" section runs (``WRONG_FIXES``, by the section's
label) is written here as a diff of the same failing code, applied and run the same way: it must
fail with the error the page shows, or run and fail the page's reference check (mis-train).

One Python process runs every page (torch imported once), each in a fresh IPython namespace, as
the student-copy test does.
"""

from __future__ import annotations

import ast
import json
import os
import re
import subprocess
import sys
from dataclasses import dataclass

import nbformat
import pytest

from nbtools import NOTEBOOKS, RAISES

FIX_BOX_TAG = "fix-box"
QUIZ_TAG = "quiz"


@dataclass(frozen=True)
class Box:
    """Where a page's box applies and how its result is checked.

    ``cells``: the ids of the page's cells that make the failing code, in order. ``until``: the
    failing code ends at the first line, at or after the box's match, equal to this one (without
    comments); None keeps the cells whole. ``check``: run after the program; asserts that the
    gradients equal the page's reference. ``needs``: names of functions or classes the page defines
    in later cells (its references), defined before the check. ``prelude``: the ids of the cells
    to run first, when not all the code cells before the failing code (21 runs the command first).
    """
    cells: tuple[str, ...]
    check: str
    until: str | None = None
    needs: tuple[str, ...] = ()
    prelude: tuple[str, ...] | None = None


BOXES = {
    "01_backward_twice": Box(
        cells=("a9d4714a", "b2f8443c"), needs=("reference_grad",),
        # No zero_grad in the box: after the two passes .grad holds the sum of both gradients.
        check="assert torch.allclose(w.grad, 2 * reference_grad(w.detach()))"),
    "02_two_losses_one_forward": Box(
        cells=("4b9f155e", "7fe2e29f"),
        needs=("reference_total_loss", "reference_grads", "grads_of", "assert_matches_reference"),
        check="reference = reference_grads(reference_total_loss)\n"
              "assert_matches_reference(grads_of(model))"),
    "03_two_losses_two_forwards": Box(
        cells=("4cbb915b",), needs=("reference_views",),
        check="assert task_meter.alive_bytes == 0\n"
              "fresh = {k: v.detach().clone().requires_grad_() for k, v in params.items()}\n"
              "expected = torch.autograd.grad(reference_views(fresh), list(fresh.values()))\n"
              "assert all(torch.allclose(p.grad, e, atol=1e-6) for p, e in zip(params.values(), expected))"),
    "04_two_networks": Box(
        cells=("bc372de1", "b9f6b9ab"),
        check="assert_grads(net1, reference_grads(net1, lambda p: ((linear_tanh(p, x) - t1) ** 2).mean()))\n"
              "h_data = net1(x).detach()\n"
              "assert_grads(net2, reference_grads(net2, lambda p: ((linear_tanh(p, h_data) - t2) ** 2).mean()))"),
    "05_rnn_hidden_state": Box(
        cells=("97f6e385",),
        # The reference: each batch's gradient from a copy of the model on its chunk, with the state
        # carried under no_grad as a constant, and the SGD step written by hand.
        check="""
ref = Tagger()
state = None
for b in range(BATCHES):
    xb, yb = chunk(b)
    copy_ = copy.deepcopy(ref)
    pred_, _ = copy_(xb, state)
    grads = torch.autograd.grad(F.mse_loss(pred_, yb), list(copy_.parameters()))
    with torch.no_grad():
        _, state = ref(xb, state)
        for p, g in zip(ref.parameters(), grads):
            p -= 0.05 * g
assert all(torch.allclose(p, q, atol=1e-5) for p, q in zip(model.parameters(), ref.parameters()))
"""),
    "06_accumulating_loss": Box(
        cells=("eb4a617e",),
        check="""
ref = make_model()
for step in range(3):
    xb, yb = batch(step)
    grads = torch.autograd.grad(mse(ref(xb), yb), list(ref.parameters()))
    with torch.no_grad():
        for p, g in zip(ref.parameters(), grads):
            p -= 0.05 * g
assert all(torch.allclose(p, q, atol=1e-6) for p, q in zip(model.parameters(), ref.parameters()))
assert isinstance(total, float)
"""),
    "07_zero_grad": Box(
        cells=("f2b8c326",), until="missing = train(40, zero_grad=False)",
        # The closed-form gradient of each step, at the weights of that step, stepped by hand.
        check="""
ref, _ = make_model()
w, b = ref.weight.detach().clone(), ref.bias.detach().clone()
expected = []
for _ in range(40):
    expected.append(F.mse_loss(X @ w.T + b, y).item())
    ref.weight.data, ref.bias.data = w, b
    g_w, g_b = true_grads(ref)
    w, b = w - 0.1 * g_w, b - 0.1 * g_b
assert torch.allclose(torch.tensor(missing), torch.tensor(expected), rtol=1e-4, atol=1e-6)
"""),
    "08_retain_step_backward": Box(
        cells=("fd4b2f59", "3a9bf1f9"), needs=("mlp_grads",),
        check="expected = mlp_grads(*[p.detach().clone() for p in net.parameters()])\n"
              "assert all(torch.allclose(p.grad, g, atol=1e-6) for p, g in zip(net.parameters(), expected))"),
    "09_reusing_stored_gradients": Box(
        cells=("63b633b6",), until="optimizer.step()",
        check="g_w, g_b = closed_form_grads(w0, b0)\n"
              "w1, b1 = w0 - lr * g_w, b0 - lr * g_b\n"
              "h_w, h_b = closed_form_grads(w1, b1)\n"
              "assert torch.allclose(model.weight, w1 - lr * h_w, atol=1e-6)\n"
              "assert torch.allclose(model.bias, b1 - lr * h_b, atol=1e-6)"),
    "10_detach": Box(
        cells=("00f1a51d", "8057ad10", "940a1a6c"),
        check="s = torch.sigmoid(x @ W.detach())\n"
              "assert torch.equal(h, s)\n"
              "assert torch.allclose(W.grad, x.T @ (s * (1 - s)), atol=1e-6)"),
    "11_higher_order_gradients": Box(
        cells=("3e79d5de",), needs=("critic_fn", "penalty_fn"),
        check="""
detached = {k: v.detach() for k, v in params.items()}
points = between.detach()
def failing_cell_loss(p):
    return (critic_fn(p, fake).mean() - critic_fn(p, real).mean() + LAMBDA * penalty_fn(p, points)
            + 0.1 * critic_fn(p, points).mean())
expected = grad(failing_cell_loss)(detached)
for name, p in params.items():
    assert torch.allclose(p.grad, expected[name], atol=1e-5), name
"""),
    "12_gan_discriminator": Box(
        cells=("4fe23c3a", "7a96bed1"), needs=("reference_d_grads", "reference_g_grads"),
        # D's .grad also holds the generator loss's gradient by now: the D step is checked by the
        # weights it reached, one SGD step (lr 0.1) from the start along the page's reference.
        check="""
G_start, D_start = make_gan()
assert all(torch.equal(p, q) for p, q in zip(G.parameters(), G_start.parameters()))
d_expected = reference_d_grads(G_start, D_start)
assert all(torch.allclose(p, q - 0.1 * e) for p, q, e in zip(D.parameters(), D_start.parameters(), d_expected))
g_expected = reference_g_grads(G, D)
assert all(torch.allclose(p.grad, e, atol=1e-7) for p, e in zip(G.parameters(), g_expected))
"""),
    "13_tensor_outside_loop": Box(
        cells=("943f9b3b", "167f59d8"), needs=("reference_grads",),
        check="""
ref_encoder, ref_head = make_models()
for step in range(3):
    grads = reference_grads(ref_encoder, ref_head)
    with torch.no_grad():
        for p, g in zip(list(ref_encoder.parameters()) + list(ref_head.parameters()), grads):
            p -= 0.1 * g
ours = list(encoder.parameters()) + list(head.parameters())
theirs = list(ref_encoder.parameters()) + list(ref_head.parameters())
assert all(torch.allclose(p, q, atol=1e-6) for p, q in zip(ours, theirs))
"""),
    "14_grad_then_backward": Box(
        cells=("b008071b", "21812200"), needs=("loss_of",),
        check="""
detached = {k: v.detach() for k, v in params.items()}
ref_params, ref_x = grad(loss_of, argnums=(0, 1))(detached, x.detach())
assert torch.allclose(x_grad, ref_x, atol=1e-6)
for name, p in net.named_parameters():
    assert torch.allclose(p.grad, ref_params[name], atol=1e-6), name
"""),
    "15_rl_buffers": Box(
        cells=("41183a06", "b4368027"), needs=("RecordingAgent", "closed_form_grad"),
        # The same two episodes replayed by an agent that records its observations and actions; the
        # second update's gradient by the closed form of the policy gradient.
        check="""
ref = RecordingAgent()
ref.trace = []
run_episode(ref)
ref.zero_grad()
reinforce_loss(ref).backward()
sgd_step(ref)
ref.trace, ref.saved_log_probs, ref.rewards = [], [], []
run_episode(ref)
assert torch.equal(ref.policy.weight, agent.policy.weight)
expected = closed_form_grad(ref.policy, ref.trace, ref.rewards)
assert torch.allclose(agent.policy.weight.grad, expected, atol=1e-5)
"""),
    "16_module_state_with_history": Box(
        cells=("70045a2e", "1ef91495"),
        # Two steps by hand, the centre a constant: the gradient of the second step's loss.
        check="""
start = CenteredHead()
W, bias = start.proj.weight.detach().clone(), start.proj.bias.detach().clone()
out = batches[0] @ W.T + bias
residual = out - target
center = 0.1 * out.mean(0)
W = W - 0.1 * 2 / residual.numel() * residual.T @ batches[0]
bias = bias - 0.1 * 2 / residual.numel() * residual.sum(0)
residual = batches[1] @ W.T + bias - center - target
expected_W = 2 / residual.numel() * residual.T @ batches[1]
assert torch.allclose(head.proj.weight.grad, expected_W, atol=1e-6)
assert head.center.grad_fn is None
"""),
    "17_custom_function": Box(
        cells=("a067a587", "8b35e5cf"), needs=("reference_grad",),
        check="assert torch.allclose(x.grad, 2 * reference_grad(x))"),
    "18_checkpoint": Box(
        cells=("fd08ea00", "0176815c"),
        check="""
ref_copy = copy.deepcopy(Net(use_reentrant=None))
reference = torch.autograd.grad(((ref_copy(x) - y) ** 2).mean(), list(ref_copy.parameters()))
assert all(torch.allclose(p.grad, 2 * r, atol=1e-6) for p, r in zip(reentrant.parameters(), reference))
"""),
    "19_inspecting_after_backward": Box(
        cells=("1a9d8832", "9e747920"),
        check="assert torch.allclose(w.grad, 2 / len(X) * X.T @ (X @ w.detach() - y), atol=1e-6)"),
    "20_meta_learning": Box(
        cells=("dd739318",),
        check="""
def failing_cell_loss(w):
    support, query = tasks[0]
    inner_grad = grad(task_loss)(w, support)
    adapted = {k: w[k] - INNER_LR * inner_grad[k] for k in w}
    return task_loss(adapted, query) + 0.1 * task_loss(w, support)
assert matches(grad(failing_cell_loss)(detached))
"""),
    "21_debugging_your_loop": Box(
        cells=("95d47f0f",), prelude=("8501c8f1", "79dd6f01"),
        # Each chunk's gradient from a copy of the model, the state carried under no_grad, the
        # style vector recomputed; the SGD step written by hand.
        check="""
model, opt = fresh_model()
train_buggy(model, opt, CHUNKS)
ref, _ = fresh_model()
h_ref = torch.zeros(1, BATCH, HID)
for x, y in chunks():
    copy_ = copy.deepcopy(ref)
    logits, _ = copy_(x, h_ref, torch.tanh(copy_.style(STYLE_INPUT)))
    loss = F.cross_entropy(logits.reshape(-1, VOCAB), y.reshape(-1))
    grads = torch.autograd.grad(loss, list(copy_.parameters()))
    with torch.no_grad():
        _, h_ref = ref(x, h_ref, torch.tanh(ref.style(STYLE_INPUT)))
        for p, g in zip(ref.parameters(), grads):
            p -= 0.5 * g
assert all(torch.allclose(p, q, atol=1e-5) for p, q in zip(model.parameters(), ref.parameters()))
"""),
    "22_no_error_wrong_gradient": Box(
        cells=("93ad68e7",), until="loss.backward()",
        check="assert same([p.grad for p in net.parameters()], mlp_grads(*weights(net)))"),
}


@dataclass(frozen=True)
class Wrong:
    """A wrong fix a page shows, as a diff of the same failing code, and what the page says it
    does: ``fails`` with the error of that kind ("freed", "modified", or "no graph" for a backward
    from a tensor that has none), or ``mistrains``: it runs, and the page's reference check fails."""
    section: str
    diff: tuple[str, ...]
    fails: str | None = None
    mistrains: bool = False


RETAIN_ON = lambda line, indent="": (f"-{indent}{line}", f"+{indent}{line[:-1]}retain_graph=True)")

# The wrong fixes of the pages' "Wrong fix" sections (the label of each), run on the code the
# page's fix box is run on. A wrong fix the page calls right but costly (12's retain_graph=True in
# the discriminator step, 02's two backward calls with retain_graph) is not here: its gradient
# is right, and its cost is measured on the page.
WRONG_FIXES = {
    "01_backward_twice": (
        Wrong("01-wrong-fixes", (" loss.backward()", "-loss.backward()", "+loss.detach().backward()"),
              fails="no graph"),
        Wrong("01-wrong-fixes", (" loss.backward()", "-loss.backward()",
                                 "+loss.backward(retain_graph=True)"), fails="freed"),
    ),
    "04_two_networks": (
        Wrong("04-wrong-fix", RETAIN_ON("loss2.backward()"), fails="freed"),
    ),
    "05_rnn_hidden_state": (
        Wrong("05-retain-inplace", RETAIN_ON("loss.backward()", "    "), fails="modified"),
    ),
    "06_accumulating_loss": (
        Wrong("06-wrong-fixes", RETAIN_ON("total.backward()", "    "), fails="modified"),
    ),
    "08_retain_step_backward": (
        Wrong("08-wrong-fixes", RETAIN_ON("loss.backward()"), fails="modified"),
    ),
    "10_detach": (
        Wrong("10-detach-backward", ("-h.sum().backward()", "+h.sum().detach().backward()"),
              fails="no graph"),
    ),
    "11_higher_order_gradients": (
        Wrong("11-penalty-constant", ("-(g,) = torch.autograd.grad(scores.sum(), between)",
                                      "+(g,) = torch.autograd.grad(scores.sum(), between, retain_graph=True)"),
              mistrains=True),
    ),
    "13_tensor_outside_loop": (
        Wrong("13-wrong-fix-retain", RETAIN_ON("loss.backward()", "    "), mistrains=True),
    ),
    "14_grad_then_backward": (
        Wrong("14-wrong-fixes", RETAIN_ON("loss.backward()"), fails="freed"),
    ),
    "15_rl_buffers": (
        Wrong("15-wrong-fix-retain-buffer", (" agent.zero_grad()", "-reinforce_loss(agent).backward()",
                                             "+reinforce_loss(agent).backward(retain_graph=True)",
                                             " sgd_step(agent)"), mistrains=True),
    ),
    "16_module_state_with_history": (
        Wrong("16-wrong-fix-retain", (" loss = ((head(batches[0]) - target) ** 2).mean()",
                                      *RETAIN_ON("loss.backward()")), mistrains=True),
    ),
    "20_meta_learning": (
        Wrong("20-wrong-fixes", ("-grads = torch.autograd.grad(inner, list(params.values()))",
                                 "+grads = torch.autograd.grad(inner, list(params.values()), retain_graph=True)"),
              mistrains=True),
    ),
    "21_debugging_your_loop": (
        Wrong("21-retain-with-step", RETAIN_ON("loss.backward()", "        "), fails="modified"),
    ),
    "22_no_error_wrong_gradient": (
        Wrong("22-wrong-fixes", ("+torch.autograd.set_detect_anomaly(True)", " loss = mse(net(x), y)"),
              mistrains=True),
    ),
}


# Boxes these pages once showed, right only with a line they did not show (the page's
# opt.zero_grad() between the step and the second backward): typed in as shown, .grad holds the
# old gradient plus the new one. The test must keep failing them.
HID_A_LINE = {
    "08_retain_step_backward": (" loss.backward(retain_graph=True)", " opt.step()", "-loss.backward()",
                                "+loss = F.mse_loss(net(x), y)   # a fresh forward at the new weights",
                                "+loss.backward()"),
    "22_no_error_wrong_gradient": (" loss.backward(retain_graph=True)",
                                   " opt.step()                # fused=True: no version bump",
                                   "-loss.backward()",
                                   "+loss = mse(net(x), y)     # a forward pass after the change",
                                   "+loss.backward()"),
}


def error_kind(message: str) -> str | None:
    if "backward through the graph a second time" in message:
        return "freed"
    if "modified by an inplace operation" in message:
        return "modified"
    if "does not require grad and does not have a grad_fn" in message:
        return "no graph"
    return None


# --- reading a page ---------------------------------------------------------------------------

def code_part(line: str) -> str:
    """The line without its comment and trailing blanks (a ``#`` inside a string is kept)."""
    quote = None
    for i, ch in enumerate(line):
        if quote:
            if ch == quote:
                quote = None
        elif ch in "'\"":
            quote = ch
        elif ch == "#":
            return line[:i].rstrip()
    return line.rstrip()


def box_diff(nb) -> list[str]:
    """The lines of the diff in the page's fix box."""
    cells = [c for c in nb.cells if FIX_BOX_TAG in c.metadata.get("tags", [])]
    assert len(cells) == 1, "one fix box per page"
    found = re.search(r"```diff\n(.*?)\n```", cells[0].source, re.S)
    assert found, "the fix box holds a ```diff block"
    lines = found.group(1).splitlines()
    assert lines and all(l[:1] in " +-" and l for l in lines), f"not a diff: {lines}"
    return lines


class BoxDoesNotApply(AssertionError):
    pass


def indent(line: str) -> int:
    return len(line) - len(line.lstrip(" "))


def apply_box(diff: list[str], code: list[str]) -> tuple[list[str], list[str], int]:
    """Apply the box's diff to ``code``. Returns (new code, the page lines the box hides, the index
    in the new code of the line after the box's new side)."""
    old = [l[1:] for l in diff if l[0] in " -"]
    new = [l[1:] for l in diff if l[0] in " +"]
    found = []
    for start, line in enumerate(code):
        if not code_part(line).strip() or code_part(line).lstrip() != code_part(old[0]).lstrip():
            continue
        shift = indent(line) - indent(old[0])
        want = [" " * shift + code_part(l) if shift >= 0 else code_part(l)[-shift:] for l in old]
        matched, at = [start], start + 1
        for target in want[1:]:
            while at < len(code) and code_part(code[at]) != target:
                at += 1
            if at == len(code):
                break
            matched.append(at)
            at += 1
        if len(matched) == len(old):
            found.append((matched[-1] - start, shift, matched))
    if not found:
        raise BoxDoesNotApply("the box's old lines do not occur, in order, in the page's failing code")
    shortest = min(span for span, *_ in found)
    best = [(shift, matched) for span, shift, matched in found if span == shortest]
    if len(best) > 1:
        raise BoxDoesNotApply(f"the box's old lines occur in {len(best)} places of the failing code")
    best = best[0]
    shift, matched = best
    hidden = [code[i] for i in range(matched[0], matched[-1] + 1)
              if i not in matched and code_part(code[i]).strip()]
    shifted = [" " * shift + l if shift >= 0 else l[-shift:] for l in new]
    result = code[:matched[0]] + shifted + code[matched[-1] + 1:]
    return result, hidden, matched[0] + len(shifted)


def page_definitions(nb, names) -> str:
    """The source of the functions and classes ``names`` as the page defines them."""
    found = {}
    for cell in nb.cells:
        if cell.cell_type != "code" or QUIZ_TAG in cell.metadata.get("tags", []):
            continue
        try:
            tree = ast.parse(cell.source)
        except SyntaxError:   # a cell with IPython magics
            continue
        for node in tree.body:
            if isinstance(node, (ast.FunctionDef, ast.ClassDef)) and node.name in names:
                found.setdefault(node.name, ast.get_source_segment(cell.source, node))
    missing = set(names) - set(found)
    assert not missing, f"the page defines no {sorted(missing)}"
    return "\n\n".join(found[n] for n in names)


def program_of(name: str, box: Box, nb=None, diff: list[str] | None = None) -> dict:
    """What the runner runs for the page ``name``: the cells before the failing code, the failing
    code with the box applied (or ``diff``, a wrong fix), and the check."""
    nb = nb or nbformat.read(NOTEBOOKS / f"{name}.ipynb", as_version=4)
    ids = [c.get("id") for c in nb.cells]
    missing = [i for i in box.cells if i not in ids]
    assert not missing, f"{name}: no cell {missing}"
    first = ids.index(box.cells[0])
    prelude = [{"source": c.source, "may_raise": bool(RAISES & set(c.metadata.get("tags", [])))}
               for c in nb.cells[:first]
               if c.cell_type == "code" and QUIZ_TAG not in c.metadata.get("tags", [])
               and (box.prelude is None or c.get("id") in box.prelude)]
    code = "\n".join(nb.cells[ids.index(i)].source for i in box.cells).splitlines()
    fixed, hidden, end = apply_box(box_diff(nb) if diff is None else diff, code)
    if box.until is not None:
        stops = [i for i in range(end - 1, len(fixed)) if code_part(fixed[i]).strip() == box.until]
        assert stops, f"{name}: no line {box.until!r} after the box"
        fixed = fixed[:stops[0] + 1]
    check = (page_definitions(nb, box.needs) + "\n\n" if box.needs else "") + box.check
    return {"name": name, "prelude": prelude, "program": "\n".join(fixed), "hidden": hidden,
            "check": check}


# --- running ----------------------------------------------------------------------------------

RUNNER = r"""
import io, json, sys, contextlib
from IPython.core.interactiveshell import InteractiveShell

class Shell(InteractiveShell):
    def enable_gui(self, gui=None):  # `%matplotlib inline` outside a kernel: nothing to set up
        pass

shell = Shell.instance(colors="nocolor")
report = {}
for page in json.load(sys.stdin):
    shell.reset(new_session=True)
    shell.run_cell("import matplotlib; matplotlib.use('Agg')", silent=True)
    outcome = None
    steps = [("prelude", c["source"], c["may_raise"]) for c in page["prelude"]]
    steps += [("program", page["program"], False), ("check", page["check"], False)]
    for stage, source, may_raise in steps:
        with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
            result = shell.run_cell(source, silent=False, store_history=False)
        error = result.error_in_exec or result.error_before_exec
        if error is not None and not may_raise:
            outcome = [stage, type(error).__name__, str(error)[:500]]
            break
    shell.run_cell("import matplotlib.pyplot as plt; plt.close('all')", silent=True)
    shell.run_cell("import torch; torch.set_default_dtype(torch.float32); "
                   "torch.autograd.set_detect_anomaly(False)", silent=True)
    report[page["name"]] = outcome
print("FIX-BOX-REPORT " + json.dumps(report))
"""


def run_pages(pages: list[dict]) -> dict:
    """Run each page's program and check; per page None (passed) or [stage, error type, message]."""
    env = dict(os.environ, MPLBACKEND="Agg", PYTHONDONTWRITEBYTECODE="1")
    result = subprocess.run([sys.executable, "-c", RUNNER], input=json.dumps(pages), text=True,
                            capture_output=True, timeout=900, cwd=NOTEBOOKS, env=env)
    lines = [l for l in result.stdout.splitlines() if l.startswith("FIX-BOX-REPORT ")]
    assert result.returncode == 0 and lines, result.stdout[-3000:] + result.stderr[-3000:]
    return json.loads(lines[-1].split(" ", 1)[1])


def describe(page: dict, outcome) -> str:
    stage, kind, message = outcome
    hidden = f"\nlines of the page the box hides (gone as shown): {page['hidden']}" if page["hidden"] else ""
    return (f"{page['name']}: the fixed program fails in its {stage}: {kind}: {message}{hidden}"
            f"\n--- the program as the box makes it ---\n{page['program']}")


def wrong_key(name: str, number: int) -> str:
    return f"{name} wrong fix {number}"


@pytest.fixture(scope="module")
def outcomes():
    pages = {name: program_of(name, box) for name, box in BOXES.items()}
    for name, wrongs in WRONG_FIXES.items():
        for number, wrong in enumerate(wrongs):
            page = program_of(name, BOXES[name], diff=list(wrong.diff))
            pages[wrong_key(name, number)] = dict(page, name=wrong_key(name, number))
    for name, diff in HID_A_LINE.items():
        pages[f"{name} old box"] = dict(program_of(name, BOXES[name], diff=list(diff)),
                                        name=f"{name} old box")
    return pages, run_pages(list(pages.values()))


def test_every_scenario_page_has_its_box_run_here():
    scenarios = {p.stem for p in NOTEBOOKS.glob("[0-9][0-9]_*.ipynb")}
    assert set(BOXES) == scenarios


@pytest.mark.parametrize("name", sorted(BOXES))
def test_the_fix_box_as_shown_gives_the_reference_gradients(outcomes, name):
    pages, report = outcomes
    assert report[name] is None, describe(pages[name], report[name])


WRONG_CASES = [(name, number) for name, wrongs in WRONG_FIXES.items() for number in range(len(wrongs))]


@pytest.mark.parametrize("name,number", WRONG_CASES, ids=[wrong_key(*c) for c in WRONG_CASES])
def test_each_wrong_fix_fails_or_mistrains_as_its_page_says(outcomes, name, number):
    pages, report = outcomes
    wrong, page = WRONG_FIXES[name][number], pages[wrong_key(name, number)]
    outcome = report[page["name"]]
    assert outcome is not None, (f"{page['name']} ({wrong.section}) ran and passed the page's "
                                 f"reference check:\n{page['program']}")
    stage, kind, message = outcome
    if wrong.fails:
        assert kind == "RuntimeError" and error_kind(message) == wrong.fails, describe(page, outcome)
    else:
        assert wrong.mistrains and (stage, kind) == ("check", "AssertionError"), describe(page, outcome)


@pytest.mark.parametrize("name", sorted(HID_A_LINE))
def test_a_box_that_hid_the_zero_grad_fails_here(outcomes, name):
    pages, report = outcomes
    page = pages[f"{name} old box"]
    assert "opt.zero_grad()" in page["hidden"], page["hidden"]
    assert report[page["name"]] is not None and report[page["name"]][:2] == ["check", "AssertionError"], (
        f"{name}: the old box, which hides opt.zero_grad(), passed")


def test_each_wrong_fix_names_a_section_of_its_page():
    for name, wrongs in WRONG_FIXES.items():
        text = (NOTEBOOKS / f"{name}.ipynb").read_text()
        for wrong in wrongs:
            assert f"({wrong.section})=" in text, f"{name}: no section {wrong.section}"


# --- the applier itself -----------------------------------------------------------------------

def test_a_box_applies_in_order_with_the_indentation_of_the_page():
    code = ["for b in range(3):", "    xb = b", "    out = f(xb)   # page comment", "    g(out)"]
    diff = [" xb = b", "+xb = xb * 2", " out = f(xb)"]
    fixed, hidden, end = apply_box(diff, code)
    assert fixed == ["for b in range(3):", "    xb = b", "    xb = xb * 2", "    out = f(xb)", "    g(out)"]
    assert hidden == [] and end == 4


def test_a_line_the_box_does_not_show_is_gone_and_named():
    code = ["loss.backward(retain_graph=True)", "opt.step()", "opt.zero_grad()", "loss.backward()"]
    diff = [" opt.step()", "-loss.backward()", "+loss = f()", "+loss.backward()"]
    fixed, hidden, _ = apply_box(diff, code)
    assert fixed == ["loss.backward(retain_graph=True)", "opt.step()", "loss = f()", "loss.backward()"]
    assert hidden == ["opt.zero_grad()"]


def test_a_box_whose_lines_the_page_lacks_or_holds_twice_does_not_apply():
    with pytest.raises(BoxDoesNotApply, match="do not occur"):
        apply_box([" a = 1", "-b = 2", "+b = 3"], ["b = 2", "a = 1"])
    with pytest.raises(BoxDoesNotApply, match="2 places"):
        apply_box(["-b = 2", "+b = 3"], ["b = 2", "a = 1", "b = 2"])
