"""The sandbox of the re-runs (autograd_lens.run.sandbox, and run.sandbox_folder for its folder):
writes outside the run's folders refused and the originals untouched, writes inside allowed, a
big file of the copy written on a copy of its own, the network refused but on this machine, and
folders left by a command that was killed swept away. Each guard runs in a new Python process
(an audit hook cannot be removed)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path
from places import TESTS

PROBE = textwrap.dedent('''
    import json, os, pathlib, shutil, socket, sys
    import torch
    from autograd_lens.run import sandbox

    run, temp, outside, big = sys.argv[1:5]
    os.chdir(run)
    sandbox.enter([run, temp])
    seen = {}

    def attempt(name, action):
        try:
            action()
            seen[name] = "done"
        except PermissionError as error:
            seen[name] = "refused" if "autograd_lens sandbox:" in str(error) else repr(error)
        except Exception as error:
            seen[name] = repr(error)

    out = os.path.join(outside, "kept.txt")
    attempt("open_w", lambda: open(out, "w").write("x"))
    attempt("open_a", lambda: open(out, "a").write("x"))
    attempt("os_open", lambda: os.open(out, os.O_WRONLY | os.O_TRUNC))
    attempt("path_write", lambda: pathlib.Path(out).write_text("x"))
    attempt("torch_save", lambda: torch.save({"a": 1}, os.path.join(outside, "ckpt.pt")))
    attempt("makedirs", lambda: os.makedirs(os.path.join(outside, "new", "deeper")))
    attempt("remove", lambda: os.remove(out))
    attempt("rename", lambda: os.rename(out, os.path.join(run, "moved.txt")))
    attempt("replace_in", lambda: os.replace(os.path.join(run, "here.txt"), out))
    attempt("rmtree", lambda: shutil.rmtree(os.path.join(outside, "folder")))
    attempt("copy", lambda: shutil.copy(os.path.join(run, "here.txt"), outside))
    attempt("move", lambda: shutil.move(out, run))
    attempt("symlink", lambda: os.symlink(out, os.path.join(outside, "link")))
    attempt("truncate", lambda: os.truncate(out, 0))
    attempt("up_and_out", lambda: open(os.path.join(run, "..", "..", "escape.txt"), "w"))
    attempt("relative_inside", lambda: open("written.txt", "w").write("in"))
    attempt("save_inside", lambda: torch.save({"a": 1}, "ckpt.pt"))
    attempt("tempfile", lambda: __import__("tempfile").NamedTemporaryFile(delete=False).close())
    attempt("big_append", lambda: open("big.bin", "ab").write(b"tail"))
    attempt("network", lambda: socket.getaddrinfo("example.com", 443))
    attempt("connect", lambda: socket.create_connection(("192.0.2.1", 9), timeout=0.5))
    attempt("loopback", lambda: socket.socket().bind(("127.0.0.1", 0)))
    sandbox.release()
    seen["refused"] = sandbox.REFUSED[:1]
    print(json.dumps(seen))
''')


def test_writes_outside_are_refused_inside_allowed_and_big_files_copied_on_write(tmp_path):
    outside, run, temp, source = (tmp_path / name for name in ("outside", "run", "tmp", "source"))
    for folder in (outside, run, temp, source, outside / "folder"):
        folder.mkdir()
    (outside / "kept.txt").write_text("the user's\n")
    (run / "here.txt").write_text("a copy\n")
    (source / "big.bin").write_bytes(b"\0" * 2_000_000)
    os.symlink(source / "big.bin", run / "big.bin")  # how the snapshot links a big file
    before = {p: (p.read_bytes(), p.stat().st_mtime_ns) for p in outside.rglob("*") if p.is_file()}
    before_big = (source / "big.bin").stat().st_mtime_ns
    done = subprocess.run([sys.executable, "-c", PROBE, str(run), str(temp), str(outside),
                           str(source / "big.bin")], capture_output=True, text=True, timeout=300,
                          env=dict(os.environ, OMP_NUM_THREADS="1"))
    assert done.returncode == 0, done.stderr
    seen = json.loads(done.stdout)
    refused = ["open_w", "open_a", "os_open", "path_write", "torch_save", "makedirs", "remove",
               "rename", "replace_in", "rmtree", "copy", "move", "symlink", "truncate",
               "up_and_out", "network", "connect"]
    assert {name: seen[name] for name in refused} == {name: "refused" for name in refused}
    allowed = ["relative_inside", "save_inside", "tempfile", "big_append", "loopback"]
    assert {name: seen[name] for name in allowed} == {name: "done" for name in allowed}
    assert seen["refused"] == [f"the re-run tried to write {outside / 'kept.txt'}, outside its "
                               "temporary folder: refused"]
    after = {p: (p.read_bytes(), p.stat().st_mtime_ns) for p in outside.rglob("*") if p.is_file()}
    assert after == before and sorted(p.name for p in outside.iterdir()) == ["folder", "kept.txt"]
    assert not (tmp_path / "escape.txt").exists()
    # The big file: the run's own copy got the tail, the original did not.
    assert not (run / "big.bin").is_symlink() and (run / "big.bin").stat().st_size == 2_000_004
    assert (source / "big.bin").stat().st_size == 2_000_000
    assert (source / "big.bin").stat().st_mtime_ns == before_big
    assert len(list(temp.iterdir())) == 1  # the NamedTemporaryFile went to the run's TMPDIR


def test_the_snapshot_copies_small_files_and_links_big_ones_and_foreign_folders(tmp_path):
    from autograd_lens.run import sandbox_folder

    root = tmp_path / "project"
    (root / "pkg").mkdir(parents=True)
    (root / ".git").mkdir()
    (root / "train.py").write_text("print(1)\n")
    (root / "pkg" / "model.py").write_text("X = 1\n")
    (root / "data.bin").write_bytes(b"\0" * (sandbox_folder.BIG + 1))
    copy = tmp_path / "copy"
    sandbox_folder.snapshot(str(root), str(copy))
    assert (copy / "train.py").read_text() == "print(1)\n" and not (copy / "train.py").is_symlink()
    assert (copy / "pkg" / "model.py").is_file() and not (copy / "pkg").is_symlink()
    assert (copy / "train.py").stat().st_mtime_ns == (root / "train.py").stat().st_mtime_ns
    assert os.readlink(copy / "data.bin") == str(root / "data.bin")
    assert os.readlink(copy / ".git") == str(root / ".git")


def test_a_folder_left_by_a_killed_command_is_swept_and_a_live_ones_kept(tmp_path):
    from autograd_lens.run import sandbox_folder

    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"],
                          capture_output=True, text=True).stdout.strip()
    stale = tmp_path / f"{sandbox_folder.PREFIX}{dead}_abc"
    live = tmp_path / f"{sandbox_folder.PREFIX}{os.getpid()}_def"
    for folder in (stale, live):
        (folder / "run_0").mkdir(parents=True)
    assert sandbox_folder.sweep(str(tmp_path)) == [str(stale)]
    assert not stale.exists() and live.exists()


SIDE_EFFECTS = TESTS / "scripts" / "sandbox_checkpoint_log_and_home_note.py"


def _files(*folders: Path) -> dict[Path, tuple[bytes, int]]:
    return {p: (p.read_bytes(), p.stat().st_mtime_ns) for folder in folders
            for p in folder.rglob("*") if p.is_file()}


def _command(tmp_path: Path, *args: str) -> tuple[subprocess.CompletedProcess, Path, Path, Path]:
    work, home, temp = tmp_path / "work", tmp_path / "home", tmp_path / "tmp"
    for folder in (work, home, temp):
        folder.mkdir()
    (work / SIDE_EFFECTS.name).write_text(SIDE_EFFECTS.read_text())
    env = dict(os.environ, HOME=str(home), TMPDIR=str(temp), OMP_NUM_THREADS="1")
    done = subprocess.run([sys.executable, "-m", "autograd_lens", "--report", "r.json",
                           SIDE_EFFECTS.name, *args], cwd=work, env=env, capture_output=True,
                          text=True, timeout=600)
    return done, work, home, temp


def _ours(temp: Path) -> list[str]:
    """What the command left in the temporary folder (torch's own cache folder, which the
    program makes on a plain run too, is not the command's)."""
    return [p.name for p in temp.iterdir() if p.name.startswith("autograd_lens")]


def _untouched_after_the_failure(work: Path, home: Path) -> None:
    """Every file of the folder and the home folder was last written before the first run's
    failing backward (stamp.txt holds its time): no re-run wrote any of them."""
    stamp = int((work / "stamp.txt").read_text())
    files = _files(work, home)
    late = [str(p) for p, (_, mtime) in files.items()
            if mtime > stamp and p.name not in ("r.json", "stamp.txt")]
    assert late == []
    assert sorted(p.name for p in work.iterdir()) == ["ckpt.pt", "r.json", SIDE_EFFECTS.name,
                                                      "stamp.txt", "train.log"]
    log = (work / "train.log").read_text().splitlines()
    assert len(log) == 1 and log[0].startswith("step 0 ")  # the first run's line only


def test_a_verified_run_leaves_the_checkpoint_log_and_home_untouched(tmp_path):
    done, work, home, temp = _command(tmp_path, "--no-home")
    assert done.returncode == 1, done.stderr
    report = json.loads((work / "r.json").read_text())
    assert report["verdict"] == "gone" and report["verified"]["ran"] is True
    assert report["verified"]["backward_calls"] == 4 and report["verified"]["missing"] == []
    assert "The fix as an edit of your program, run and verified" in done.stderr
    _untouched_after_the_failure(work, home)
    assert list(home.iterdir()) == [] and _ours(temp) == []


def test_a_write_in_the_home_folder_is_refused_in_one_line_and_not_blamed_on_the_edit(tmp_path):
    done, work, home, temp = _command(tmp_path)
    assert done.returncode == 1, done.stderr
    report = json.loads((work / "r.json").read_text())
    note = home / ".gru_notes" / "last.txt"
    line = (f"the re-run tried to write {note}, outside its temporary folder: refused")
    assert report["verdict"] == "refused" and report["verified"]["refused"] == line
    assert f"Run: not checked: {line}." in done.stderr
    assert "failed attempt" not in done.stderr and report["failed_attempts"] == []
    assert note.read_text() == "step 0\n"  # the first run's note, not a re-run's
    _untouched_after_the_failure(work, home)
    assert _ours(temp) == []
