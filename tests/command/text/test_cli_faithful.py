"""`python -m autograd_lens script.py` is `python script.py`: one test per way they differed,
each comparing the command with plain python byte for byte where they should match."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import zipapp
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from places import TESTS

SCRIPTS = TESTS / "scripts"
PROBE = "hard_faithful_probe.py"


def run(args: list[str], cwd: Path, env: dict | None = None,
        flags: tuple[str, ...] = (), command: tuple[str, ...] | None = ()) -> tuple:
    """`python FLAGS -m autograd_lens COMMAND ARGS` (``command`` None: `python FLAGS ARGS`)."""
    prefix = [sys.executable, *flags] + ([] if command is None else ["-m", "autograd_lens",
                                                                      "--no-verify", *command])
    done = subprocess.run(prefix + args, cwd=cwd, env=env, capture_output=True, text=True,
                          timeout=300)
    return done.returncode, done.stdout, done.stderr


def both(args: list[str], cwd: Path, env: dict | None = None, flags: tuple[str, ...] = (),
         command: tuple[str, ...] = ()) -> tuple[tuple, tuple]:
    """The command's run and plain python's, at the same time."""
    with ThreadPoolExecutor(max_workers=2) as pool:
        ours = pool.submit(run, args, cwd, env, flags, command)
        plain = pool.submit(run, args, cwd, env, flags, None)
        return ours.result(), plain.result()


@pytest.fixture
def folder(tmp_path):
    """A copy of the probe script in a folder of its own, and the environment to run it in."""
    shutil.copy(SCRIPTS / PROBE, tmp_path)
    return tmp_path


def _env(**changes) -> dict:
    env = {k: v for k, v in os.environ.items() if k not in ("OMP_NUM_THREADS", "PYTHONSAFEPATH")}
    env.update(changes)
    return env


def test_argv_file_and_path_are_as_given(folder):
    ours, plain = both([f"./{PROBE}", "--lr", "0.1"], folder, _env())
    assert ours == plain and ours[0] == 0
    assert f"argv: ['./{PROBE}', '--lr', '0.1']" in ours[1]


def test_a_script_set_omp_num_threads_before_importing_torch(folder):
    ours, plain = both([PROBE], folder, _env())
    assert ours == plain and "threads: 1\n" in ours[1]


def test_an_atexit_handler_imports_the_scripts_main(folder):
    ours, plain = both([PROBE], folder, _env())
    assert ours == plain and ours[1].endswith("at exit: the script's own __main__\n")


@pytest.mark.parametrize("how", ["-P", "PYTHONSAFEPATH"])
def test_safe_path_leaves_the_scripts_folder_off_the_path(folder, how):
    sub = folder / "sub"
    sub.mkdir()
    (folder / PROBE).rename(sub / PROBE)
    flags, env = (("-P",), _env()) if how == "-P" else ((), _env(PYTHONSAFEPATH="1"))
    ours, plain = both([f"sub/{PROBE}"], folder, env, flags)
    assert ours == plain and "own folder on the path: False" in ours[1]


def test_a_script_reached_through_a_symbolic_link_imports_its_neighbours(tmp_path):
    real, links = tmp_path / "real", tmp_path / "links"
    real.mkdir()
    links.mkdir()
    (real / "helper.py").write_text("VALUE = 'found beside the real file'\n")
    (real / "main.py").write_text("import sys\nfrom helper import VALUE\n"
                                  "print(VALUE, sys.path[0], sys.argv[0], __file__)\n")
    (links / "main.py").symlink_to(real / "main.py")
    ours, plain = both(["links/main.py"], tmp_path, _env())
    assert ours == plain and ours[0] == 0 and "found beside the real file" in ours[1]


def test_double_dash_before_the_script(folder):
    ours = run(["--", PROBE, "x"], folder, _env())
    plain = run([PROBE, "x"], folder, _env(), command=None)
    assert ours == plain and ours[0] == 0


def test_torchs_warnings_point_at_the_users_line(tmp_path):
    shutil.copy(SCRIPTS / "hard_faithful_warns.py", tmp_path)
    ours, plain = both(["hard_faithful_warns.py"], tmp_path, _env(OMP_NUM_THREADS="1"))
    assert ours == plain and "hard_faithful_warns.py:6: FutureWarning" in ours[2]


def test_keyboard_interrupt_shows_the_programs_frames_only(tmp_path):
    shutil.copy(SCRIPTS / "hard_faithful_interrupted.py", tmp_path)
    ours, plain = both(["hard_faithful_interrupted.py"], tmp_path, _env(OMP_NUM_THREADS="1"))
    assert ours == plain and ours[0] == -2 and ours[2].endswith("KeyboardInterrupt\n")


def test_a_package_whose_init_fails_shows_the_real_error(tmp_path):
    package = tmp_path / "pkg"
    package.mkdir()
    (package / "__init__.py").write_text("import not_an_installed_module\n")
    (package / "train.py").write_text("print('training')\n")
    ours, plain = both(["-m", "pkg.train"], tmp_path, _env())
    assert (ours[0], ours[1]) == (plain[0], plain[1]) == (1, "")
    last = "ModuleNotFoundError: No module named 'not_an_installed_module'\n"
    assert ours[2].endswith(last) and plain[2].endswith(last)


def test_a_zip_application_runs(tmp_path):
    source = tmp_path / "app"
    source.mkdir()
    (source / "__main__.py").write_text("import sys\nprint('app', sys.argv)\nsys.exit(4)\n")
    zipapp.create_archive(source, tmp_path / "app.pyz")
    ours, plain = both(["app.pyz", "one"], tmp_path, _env())
    assert (ours[0], ours[1]) == (plain[0], plain[1]) == (4, "app ['app.pyz', 'one']\n")


def test_an_unwritable_report_is_refused_before_the_program_runs(folder):
    code, out, err = run([PROBE], folder, _env(), command=("--report", "/proc/report.json"))
    assert (code, out) == (2, "")
    assert err.count("\n") == 1 and err.startswith(
        "python -m autograd_lens: error: cannot write the report '/proc/report.json': ")


def test_a_relative_report_is_written_where_the_command_started(tmp_path):
    shutil.copy(SCRIPTS / "hard_faithful_chdir.py", tmp_path)
    code, out, err = run(["hard_faithful_chdir.py"], tmp_path, _env(OMP_NUM_THREADS="1"),
                         command=("--report", "report.json"))
    assert (code, out, err) == (0, "[2.0, 2.0]\n", "")
    assert (tmp_path / "report.json").exists()
    assert not (tmp_path / "elsewhere" / "report.json").exists()
