"""The replay's recording of where modules are made (``autograd_lens.run.record``): the user's
line that made each module (an ``nn.Dropout`` inside an ``nn.Sequential``, a class of the
program's at the line that makes it, not at its ``super().__init__()``), the library line under
it when a library made it, and ``nn.Module.__init__`` as it was once the recording ends."""

from __future__ import annotations

import inspect

from torch import nn

from autograd_lens.run.record import Recording


class Critic(nn.Module):
    def __init__(self):
        super().__init__()
        self.main = nn.Sequential(
            nn.Linear(3, 4),
            nn.Dropout(0.25, inplace=True),
        )


def line_of(function, text: str) -> int:
    """The line of ``function``'s source that holds ``text``."""
    lines, start = inspect.getsourcelines(function)
    return start + next(i for i, line in enumerate(lines) if text in line)


def made_where(program, tmp_path) -> tuple[dict, dict]:
    """``program()`` run under a recording: what it returns, and the site of each module in it
    (by the name the program gives it) as the recording resolves it."""
    recording = Recording({"record": str(tmp_path / "record.json")})
    with recording:
        modules = program()
    log = recording.log
    return modules, {name: log.sites.resolve(log.module_site(module))
                     for name, module in modules.items()}


def test_a_module_inside_a_sequential_is_made_at_its_own_line(tmp_path):
    def program():
        critic = Critic()
        return {"critic": critic, "dropout": critic.main[1], "sequential": critic.main}
    _, sites = made_where(program, tmp_path)
    assert sites["dropout"]["user"]["line"] == line_of(Critic, "nn.Dropout(0.25")
    assert sites["dropout"]["user"]["text"] == "nn.Dropout(0.25, inplace=True),"
    assert sites["sequential"]["user"]["line"] == line_of(Critic, "nn.Sequential(")
    # a class of the program's: where the program makes it, not at its super().__init__()
    assert sites["critic"]["user"]["line"] == line_of(program, "critic = Critic()")
    assert sites["dropout"]["chain"][0]["line"] == line_of(program, "critic = Critic()")


def test_a_module_a_library_makes_is_made_at_the_users_call_with_the_library_line(tmp_path):
    def program():
        layer = nn.TransformerEncoderLayer(8, 2, dim_feedforward=16)
        return {"inner": layer.dropout1}
    _, sites = made_where(program, tmp_path)
    site = sites["inner"]
    assert site["user"]["line"] == line_of(program, "nn.TransformerEncoderLayer(")
    assert site["library"]["file"] == inspect.getsourcefile(nn.TransformerEncoderLayer)
    assert site["library"]["function"] == "__init__"


def test_the_constructor_is_restored_and_the_module_unchanged(tmp_path):
    original = nn.Module.__init__
    made, _ = made_where(lambda: {"critic": Critic()}, tmp_path)
    assert nn.Module.__init__ is original
    plain = Critic()
    assert vars(made["critic"]).keys() == vars(plain).keys()
    assert [type(m) for m in made["critic"].modules()] == [type(m) for m in plain.modules()]


def test_a_module_made_before_the_recording_has_no_site(tmp_path):
    before = nn.ReLU(inplace=True)
    recording = Recording({"record": str(tmp_path / "record.json")})
    with recording:
        nn.ReLU(inplace=True)
    assert recording.log.module_site(before) == -1
