"""The edit rules inside the frameworks people train with: a backward called through a wrapper
(`accelerator.backward(loss)`, Lightning's `self.manual_backward(loss)`, Fabric's
`fabric.backward(loss)`) gets the edit `loss.backward()` would get, and no edit calls a method
the carrier's value does not have (`total_loss.clear()` on a tensor).

The frameworks are not installed here: each program below has a stand-in of the wrapper's shape
(its `backward(loss)` calls `loss.backward()`), the rule reads only the program's own lines. The
edited program is run, and its weights are compared with an independent loop that calls
backward on each step's loss (`tests/scripts/carrier_total_scaled_backward.py` is the same with
torch's own GradScaler, through the whole command, in test_edits and test_carrier_ranking).
"""

from __future__ import annotations

import linecache
from types import SimpleNamespace

import pytest
import torch

from autograd_lens.explain.carrier import Carrier
from autograd_lens.source.edit_types import fits, missing_method
from autograd_lens.source.edits import Edit, apply, by_file
from autograd_lens.predict.report import PATTERNS
from autograd_lens.fixes.rules import Case
from forked_command import completed
from places import TESTS

PROGRAM = """
import torch


class Wrapper:  # the shape of accelerate's Accelerator and Lightning's Fabric
    def backward(self, loss):
        loss.backward()

    manual_backward = backward  # the shape of a LightningModule's


def train(accelerator, fabric, self, steps):
    torch.manual_seed(0)
    model = torch.nn.Linear(4, 1)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    total_loss = 0
    for step in range(steps):
        x, y = torch.randn(8, 4), torch.randn(8, 1)
        loss = torch.nn.functional.mse_loss(model(x), y)
        total_loss = total_loss + loss
        opt.zero_grad()
        CALL
        opt.step()
    return model
"""
CALLS = {"accelerate": "accelerator.backward(total_loss)",
         "fabric": "fabric.backward(total_loss)",
         "lightning": "self.manual_backward(total_loss)",
         "scaler": "scaler.scale(total_loss).backward()"}


def reference(steps: int) -> torch.nn.Linear:
    """The same training, written by hand: backward on each step's loss."""
    torch.manual_seed(0)
    model = torch.nn.Linear(4, 1)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    for _ in range(steps):
        x, y = torch.randn(8, 4), torch.randn(8, 1)
        opt.zero_grad()
        torch.nn.functional.mse_loss(model(x), y).backward()
        opt.step()
    return model


def write(tmp_path, call: str):
    text = PROGRAM.replace("CALL", call)
    if call.startswith("scaler"):
        text = text.replace("    total_loss = 0\n", "    total_loss = 0\n    scaler = "
                            "torch.amp.GradScaler('cpu', init_scale=1.0)\n")
    path = tmp_path / "train.py"
    path.write_text(text)
    lines = text.splitlines()
    carried = next(n for n, line in enumerate(lines, 1) if "total_loss = total_loss" in line)
    failed = next(n for n, line in enumerate(lines, 1) if call in line)
    carrier = Carrier("total_loss", str(path), carried, "train", "read before assigned", "old",
                      update="accumulate", entry="read_first")
    return path, carrier, (str(path), failed)


def run_edited(path, fixes) -> torch.nn.Linear:
    linecache.checkcache(str(path))
    edited = apply(by_file(list(fixes[0].edits))[str(path)], linecache.getlines(str(path)))
    space: dict = {}
    exec(compile("".join(edited), str(path), "exec"), space)
    wrapper = space["Wrapper"]()
    return space["train"](wrapper, wrapper, wrapper, 3)


@pytest.mark.parametrize("framework", CALLS)
def test_a_wrapped_backward_gets_the_edit_of_loss_backward(tmp_path, framework):
    path, carrier, failed = write(tmp_path, CALLS[framework])
    fixes = PATTERNS["accumulated_loss"].fixes([carrier], failed)
    assert fixes, f"no edit for {CALLS[framework]}"
    new = [line.strip() for edit in fixes[0].edits for line in edit.new]
    assert CALLS[framework].replace("total_loss", "loss") in new, new
    assert "total_loss = total_loss + loss.item()" in new, new
    model, expected = run_edited(path, fixes), reference(3)
    torch.testing.assert_close(model.weight, expected.weight, rtol=0, atol=1e-6)
    torch.testing.assert_close(model.bias, expected.bias, rtol=0, atol=1e-6)


