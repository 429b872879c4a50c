"""The sandbox every re-run of the program runs in (the replay under recording, and the runs of
the candidate edits): what it may touch. Its folder, a temporary copy of the program's, and the
re-run's process that copies it are :mod:`autograd_lens.run.sandbox_folder`'s.

- **Writes.** An audit hook (:func:`sys.addaudithook`) refuses, with ``PermissionError``, every
  write whose path, resolved, lies outside the run's folders: ``open`` for writing, appending or
  creating (``io.open``, ``os.open``, :class:`pathlib.Path`'s writers), ``torch.save`` (whose file
  torch opens in C++, so it is checked here first), ``os.mkdir`` (``os.makedirs``), ``os.remove``
  (``unlink``), ``os.rename`` (``replace``), ``os.rmdir``, ``os.symlink``, ``os.link``,
  ``os.truncate``, ``os.chmod``, ``os.utime``, and :mod:`shutil`'s copies, moves and
  ``rmtree`` (each raises one of these events). A write to a linked big file of the copy first
  turns the link into a file of its own (copy on write), so the original is never written.
- **The network.** ``socket.connect``, ``socket.bind``, ``socket.sendto`` and
  ``socket.getaddrinfo`` are refused, except on this machine (loopback addresses, Unix sockets).
- **What it cannot see.** A program started by the re-run (``subprocess``, ``os.system``) runs
  outside Python's audit hooks: it starts in the run's folder with its ``TMPDIR``, but its own
  writes are not checked. Code in C that opens files itself (other than ``torch.save``) is not
  seen either.

Each refusal is kept (:data:`REFUSED`): the command says the first in one line, such as "the
re-run tried to write /home/u/ckpt.pt, outside its temporary folder: refused", and does not
count a run that a refusal ended as a verdict on the edit.
"""

from __future__ import annotations

import contextlib
import errno
import os
import shutil
import sys
import tempfile
import threading
from typing import Any

from .sandbox_folder import inside

_WRITE_FLAGS = os.O_WRONLY | os.O_RDWR | os.O_CREAT | os.O_TRUNC | os.O_APPEND
_DEVICES = ("/dev/null", "/dev/stdout", "/dev/stderr", "/dev/tty", "/dev/shm/")

REFUSED: list[str] = []  # what the guard refused, in order, as one line each
_GUARDS: list["Guard"] = []


class Guard:
    """The audit hook of one run: writes allowed inside ``folders`` (and to the ``files``
    named), refused elsewhere; the network refused but on this machine. Python cannot remove
    an audit hook: :meth:`close` makes it let everything through."""

    def __init__(self, folders: list[str], files: list[str] = ()) -> None:
        self.folders = [os.path.realpath(f) for f in folders]
        self.files = {os.path.realpath(f) for f in files if f}
        self.active = True
        self._busy = threading.local()

    # -- the checks -------------------------------------------------------------------------

    def _resolved(self, path: Any, dir_fd: Any = None) -> str | None:
        if isinstance(path, int) or path is None:
            return None
        with contextlib.suppress(TypeError):
            path = os.fsdecode(path)
        if not isinstance(path, str):
            return None
        if not os.path.isabs(path) and isinstance(dir_fd, int) and dir_fd >= 0:
            with contextlib.suppress(OSError):
                path = os.path.join(os.readlink(f"/proc/self/fd/{dir_fd}"), path)
        return os.path.abspath(path)

    def _allowed(self, path: str) -> bool:
        if path.startswith(_DEVICES) or path in _DEVICES:
            return True
        real = os.path.realpath(path)
        return real in self.files or any(inside(real, f) for f in self.folders)

    def _linked_copy(self, path: str, truncating: bool) -> bool:
        """``path`` is a link of the copy to a big original: make it a file of the run's own
        (a copy of the original, or empty when the write truncates it)."""
        if not os.path.islink(path):
            return False
        folder = os.path.realpath(os.path.dirname(path))
        if not any(inside(folder, f) for f in self.folders):
            return False
        original = os.path.realpath(path)
        os.unlink(path)
        if not truncating and os.path.isfile(original):
            shutil.copy2(original, path)
        return True

    def _refuse(self, what: str, path: str) -> None:
        line = f"the re-run tried to {what} {path}, outside its temporary folder: refused"
        REFUSED.append(line)
        raise PermissionError(errno.EACCES, f"autograd_lens sandbox: {line}", path)

    def _write(self, what: str, path: Any, dir_fd: Any = None, truncating: bool = False) -> None:
        resolved = self._resolved(path, dir_fd)
        if resolved is None or self._allowed(resolved):
            return
        if what == "create the folder" and os.path.isdir(resolved):
            return  # it exists: the call fails by itself (os.makedirs(exist_ok=True) goes on)
        if what.startswith("remove") and not os.path.lexists(resolved):
            return  # nothing to remove: the call fails by itself
        if os.path.lexists(resolved) and self._allowed(os.path.dirname(resolved)) and \
                self._linked_copy(resolved, truncating):
            return
        self._refuse(what, resolved)

    def _network(self, event: str, args: tuple) -> None:
        if event == "socket.getaddrinfo":
            host = args[0]
            host = host.decode() if isinstance(host, bytes) else host
            if host in (None, "", "localhost", "127.0.0.1", "::1", "0.0.0.0"):
                return
            REFUSED.append(f"the re-run tried to reach the network ({host}): refused")
            raise PermissionError(errno.EACCES, f"autograd_lens sandbox: {REFUSED[-1]}")
        sock, address = args[0], args[1]
        import socket

        family = getattr(sock, "family", None)
        if family == getattr(socket, "AF_UNIX", None):
            if isinstance(address, (str, bytes)) and address and address[:1] not in ("\0", b"\0"):
                self._write("create the socket", address)
            return
        host = address[0] if isinstance(address, tuple) and address else address
        if host in ("", "localhost", "0.0.0.0", "::") or str(host).startswith(("127.", "::1")):
            return
        REFUSED.append(f"the re-run tried to reach the network ({host}): refused")
        raise PermissionError(errno.EACCES, f"autograd_lens sandbox: {REFUSED[-1]}")

    def __call__(self, event: str, args: tuple) -> None:
        if not self.active or getattr(self._busy, "on", False):
            return
        checker = _EVENTS.get(event)
        if checker is None:
            return
        self._busy.on = True
        try:
            checker(self, args)
        finally:
            self._busy.on = False

    def close(self) -> None:
        self.active = False


