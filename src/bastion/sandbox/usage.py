"""What a running sandbox holds that no folder walk sees: files deleted while still open.

A command can create a file in the view, keep it open (or mapped), and delete its name: the
disk stays taken until the last descriptor closes, and a walk of the view no longer finds it.
:func:`held_bytes` finds those files through ``/proc``: every process of the sandbox's PID
namespace, each open descriptor and each mapped file, counting the blocks of every regular file
with no name left (``st_nlink == 0``) on the view's file system. The private ``/tmp`` needs no
such count: its tmpfs counts a deleted file against its size until the file is closed.
"""

from __future__ import annotations

import contextlib
import os
import stat
from pathlib import Path

__all__ = ["held_bytes", "members"]


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
