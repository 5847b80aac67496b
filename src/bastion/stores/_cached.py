"""The local store's synchronous fast path: what can be answered without waiting for a disk.

Every call of the local store that may wait runs in a worker thread (``core.offload``). A hop
to a thread costs tens of microseconds, as much as the small read itself, so a read or a stat
first tries here, on the event loop, with system calls that the kernel answers from memory or
refuses at once:

* ``openat2`` with ``RESOLVE_CACHED`` (Linux 5.12+) resolves the path from the dentry cache
  only, and fails with ``EAGAIN`` where a lookup would need the disk; with ``RESOLVE_BENEATH |
  RESOLVE_NO_SYMLINKS`` it is confined below the root as the store's one-lookup read is. An
  ``O_PATH`` open looks at the entry first, so special files are never opened for content.
  A missing name is answered too when the kernel says so from its cache (``ENOENT``) and the
  parent opens the same way as a directory: a sidecar that does not exist costs no hop.
* ``preadv2`` with ``RWF_NOWAIT`` copies the bytes only when they are in the page cache, and
  fails with ``EAGAIN`` (or reads short) otherwise.

Anything else (a miss, a short read, an error, a link, a special file, a read larger than
:data:`FAST_BYTES`) returns ``None``, and the caller does the work in a thread, where the walk
says exactly what is wrong. On a network filesystem (NFS, SMB, FUSE, Ceph, 9p, ...) even a
cached lookup may ask the server, so the fast path is off there.
"""

from __future__ import annotations

import ctypes
import errno
import os
import stat
import sys
from collections.abc import Callable

from bastion.core.errors import NotFoundError
from bastion.core.models import FileInfo
from bastion.core.paths import VPath
from bastion.core.ports import ReadCheck
from bastion.stores._fd import info_of, relative_of

__all__ = ["FAST_BYTES", "MISSING", "CachedReads", "read_fast"]

FAST_BYTES = 256 * 1024
"""The largest read served on the event loop (a copy of this size from memory is tens of
microseconds); larger ones go to a thread."""

_SYS_OPENAT2 = 437
_PATH_MAX = 4096
_RESOLVE_NO_MAGICLINKS = 0x02
_RESOLVE_NO_SYMLINKS = 0x04
_RESOLVE_BENEATH = 0x08
_RESOLVE_CACHED = 0x20
_PATH_FLAGS = getattr(os, "O_PATH", 0) | os.O_NOFOLLOW | os.O_CLOEXEC
_FILE_FLAGS = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_NOCTTY | os.O_CLOEXEC
_NETWORK_FILESYSTEMS = frozenset(
    {
        0x6969,  # nfs
        0x517B,  # smb
        0xFF534D42,  # cifs
        0xFE534D42,  # smb2
        0x65735546,  # fuse (sshfs, s3fs, gcsfuse, ...)
        0x00C36400,  # ceph
        0x01021997,  # 9p
        0x5346414F,  # afs
        0x6B414653,  # kafs
        0x47504653,  # gpfs
        0x0BD00BD0,  # lustre
        0x19830326,  # beegfs
        0x73757245,  # coda
        0x564C,  # ncp
    }
)


class _OpenHow(ctypes.Structure):
    _fields_ = [
        ("flags", ctypes.c_uint64),
        ("mode", ctypes.c_uint64),
        ("resolve", ctypes.c_uint64),
    ]


_Open = Callable[[int, str], int]
"""``openat2`` below a directory descriptor: a descriptor, or minus the ``errno``."""

MISSING = object()
"""What :meth:`CachedReads.stat` returns for a name the kernel knows is not there."""


def _openers() -> tuple[_Open, _Open, Callable[[int], int]] | None:
    """``openat2`` bound to an ``O_PATH`` open and a read open, both cached-only and
    confined; and ``fstatfs``'s filesystem magic. ``None`` off Linux or without libc."""
    if not sys.platform.startswith("linux") or not _PATH_FLAGS & getattr(os, "O_PATH", 0):
        return None
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        syscall, fstatfs = libc.syscall, libc.fstatfs
        get_errno = ctypes.get_errno
    except (AttributeError, OSError):
        return None
    syscall.restype = ctypes.c_long
    syscall.argtypes = [ctypes.c_long, ctypes.c_int, ctypes.c_char_p, ctypes.c_void_p]
    syscall.argtypes.append(ctypes.c_size_t)
    fstatfs.restype = ctypes.c_int
    fstatfs.argtypes = [ctypes.c_int, ctypes.c_void_p]
    resolve = _RESOLVE_BENEATH | _RESOLVE_NO_SYMLINKS | _RESOLVE_NO_MAGICLINKS | _RESOLVE_CACHED
    hows = [_OpenHow(flags, 0, resolve) for flags in (_PATH_FLAGS, _FILE_FLAGS)]

    def bind(how: _OpenHow) -> _Open:
        ref, size = ctypes.byref(how), ctypes.sizeof(how)

        def open_cached(dir_fd: int, relative: str) -> int:
            fd = int(syscall(_SYS_OPENAT2, dir_fd, os.fsencode(relative), ref, size))
            return fd if fd >= 0 else -get_errno()

        return open_cached

    def magic(fd: int) -> int:
        buf = (ctypes.c_long * 32)()  # struct statfs: f_type is its first word everywhere
        return int(buf[0]) if fstatfs(fd, buf) == 0 else -1

    return bind(hows[0]), bind(hows[1]), magic


