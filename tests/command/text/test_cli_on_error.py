"""The same naming of carriers from `diagnose_on_error()` and `%load_ext autograd_lens`."""

import pytest
import torch

import autograd_lens as al


def test_diagnose_on_error_names_the_carried_state_and_its_line():
    torch.manual_seed(0)
    cell = torch.nn.RNNCell(2, 3)
    h = torch.zeros(1, 3)
    with pytest.raises(RuntimeError) as caught:
        with al.diagnose_on_error():
            for step in range(3):
                h = cell(torch.randn(1, 2), h)  # enters
                h.sum().backward()
    line = test_diagnose_on_error_names_the_carried_state_and_its_line.__code__.co_firstlineno + 7
    message = str(caught.value)
    assert f"  h  test_cli_on_error.py:{line} in test_diagnose_on_error_names" in message
    assert message.index("Carried in by") < message.index("Likely pattern")


def test_the_notebook_extension_names_a_tensor_made_before_the_loop():
    torch.manual_seed(0)
    encoder, head = torch.nn.Linear(4, 4), torch.nn.Linear(4, 1)
    features = encoder(torch.randn(8, 4)).tanh()
    al.load_ipython_extension(None)
    try:
        with pytest.raises(RuntimeError) as caught:
            for step in range(2):
                loss = head(features).pow(2).mean()
                loss.backward()
    finally:
        al.unload_ipython_extension(None)
    assert "  features  test_cli_on_error.py:" in str(caught.value)
    assert "holds a graph that the backward at test_cli_on_error.py:" in str(caught.value)


def test_a_working_step_is_left_alone():
    w = torch.ones(2, requires_grad=True)
    with al.diagnose_on_error():
        for step in range(3):
            (w * w).sum().backward()
    assert w.grad.tolist() == [6.0, 6.0]


def test_the_commands_watch_keeps_no_tensor_alive_and_leaves_the_error_as_it_is():
    import gc
    import weakref

    from autograd_lens.run.watch import Watch

    w = torch.ones(3, requires_grad=True)
    with Watch() as watch:
        loss = (w * w).sum()
        loss.backward()
        gone = weakref.ref(loss)
        del loss
        gc.collect()
        assert gone() is None and len(watch.history.calls) == 1
        loss = (w * w).sum()
        loss.backward()
        with pytest.raises(RuntimeError) as caught:
            loss.backward()
    plain = (w * w).sum()
    plain.backward()
    with pytest.raises(RuntimeError) as expected:
        plain.backward()
    assert caught.value.args == expected.value.args  # the message is not changed
    assert watch.explains(caught.value) and watch.finding.carriers[0].name == "loss"
    assert torch.autograd.backward.__module__ == "torch.autograd"  # restored


def test_a_second_error_where_the_freed_first_one_lived_is_explained_too(monkeypatch):
    """CPython gives a new object the address of one just freed: the error a program caught and
    dropped, and the next one, can have the same id() and the same message. The next one is a
    new failure, explained from its own graph (made certain here by giving every object one id)."""
    from autograd_lens.run import failing_call
    from autograd_lens.run import watch as watch_module
    from autograd_lens.run.watch import Watch

    for module in (watch_module, failing_call):  # where an error's id() is kept, and compared
        monkeypatch.setattr(module, "id", lambda anything: 1, raising=False)
    w = torch.ones(3, requires_grad=True)
    with Watch() as watch:
        probe = (w * w).sum()
        probe.backward()
        try:
            probe.backward()
        except RuntimeError:
            pass  # the program's smoke test: caught and dropped
        first = watch.finding
        assert first is not None and first.carriers[0].name == "probe"
        loss = w.exp().sum()
        loss.backward()
        with pytest.raises(RuntimeError):
            loss.backward()
    assert watch.finding is not first and watch.finding.carriers[0].name == "loss"
