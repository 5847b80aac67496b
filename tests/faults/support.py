"""What the fault tests share: a size-limited tmpfs they may fill and remount read-only, and
the shape every fault error must have."""

from __future__ import annotations

import errno
import os
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

__all__ = [
    "NO_PERMISSION",
    "NO_SPACE",
    "READ_ONLY",
    "Tmpfs",
    "says",
    "tells_the_mount",
    "tmpfs",
]

NO_SPACE = ("no space left on the disk of this mount", "free space and retry")
"""A full disk (``ENOSPC``, ``EDQUOT``): the cause, and what to do."""
READ_ONLY = ("the disk is read-only", "writes need it mounted read-write (ask an operator)")
"""A disk mounted read-only (``EROFS``): the cause, and what to do."""
NO_PERMISSION = (
    "the store has no permission for this file on disk",
    "fix its permissions (ask an operator)",
)
"""A file or folder the store's user may not open (``EACCES``, ``EPERM``): the cause, and what
to do."""


class Tmpfs:
    """A tmpfs mounted at ``path``; ``remount("ro")`` / ``remount("rw")`` switch it."""

    def __init__(self, path: Path) -> None:
        self.path = path

    def remount(self, how: str) -> None:
        _mount(["-o", f"remount,{how}", str(self.path)])


def _mount(args: list[str]) -> None:
    done = subprocess.run(["mount", *args], capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise OSError(done.stderr.strip() or f"mount exited with {done.returncode}")


@contextmanager
def tmpfs(size: str) -> Iterator[Tmpfs]:
    """A fresh tmpfs of ``size`` (``mount -t tmpfs -o size=...``), unmounted afterwards. Skips,
    saying what is missing, where the kernel or the user may not mount one."""
    if shutil.which("mount") is None:
        pytest.skip("fault test needs the mount command (util-linux), which is not installed")
    if os.geteuid() != 0:
        pytest.skip("fault test needs root to mount a size-limited tmpfs (runs as a user)")
    where = Path(tempfile.mkdtemp(prefix="bastion-fault-"))
    try:
        _mount(["-t", "tmpfs", "-o", f"size={size},mode=0755", "tmpfs", str(where)])
    except OSError as exc:
        where.rmdir()
        pytest.skip(f"fault test cannot mount a tmpfs here (needs CAP_SYS_ADMIN): {exc}")
    try:
        yield Tmpfs(where)
    finally:
        subprocess.run(["umount", "-l", str(where)], capture_output=True, check=False)
        where.rmdir()


def tells_the_mount(message: str, prefix: str) -> None:
    """A fault's error: one line, naming the mount (its prefix starts the path it names)."""
    assert "\n" not in message, message
    assert f"{prefix}/" in message or f"mount {prefix}" in message, message


def says(message: str, where: str, cause: str, advice: str) -> None:
    """A fault's error in full: one line that names ``where`` (a path under the mount), says
    ``cause`` and then ``advice`` (what to do), and is not the generic fallback."""
    assert "\n" not in message, message
    assert message.startswith(f"{where}: "), message
    assert cause in message, message
    assert advice in message.partition(cause)[2], message
    assert "storage of this mount failed" not in message, message


def fill(folder: Path) -> Path:
    """Fill the disk from outside the store, to the last byte."""
    filler = folder / "filler.bin"
    fd = os.open(filler, os.O_WRONLY | os.O_CREAT, 0o644)
    try:
        for size in (65536, 4096, 512, 1):
            try:
                while True:
                    os.write(fd, b"\0" * size)
            except OSError as exc:
                assert exc.errno == errno.ENOSPC
    finally:
        os.close(fd)
    return filler