_OPENERS = _openers()


class CachedReads:
    """Stats and small reads below one root descriptor, answered from memory or not at all."""

    __slots__ = ("_open_file", "_open_path", "_root_fd")

    def __init__(self, open_path: _Open, open_file: _Open, root_fd: int) -> None:
        self._open_path = open_path
        self._open_file = open_file
        self._root_fd = root_fd

    @classmethod
    def probe(cls, root_fd: int) -> CachedReads | None:
        """The fast path for this root, or ``None`` where it does not work (an old kernel, a
        seccomp filter, a network filesystem)."""
        if _OPENERS is None:
            return None
        open_path, open_file, magic = _OPENERS
        kind = magic(root_fd)
        if kind < 0 or kind in _NETWORK_FILESYSTEMS:
            return None
        fd = open_path(root_fd, ".")
        if fd < 0:
            return None
        os.close(fd)
        return cls(open_path, open_file, root_fd)

    def stat(self, relative: str) -> os.stat_result | object | None:
        """The entry's status (not following a link); :data:`MISSING` when the kernel knows
        from memory that the name is not in its directory; else ``None``: not in memory,
        anything but a regular file or a directory, any doubt."""
        if len(relative) >= _PATH_MAX:
            return None  # the walk says what is wrong
        fd = self._open_path(self._root_fd, relative)
        if fd == -errno.ENOENT:  # authoritative once the parent is a directory (the root is)
            parent = relative.rpartition("/")[0]
            return MISSING if not parent or self._is_directory(parent) else None
        if fd < 0:
            return None
        try:
            st = os.fstat(fd)
        except OSError:
            return None
        finally:
            os.close(fd)
        return st if stat.S_ISREG(st.st_mode) or stat.S_ISDIR(st.st_mode) else None

    def _is_directory(self, relative: str) -> bool:
        """Whether ``relative`` is a directory, known from memory (one look, no recursion)."""
        fd = self._open_path(self._root_fd, relative)
        if fd < 0:
            return False
        try:
            return stat.S_ISDIR(os.fstat(fd).st_mode)
        except OSError:
            return False
        finally:
            os.close(fd)

    def open(self, relative: str) -> tuple[int, os.stat_result] | object | None:
        """A read descriptor on the regular file, and its status; :data:`MISSING` or
        ``None`` as for :meth:`stat` (``None`` for a directory)."""
        seen = self.stat(relative)
        if seen is MISSING:
            return MISSING
        if not isinstance(seen, os.stat_result) or not stat.S_ISREG(seen.st_mode):
            return None
        fd = self._open_file(self._root_fd, relative)
        if fd < 0:
            return None
        try:
            st = os.fstat(fd)
        except OSError:
            os.close(fd)
            return None
        if not stat.S_ISREG(st.st_mode):  # swapped since the look: the walk refuses it
            os.close(fd)
            return None
        return fd, st


def _read_cached(fd: int, offset: int, end: int) -> bytes | None:
    """Bytes ``offset`` to ``end`` of the file open on ``fd`` if all are in the page cache,
    else ``None``."""
    size = end - offset
    if size <= 0:
        return b""
    buf = bytearray(size)
    try:
        got = os.preadv(fd, [buf], offset, os.RWF_NOWAIT)
    except OSError:  # EAGAIN (not cached), EOPNOTSUPP (no RWF_NOWAIT here), any other
        return None
    return bytes(buf) if got == size else None


def read_fast(
    cached: CachedReads | None,
    path: VPath,
    offset: int,
    length: int | None,
    check: ReadCheck | None,
) -> tuple[FileInfo, bytes] | None:
    """A read of the local store answered from memory on the event loop, or ``None``."""
    if cached is None:
        return None
    relative = relative_of(path)
    opened = None if relative is None else cached.open(relative)
    if opened is MISSING:
        raise NotFoundError(path=path)
    if not isinstance(opened, tuple):
        return None
    fd, st = opened
    try:
        end = st.st_size if length is None else min(st.st_size, offset + length)
        if end - offset > FAST_BYTES:
            return None
        info = info_of(path, st)
        if check is not None:
            check(info)
        data = _read_cached(fd, offset, end)
    finally:
        os.close(fd)
    return None if data is None else (info, data)