def _open(guard: Guard, args: tuple) -> None:
    path, mode, flags = (tuple(args) + (None, None, 0))[:3]
    flags = flags if isinstance(flags, int) else 0
    writing = bool(flags & _WRITE_FLAGS) or \
        (isinstance(mode, str) and any(c in mode for c in "wax+"))
    if writing:
        truncating = bool(flags & os.O_TRUNC) or (isinstance(mode, str) and "w" in mode)
        guard._write("write", path, truncating=truncating)


_EVENTS = {
    "open": _open,
    "os.mkdir": lambda g, a: g._write("create the folder", a[0], a[2] if len(a) > 2 else None),
    "os.remove": lambda g, a: g._write("remove", a[0], a[1] if len(a) > 1 else None),
    "os.rmdir": lambda g, a: g._write("remove the folder", a[0], a[1] if len(a) > 1 else None),
    "os.rename": lambda g, a: (g._write("move", a[0], a[2]),
                               g._write("move a file to", a[1], a[3])),
    "os.symlink": lambda g, a: g._write("make a link at", a[1], a[2] if len(a) > 2 else None),
    "os.link": lambda g, a: g._write("make a link at", a[1], a[3] if len(a) > 3 else None),
    "os.truncate": lambda g, a: g._write("truncate", a[0]),
    "os.chmod": lambda g, a: g._write("change the mode of", a[0], a[2] if len(a) > 2 else None),
    "os.chown": lambda g, a: g._write("change the owner of", a[0], a[3] if len(a) > 3 else None),
    "os.utime": lambda g, a: g._write("change the times of", a[0], a[3] if len(a) > 3 else None),
    "os.setxattr": lambda g, a: g._write("change the attributes of", a[0]),
    "os.removexattr": lambda g, a: g._write("change the attributes of", a[0]),
    "shutil.copyfile": lambda g, a: g._write("copy a file to", a[1], truncating=True),
    "shutil.copymode": lambda g, a: g._write("change the mode of", a[1]),
    "shutil.copystat": lambda g, a: g._write("change the times of", a[1]),
    "shutil.copytree": lambda g, a: g._write("copy a folder to", a[1]),
    "shutil.move": lambda g, a: (g._write("move", a[0]), g._write("move a file to", a[1])),
    "shutil.rmtree": lambda g, a: g._write("remove the folder", a[0], a[1] if len(a) > 1 else None),
    "shutil.unpack_archive": lambda g, a: g._write("unpack an archive into", a[1]),
    "shutil.make_archive": lambda g, a: g._write("write the archive", a[0]),
    "socket.connect": lambda g, a: g._network("socket.connect", a),
    "socket.bind": lambda g, a: g._network("socket.bind", a),
    "socket.sendto": lambda g, a: g._network("socket.sendto", a),
    "socket.getaddrinfo": lambda g, a: g._network("socket.getaddrinfo", a),
}


def _checked_save(save: Any) -> Any:
    """``torch.save`` that raises the ``open`` event for a file it is given by name (torch
    opens it in C++, which no audit event sees)."""
    def checked(obj: Any, f: Any, *args: Any, **kwargs: Any) -> Any:
        if isinstance(f, (str, bytes, os.PathLike)):
            sys.audit("open", os.fspath(f), "wb", os.O_WRONLY | os.O_CREAT | os.O_TRUNC)
        return save(obj, f, *args, **kwargs)
    checked.__wrapped__ = save
    checked.__doc__, checked.__name__ = save.__doc__, save.__name__
    return checked


def enter(folders: list[str], files: list[str] = ()) -> Guard:
    """Guard this process (a run's, for good): writes only into ``folders`` (and ``files``),
    no network beyond this machine; ``tempfile`` and ``TMPDIR`` point into ``folders[-1]``."""
    REFUSED.clear()
    os.environ["TMPDIR"] = folders[-1]
    tempfile.tempdir = folders[-1]
    sys.dont_write_bytecode = True  # no .pyc written next to the program's or a library's files
    guard = Guard(folders, files)
    _GUARDS.append(guard)
    sys.addaudithook(guard)
    import torch
    import torch.serialization

    checked = _checked_save(torch.serialization.save)
    torch.save = torch.serialization.save = checked
    return guard


def is_refusal(error: BaseException) -> bool:
    """Whether ``error`` (or what it was raised from) is the sandbox's refusal."""
    seen = set()
    while error is not None and id(error) not in seen:
        if isinstance(error, PermissionError) and "autograd_lens sandbox:" in str(error):
            return True
        seen.add(id(error))
        error = error.__cause__ or error.__context__
    return False


def release() -> None:
    """Let every write through again (the run has ended: its result is written)."""
    for guard in _GUARDS:
        guard.close()

