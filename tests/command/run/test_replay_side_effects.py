"""What the replay does to the user's files, as the command's ``--help`` says it: the replay runs in
a temporary copy of the program's folder, so a file the program appends to in its own folder gets
one line per command (the first run's), a write outside the folder is refused (the first run's
line is the only one), the replay's output is not shown, and only a process the replay starts
writes again.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

from autograd_lens.text.usage import DESCRIPTION

PROGRAM = textwrap.dedent("""\
    import subprocess, sys
    import torch

    with open("runs.log", "a") as log:                       # in the program's folder
        log.write("run\\n")
    try:
        with open(sys.argv[1], "a") as log:                  # outside it
            log.write("run\\n")
    except PermissionError:
        pass
    child = "import sys; open(sys.argv[1], 'a').write('child\\\\n')"
    subprocess.run([sys.executable, "-c", child, sys.argv[2]], check=True)
    print("the program's own line")

    w = torch.ones(3, requires_grad=True)
    loss = (w * w).sum()
    loss.backward()
    loss.backward()
    """)


def test_replay_writes_only_in_its_copy(tmp_path):
    folder = tmp_path / "project"
    folder.mkdir()
    (folder / "train.py").write_text(PROGRAM)
    outside, by_child = tmp_path / "outside.log", tmp_path / "child.log"
    result = subprocess.run(
        [sys.executable, "-m", "autograd_lens", "--no-verify", "train.py", str(outside),
         str(by_child)],
        cwd=folder, env={**os.environ, "OMP_NUM_THREADS": "1"}, capture_output=True, text=True,
        timeout=300)
    assert result.returncode == 1, result.stderr
    # The replay ran to the failing call: the diagnosis is said from its recording.
    assert "Recorded in a replay" in result.stderr + result.stdout, result.stderr
    assert result.stdout.count("the program's own line") == 1
    assert (folder / "runs.log").read_text() == "run\n"
    assert outside.read_text() == "run\n"
    assert by_child.read_text() == "child\nchild\n"
    assert sorted(p.name for p in folder.iterdir()) == ["runs.log", "train.py"]


def test_help_says_where_the_replay_runs():
    text = " ".join(DESCRIPTION.split())
    assert "repeats the program's side effects" not in text
    assert "The replay runs in the sandbox described below, in a temporary copy" in text