def test_the_unedited_program_fails_as_the_rule_assumes(tmp_path):
    path, _, _ = write(tmp_path, CALLS["accelerate"])
    space: dict = {}
    exec(compile(path.read_text(), str(path), "exec"), space)
    wrapper = space["Wrapper"]()
    with pytest.raises(RuntimeError, match="backward through the graph a second time"):
        space["train"](wrapper, wrapper, wrapper, 3)


def test_no_edit_calls_a_list_method_on_a_tensor(tmp_path):
    """A wrapper the rules do not know (`runner.backward(total_loss)`) leaves the growing-list
    rule to answer, and it wrote `total_loss.clear()`: a tensor has no clear(), so that edit is
    not given (the list's own edit still is: see test_edits)."""
    path, carrier, failed = write(tmp_path, "runner.backward(total_loss)")
    rule = PATTERNS["accumulated_loss"].rule
    written = rule(Case((carrier,), failed))
    assert any(".clear()" in line for fix in written for e in fix.edits for line in e.new), \
        "the rule no longer writes clear() here: this test needs another program"
    assert PATTERNS["accumulated_loss"].fixes([carrier], failed) == []


@pytest.mark.parametrize("line, form, method", [
    ("    total_loss.clear()", "tensor", "clear"), ("    losses.clear()", "list", None),
    ("    state.popitem()", "dict", None), ("    h.append(x)", "tuple", "append"),
    ("    h = h.detach()", "tensor", None), ("    obj.reset()", "object", None),
    ("    mytotal_loss.clear()", "tensor", None)])
def test_missing_method(line, form, method):
    name = {"    losses.clear()": "losses", "    state.popitem()": "state",
            "    h.append(x)": "h", "    h = h.detach()": "h", "    obj.reset()": "obj"}.get(
        line, "total_loss")
    assert missing_method(line, [SimpleNamespace(name=name, form=form)]) == method


def test_fits_reads_every_new_line():
    carrier = SimpleNamespace(name="total", form="tensor")
    edit = SimpleNamespace(old="    total = total", new=("    total = total.detach()",
                                                          "    total.clear()"))
    assert not fits(SimpleNamespace(edits=(edit,)), [carrier])
    assert fits(SimpleNamespace(edits=(SimpleNamespace(old=edit.old, new=edit.new[:1]),)),
                [carrier])


def test_the_earlier_backward_is_named_at_the_programs_line(tmp_path):
    """Through a library's wrapper, the backward that went through the graph first is named
    where the program called the wrapper, not at the library's own line."""
    import json

    scripts = TESTS / "scripts"
    name = "carrier_total_accelerate_standin.py"
    called = next(n for n, line in enumerate((scripts / name).read_text().splitlines(), 1)
                  if line.strip() == "accelerator.backward(total_loss)")
    done = completed(["--no-verify", "--report", str(tmp_path / "r.json"), name], scripts,
                   timeout=120)
    assert done.returncode == 1, done.stderr
    why = json.loads((tmp_path / "r.json").read_text())["carriers"][0]["why"]
    assert why.endswith(f"the backward at {name}:{called} already went through"), why


