"""What a running sandbox holds that no folder walk and no size limit sees: files deleted while
still open, and entries in ``/tmp``.

A command can create a file in the view, keep it open (or mapped), and delete its name: the
disk stays taken until the last descriptor closes, and a walk of the view no longer finds it.
:func:`held_bytes` finds those files through ``/proc``: every process of the sandbox's PID
namespace, each open descriptor and each mapped file, counting the blocks of every regular file
with no name left (``st_nlink == 0``) on the view's file system. The private ``/tmp`` needs no
such count: its tmpfs counts a deleted file against its size until the file is closed.

A tmpfs counts the bytes of its files against its size but not the files themselves: an empty
file still takes kernel memory (an inode, a directory entry), and the default number allowed is
in the millions. :func:`scratch_fd` opens the sandbox's ``/dev/shm`` (``/tmp`` links to it)
from the host through ``/proc/<pid>/root`` of its PID 1, and :func:`entries` counts what it holds.
"""

from __future__ import annotations

import contextlib
import os
import stat
from pathlib import Path

__all__ = ["entries", "held_bytes", "members", "scratch_fd"]


def members(pidns: int) -> list[int]:
    """The host process ids of every process in the PID namespace whose inode is ``pidns``."""
    found = []
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        with contextlib.suppress(OSError):
            if Path(entry.path, "ns", "pid").stat().st_ino == pidns:
                found.append(int(entry.name))
    return found


def held_bytes(pidns: int, device: int) -> int:
    """Bytes of the files on ``device`` that processes of the namespace ``pidns`` hold open or
    mapped after their last name was deleted (each file once, by its blocks)."""
    sizes: dict[int, int] = {}
    for pid in members(pidns):
        for folder in (f"/proc/{pid}/fd", f"/proc/{pid}/map_files"):
            try:
                entries = list(os.scandir(folder))
            except OSError:  # gone, or map_files not readable by this caller
                continue
            for entry in entries:
                try:
                    info = Path(entry.path).stat()  # follows to the open file itself
                except OSError:
                    continue
                if info.st_dev == device and stat.S_ISREG(info.st_mode) and info.st_nlink == 0:
                    sizes[info.st_ino] = max(info.st_blocks * 512, info.st_size)
    return sum(sizes.values())


def scratch_fd(pid: int, size: int) -> int | None:
    """A descriptor of the sandbox's ``/dev/shm`` tmpfs, seen from the host through the root
    of its PID 1 (process ``pid``), once it is mounted there (a tmpfs of ``size`` bytes, not
    the host's own ``/dev/shm``); ``None`` before, or where ``/proc`` does not let this
    caller in. The caller closes it."""
    try:
        fd = os.open(f"/proc/{pid}/root/dev/shm", os.O_RDONLY | os.O_DIRECTORY)
    except OSError:
        return None
    try:
        info, mine = os.fstatvfs(fd), os.fstat(fd)
        host = Path("/dev/shm").stat().st_dev if Path("/dev/shm").is_dir() else None  # noqa: S108
    except OSError:
        os.close(fd)
        return None
    if info.f_blocks != -(-size // info.f_frsize) or mine.st_dev == host:
        os.close(fd)  # not mounted yet: what shows is the host's own
        return None
    return fd


def entries(fd: int) -> int:
    """Files, folders and links in the tmpfs open as ``fd`` (its root not counted)."""
    info = os.fstatvfs(fd)
    return max(0, info.f_files - info.f_ffree - 1)
