"""``python -m autograd_lens ARGS`` as a process, without importing torch for each run: a server
process imports torch (and its compiler, which Adam imports) and this package once, then forks
one process per command, which runs the package's ``__main__`` as ``python -m`` does (``runpy``,
the same ``sys.argv``, working folder and environment), with its own output files, and ends as
Python ends a program (non-daemon threads joined, ``atexit`` handlers run, a ``SystemExit``'s
code, a signal's death). Each such process is a clean copy, so the command's re-run process is
forked from it too (:func:`autograd_lens.run.rerun.forkable`).

What such a process does not show is how the command starts in a fresh interpreter (torch not
imported before the program, the interpreter's last clean-up): the tests of that start the
command with ``subprocess``. Nor are the outermost frames the same: below ``runpy`` lie the
server's (``<string>``), where a fresh re-run process has its ``-c`` code's; a report lists
them among the callers. On 48 of the test programs, run both ways, what the command printed
and its exit code were the same byte for byte, and so was its report without those frames. Each thread of the tests has a server of its own, started at its
first command and stopped when the tests end.
"""

from __future__ import annotations

import atexit
import json
import os
import select
import signal
import subprocess
import sys
import tempfile
import threading
from pathlib import Path

_SERVE = r"""
import contextlib, json, os, runpy, signal, sys, threading, traceback
import torch
environ = dict(os.environ)
with contextlib.suppress(Exception):
    import torch._dynamo  # noqa: F401 - what Adam's constructor imports
os.environ.clear(); os.environ.update(environ)  # as the re-run's process does after it
import autograd_lens.text.command  # noqa: F401
import autograd_lens.run.rerun
autograd_lens.run.rerun.fork_from_clean_copies = True  # each command's process: a clean copy

def run(order):
    os.chdir(order["cwd"])
    os.environ.clear(); os.environ.update(order["env"])
    for path, fd, mode in ((os.devnull, 0, os.O_RDONLY), (order["out"], 1, os.O_WRONLY),
                           (order["err"], 2, os.O_WRONLY)):
        opened = os.open(path, mode)
        os.dup2(opened, fd)
        os.close(opened)
    os.setpgid(0, 0)
    sys.argv = ["-m", *order["args"]]
    code = 0
    try:
        runpy.run_module("autograd_lens", run_name="__main__", alter_sys=True)
    except SystemExit as leaving:
        code = leaving.code if isinstance(leaving.code, int) else (
            0 if leaving.code is None else (print(leaving.code, file=sys.stderr) or 1))
    except BaseException:
        traceback.print_exc()
        code = 1
    threading._shutdown()
    import atexit
    atexit._run_exitfuncs()
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(Exception):
            stream.flush()
    os._exit(code)

for line in sys.stdin:
    order = json.loads(line)
    pid = os.fork()
    if pid == 0:
        try:
            run(order)
        finally:
            os._exit(70)
    print(f"pid {pid}", flush=True)
    print(f"status {os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1])}", flush=True)
"""


class _Server:
    """One server process: orders in on its standard input, ``pid N`` and ``status S`` out."""

    def __init__(self, env: dict) -> None:
        self.env = env
        self.process = subprocess.Popen([sys.executable, "-c", _SERVE], stdin=subprocess.PIPE,
                                        stdout=subprocess.PIPE, text=True, env=env)

    def _said(self, timeout: float | None) -> str:
        if timeout is not None and \
                not select.select([self.process.stdout], [], [], max(timeout, 0))[0]:
            raise TimeoutError
        line = self.process.stdout.readline()
        if not line:
            raise RuntimeError(f"the command's server ended (status {self.process.wait()})")
        return line.split()[1]

    def run(self, args: list[str], cwd: Path, timeout: float) -> tuple[int, str, str]:
        with tempfile.TemporaryDirectory() as outputs:
            out, err = Path(outputs, "out"), Path(outputs, "err")
            out.touch()
            err.touch()
            order = {"args": args, "cwd": str(cwd), "env": self.env, "out": str(out),
                     "err": str(err)}
            self.process.stdin.write(json.dumps(order) + "\n")
            self.process.stdin.flush()
            pid = int(self._said(timeout))  # (a new server imports torch first)
            try:
                code = int(self._said(timeout))
            except TimeoutError:
                os.killpg(pid, signal.SIGKILL)
                self._said(60)
                raise subprocess.TimeoutExpired(["python", "-m", *args], timeout) from None
            return code, out.read_text(), err.read_text()

    def stop(self) -> None:
        self.process.stdin.close()
        self.process.wait()


_servers = threading.local()
_all: list[_Server] = []


def _started_as(env: dict) -> dict:
    """What of an environment a server's start depends on: all but pytest's name of the test
    that runs (which changes from test to test, and which a command gets as it is)."""
    return {name: value for name, value in env.items() if name != "PYTEST_CURRENT_TEST"}


def command(args: list[str], cwd: Path, env: dict | None = None,
            timeout: float = 600) -> tuple[int, str, str]:
    """``python -m autograd_lens *args`` run in ``cwd`` with the environment ``env`` (by default
    this one, torch on one thread; a server started in another one is stopped and a new one
    started); its exit code (negative: the signal that ended it), its output and its error
    output."""
    env = dict(os.environ, OMP_NUM_THREADS="1") if env is None else env
    server = getattr(_servers, "server", None)
    if server is None or _started_as(server.env) != _started_as(env):
        if server is not None:
            server.stop()
        server = _servers.server = _Server(env)
        _all.append(server)
    return server.run(args, cwd, timeout)


@atexit.register
def _stop_all() -> None:
    for server in _all:
        if server.process.poll() is None:
            server.stop()


def completed(args: list[str], cwd: Path, timeout: float = 600) -> subprocess.CompletedProcess:
    """:func:`command` in its default environment, as ``subprocess.run`` gives a process that
    ended."""
    code, out, err = command(args, cwd, timeout=timeout)
    return subprocess.CompletedProcess(["python", "-m", "autograd_lens", *args], code, out, err)