def test_a_librarys_own_copy_is_set_aside_and_said_as_it_is():
    """A tensor in a library object's own attribute (not a registered buffer) comes after the
    program's variables, is dropped when a variable of the program holds it (or a tensor
    computed from it), and its "why" says the library keeps it (never "assigned only before
    the loop")."""
    from autograd_lens.source.candidates import Candidate
    from autograd_lens.explain.framework_objects import library_internal, set_aside_copies

    class Mine:  # a class of the program's
        pass

    layer, wrapper, mine = torch.nn.Linear(2, 2), torch.nn.Linear(2, 2), Mine()
    old = torch.ones(2, requires_grad=True) * 2
    new = old + 1
    layer.register_buffer("running", old)
    copy = Candidate(0, "model.copies[0]", old, "list", wrapper, "tensor")
    registered = Candidate(0, "model.running", old, "attribute", layer, "tensor")
    user = Candidate(0, "self.center", new, "attribute", mine, "tensor")
    other = Candidate(0, "model.hooks[0]", torch.ones(1, requires_grad=True) * 3, "list",
                      wrapper, "tensor")
    assert library_internal(copy) and not library_internal(registered)
    assert not library_internal(user)
    carrier = Carrier("x", "f.py", 1, "f", "holds G; it is assigned only before the loop", "old",
                      outside_loop=True)
    view = SimpleNamespace(below=lambda upper, lower: upper is new.grad_fn and
                           lower is old.grad_fn)
    ranked = [(9.0, copy, carrier), (8.5, other, carrier), (4.0, user, carrier)]
    kept = set_aside_copies(ranked, view, "G")
    assert [found.path for _, found, _ in kept] == ["self.center", "model.hooks[0]"]
    assert kept[1][2].why.startswith("is kept by the library inside Linear's own state")
    assert not kept[1][2].outside_loop and kept[0][2] is carrier


def test_the_cache_edit_trains_as_a_cache_detached_by_hand(tmp_path):
    """The edit for a library's cache object carried across segments (detach its tensors where
    the variable enters the step) trains the model as a loop that keeps, by hand, each layer's
    past keys and values without their graph."""
    import json
    import runpy
    import sys

    scripts = TESTS / "scripts"
    name = "carrier_cache_object_standin.py"
    done = completed(["--no-verify", "--report", str(tmp_path / "r.json"), name], scripts,
                   timeout=120)
    report = json.loads((tmp_path / "r.json").read_text())
    assert report["carriers"][0]["name"] == "past", done.stderr
    edits = [Edit(e["file"], e["line"], e["old"], tuple(e["new"])) for e in report["edits"]]
    lines = (scripts / name).read_text().splitlines(keepends=True)
    edited = tmp_path / name
    edited.write_text("".join(apply(edits, lines)))
    sys.path.insert(0, str(scripts))
    try:
        space = runpy.run_path(str(edited), run_name="__main__")
    finally:
        sys.path.remove(str(scripts))

    torch.manual_seed(0)
    model = space["TinyAttention"]()
    opt = torch.optim.SGD(model.parameters(), lr=0.05)
    tokens = torch.randn(2, 12, 8)
    past = [(None, None)] * 2
    for start in range(0, 12, 4):
        x = tokens[:, start:start + 4]
        kept = []
        for (keys, values), project in zip(past, model.project):
            q, k, v = project(x).chunk(3, dim=-1)
            if keys is not None:
                k, v = torch.cat([keys.detach(), k], 1), torch.cat([values.detach(), v], 1)
            kept.append((k, v))
            x = x + torch.softmax(q @ k.transpose(1, 2), dim=-1) @ v
        past = kept
        opt.zero_grad()
        x.pow(2).mean().backward()
        opt.step()
    for mine, theirs in zip(space["model"].parameters(), model.parameters()):
        torch.testing.assert_close(mine, theirs, rtol=0, atol=1e-6)


def test_the_programs_module_reached_through_a_weak_proxy_is_the_programs():
    """A framework may hold the program's module through ``weakref.proxy`` (Lightning's loops
    do): the proxy's type is the standard library's, but the module, and the attribute the
    program assigns on it, are the program's own, never "kept by the library"."""
    import weakref

    from autograd_lens.source.candidates import Candidate
    from autograd_lens.explain.framework_objects import library_internal

    class Model(torch.nn.Module):  # a class of the program's
        pass

    model = Model()
    hidden = torch.ones(2, requires_grad=True) * 2
    for owner in (model, weakref.proxy(model)):
        assert not library_internal(Candidate(0, "self.hidden", hidden, "attribute", owner,
                                              "tensor"))
