"""Descriptor-level helpers of the local store (``bastion.stores.local``).

Everything here works on directory descriptors and single names, never on host path strings:
the store's confinement rests on these functions (see the ``local`` module docstring).

A private module of ``bastion.stores``: its names without a leading underscore are what the
local store imports; those with one stay inside this module.
"""

from __future__ import annotations

import ctypes
import errno
import fcntl
import os
import secrets
import stat
import sys
from collections.abc import Callable
from contextlib import suppress

from bastion.core.errors import (
    AlreadyExistsError,
    DirectoryNotEmptyError,
    InvalidPathError,
    IsADirectoryError_,
    NotADirectoryError_,
    NotFoundError,
    OperationError,
    StoreError,
    UnsupportedFileError,
)
from bastion.core.models import EntryKind, FileInfo
from bastion.core.offload import wait_until
from bastion.core.paths import VPath
from bastion.core.sidecars import SIDECAR_SUFFIX
from bastion.stores._common import disk_fault

TEMP_PREFIX = ".bastion-tmp-"
"""Names starting with this are the store's temporary files: never listed, never addressable."""

DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC
_FILE_FLAGS = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_NOCTTY | os.O_CLOEXEC
_TEMP_FLAGS = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
_CHUNK = 1 << 20
_STEPS_NS = (1_000, 1_000_000, 1_000_000_000, 2_000_000_000)
"""Timestamp granularities of filesystems, finest first: microseconds to FAT's 2 seconds."""
# errno values an O_NOFOLLOW / O_DIRECTORY open returns when the entry is not what we want;
# the entry is then inspected (without following it) to say what it is.
_ODD_NAMES = frozenset({"", ".", ".."})
_WRONG_TYPE = frozenset({errno.ELOOP, errno.EMLINK, errno.ENOTDIR, errno.ENXIO})


_SYS_OPENAT2 = 437  # the same number on every Linux architecture (Linux 5.6 and later)
_RESOLVE_NO_MAGICLINKS = 0x02
_RESOLVE_NO_SYMLINKS = 0x04
_RESOLVE_BENEATH = 0x08


class _OpenHow(ctypes.Structure):
    _fields_ = [
        ("flags", ctypes.c_uint64),
        ("mode", ctypes.c_uint64),
        ("resolve", ctypes.c_uint64),
    ]


def _load_openat2() -> Callable[[int, str], int] | None:
    """``openat2(dir_fd, relative, _FILE_FLAGS, RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS)``: the
    kernel resolves the whole relative path below ``dir_fd`` and fails (-1) on any link."""
    if not sys.platform.startswith("linux"):
        return None
    try:
        syscall = ctypes.CDLL(None, use_errno=True).syscall
    except (AttributeError, OSError):
        return None
    syscall.restype = ctypes.c_long
    syscall.argtypes = [
        ctypes.c_long,
        ctypes.c_int,
        ctypes.c_char_p,
        ctypes.c_void_p,
        ctypes.c_size_t,
    ]
    how = _OpenHow(_FILE_FLAGS, 0, _RESOLVE_BENEATH | _RESOLVE_NO_SYMLINKS | _RESOLVE_NO_MAGICLINKS)
    how_ref, how_size = ctypes.byref(how), ctypes.sizeof(how)

    def open_beneath(dir_fd: int, relative: str) -> int:
        return int(syscall(_SYS_OPENAT2, dir_fd, os.fsencode(relative), how_ref, how_size))

    return open_beneath


openat2_call = _load_openat2()


def last_name(path: VPath) -> str:
    """The last segment of ``path``, re-checked: one plain name, never a traversal."""
    name = path.name
    if name in ("", ".", "..") or "/" in name or "\0" in name:
        raise InvalidPathError(f"{path} has an invalid name segment", path=path)
    if name.startswith(TEMP_PREFIX):
        raise InvalidPathError(
            f"names starting with {TEMP_PREFIX} are reserved; rename {path}", path=path
        )
    return name


def child_path(path: VPath, name: str) -> VPath | None:
    """The path of a listed entry, or ``None`` when the name cannot be addressed as one."""
    if name.startswith(TEMP_PREFIX):
        return None
    try:
        name.encode("utf-8")  # undecodable bytes come back as lone surrogates
        child = path.child(name)
    except (InvalidPathError, UnicodeError):
        return None
    return child if child.name == name else None  # not NFC: would not reach this entry


def version_of(st: os.stat_result) -> str:
    """A local file's version: ``mtime-size-inode-ctime`` (nanoseconds and numbers in hex).
    The status change time is there because no writer can set it back: a program that
    rewrites a file in place keeping its size and setting its modification time back (``cp
    -p`` onto it, ``touch -r``) keeps the inode, so without it the version would not
    change, and a stale ``if_version`` would go through."""
    return "%x-%x-%x-%x" % (st.st_mtime_ns, st.st_size, st.st_ino, st.st_ctime_ns)  # noqa: UP031 (twice as fast as the f-string, on every read)


def info_of(path: VPath, st: os.stat_result) -> FileInfo:
    if stat.S_ISDIR(st.st_mode):
        return FileInfo(path, EntryKind.DIRECTORY, 0, st.st_mtime_ns / 1e9, None)
    return FileInfo(
        path, EntryKind.FILE, st.st_size, st.st_mtime_ns / 1e9, version_of(st), None, st.st_ctime_ns
    )


def _refusal(st: os.stat_result, path: VPath) -> OperationError | None:
    """Why an entry of this type is refused, or ``None`` for a regular file or a directory."""
    mode = st.st_mode
    if stat.S_ISREG(mode) or stat.S_ISDIR(mode):
        return None
    if stat.S_ISLNK(mode):
        return UnsupportedFileError(
            f"{path} is a symbolic link; Bastion does not follow links", path=path
        )
    what = (
        "a FIFO"
        if stat.S_ISFIFO(mode)
        else "a socket"
        if stat.S_ISSOCK(mode)
        else "a device"
        if stat.S_ISCHR(mode) or stat.S_ISBLK(mode)
        else "not a regular file"
    )
    return UnsupportedFileError(f"{path} is {what}; Bastion does not open special files", path=path)


def refuse_special(st: os.stat_result, path: VPath) -> None:
    refusal = _refusal(st, path)
    if refusal is not None:
        raise refusal


def lstat_raw(dir_fd: int, name: str) -> os.stat_result | None:
    """The entry itself (never what a link points to), or ``None`` when there is none."""
    try:
        return os.stat(name, dir_fd=dir_fd, follow_symlinks=False)
    except FileNotFoundError:
        return None


def prime_sidecar(dir_fd: int, name: str) -> None:
    """Look up the sidecar name of the file ``name`` just written, in the writer's thread.
    The labels layer asks for that sidecar next, and a name never looked up cannot be answered
    from the kernel's cache (``RESOLVE_CACHED``: see ``_cached``), so the question would cost
    a second hop to a worker thread; after this look its absence is known from memory."""
    if not name.endswith(SIDECAR_SUFFIX) and len(os.fsencode(name)) <= 255 - len(SIDECAR_SUFFIX):
        with suppress(OSError):
            lstat_raw(dir_fd, name + SIDECAR_SUFFIX)


def lstat_at(dir_fd: int, name: str, path: VPath) -> os.stat_result | None:
    try:
        return lstat_raw(dir_fd, name)
    except OSError as exc:
        raise translate_error(exc, path) from exc


def _fstat(fd: int, path: VPath) -> os.stat_result:
    try:
        return os.fstat(fd)
    except OSError as exc:
        raise translate_error(exc, path) from exc


def _explain(dir_fd: int, name: str, path: VPath, *, want_dir: bool) -> OperationError:
    """Say why opening ``name`` as a directory or a regular file failed."""
    st = lstat_at(dir_fd, name, path)
    if st is None:
        return NotFoundError(path=path)
    refusal = _refusal(st, path)
    if refusal is not None:
        return refusal
    if want_dir and stat.S_ISREG(st.st_mode):
        return NotADirectoryError_(path=path)
    return StoreError(f"{path} changed during the operation; retry", path=path)


def open_at(dir_fd: int, name: str, path: VPath, flags: int) -> int:
    try:
        return os.open(name, flags, dir_fd=dir_fd)
    except OSError as exc:
        if exc.errno in _WRONG_TYPE:
            raise _explain(dir_fd, name, path, want_dir=bool(flags & os.O_DIRECTORY)) from exc
        raise translate_error(exc, path) from exc


def open_file(dir_fd: int, name: str, path: VPath) -> tuple[int, os.stat_result]:
    """A read descriptor on the regular file ``name`` and its ``fstat``; anything else is
    refused, unopened when seen before the open and closed unread when swapped in just
    before it."""
    st = lstat_at(dir_fd, name, path)
    if st is None:
        raise NotFoundError(path=path)
    if stat.S_ISDIR(st.st_mode):
        raise IsADirectoryError_(path=path)
    refuse_special(st, path)
    fd = open_at(dir_fd, name, path, _FILE_FLAGS)
    try:
        st = _fstat(fd, path)
        if stat.S_ISDIR(st.st_mode):
            raise IsADirectoryError_(path=path)
        refuse_special(st, path)
    except BaseException:
        os.close(fd)
        raise
    return fd, st


def pread_range(fd: int, offset: int, end: int, path: VPath) -> bytes:
    """The bytes of ``[offset, end)`` (fewer if the file shrank meanwhile)."""
    if end - offset <= 0:
        return b""
    chunks: list[bytes] = []
    pos = offset
    try:
        if end - pos <= _CHUNK:  # the common case: one pread
            first = os.pread(fd, end - pos, pos)
            if len(first) == end - pos or not first:
                return first
            chunks.append(first)
            pos += len(first)
        while pos < end:
            chunk = os.pread(fd, min(end - pos, _CHUNK), pos)
            if not chunk:
                break
            chunks.append(chunk)
            pos += len(chunk)
    except OSError as exc:
        raise translate_error(exc, path) from exc
    return chunks[0] if len(chunks) == 1 else b"".join(chunks)


_NO_LOCKS = frozenset({errno.ENOLCK, errno.EOPNOTSUPP, errno.ENOTSUP, errno.EBADF, errno.EINVAL})


def lock_dir(fd: int, path: VPath, *, shared: bool = False) -> bool:
    """Take the ``flock`` of the directory (or file) open on ``fd``, waiting for its holders:
    exclusive, or ``shared`` with other shared holders.

    The lock belongs to ``fd``'s open file description: it is released when ``fd`` is
    closed, and by the kernel when the process dies (even by SIGKILL). Two descriptions of one
    inode exclude each other, in one process or in two, whatever root they were reached from.
    ``False`` when this filesystem has no such locks (some network disks).

    The wait is a poll (:func:`~bastion.core.offload.wait_until`), so that a call whose caller
    stopped waiting (its mount's timeout) gives up instead of holding its thread."""
    operation = fcntl.LOCK_SH if shared else fcntl.LOCK_EX
    try:
        if _try_lock(fd, operation):
            return True
        wait_until(lambda: _try_lock(fd, operation))
    except OSError as exc:
        if exc.errno in _NO_LOCKS:
            return False
        raise translate_error(exc, path) from exc
    return True


def _try_lock(fd: int, operation: int) -> bool:
    try:
        fcntl.flock(fd, operation | fcntl.LOCK_NB)
    except BlockingIOError:
        return False
    return True


def lock_entry(dir_fd: int, name: str, path: VPath) -> tuple[bool, int]:
    """Lock the entry ``name`` of the directory ``dir_fd`` against every other writer of it.

    A regular file: the directory's lock shared, then the file's own lock exclusive (writers
    of different files of one directory go on together), re-checked to be the file that
    ``name`` still names (a writer that replaced it meanwhile: lock the new one). No file, or
    anything else: the directory's lock exclusive (creating a name excludes every writer of
    the directory). Returns whether this filesystem has locks, and the file's descriptor (-1
    for none); closing it and ``dir_fd`` releases everything. Special files are never opened."""
    if not lock_dir(dir_fd, path, shared=True):
        return False, -1
    while True:
        seen = lstat_at(dir_fd, name, path)
        fd = -1
        if seen is not None and stat.S_ISREG(seen.st_mode):
            with suppress(OSError):  # unreadable, or swapped for something else: the directory
                fd = os.open(name, _FILE_FLAGS, dir_fd=dir_fd)
        if fd < 0:
            lock_dir(dir_fd, path)  # shared to exclusive: the caller looks again under it
            return True, -1
        try:
            st = _fstat(fd, path)
            locked = stat.S_ISREG(st.st_mode) and lock_dir(fd, path)
            now = lstat_at(dir_fd, name, path)
        except BaseException:
            os.close(fd)
            raise
        if locked and now is not None and (now.st_dev, now.st_ino) == (st.st_dev, st.st_ino):
            return True, fd
        os.close(fd)
        if not locked:  # not a regular file after all, or a file without locks
            lock_dir(dir_fd, path)
            return True, -1


def probe_openat2(open_beneath: Callable[[int, str], int], root_fd: int) -> bool:
    """Whether ``openat2`` works here (a seccomp filter or an old kernel may refuse it)."""
    fd = open_beneath(root_fd, ".")
    if fd < 0:
        return False
    os.close(fd)
    return True


def make_temp(dir_fd: int, path: VPath, *, private: bool) -> tuple[str, int]:
    # An existing file's content must not be readable through a looser temporary file: start
    # at 0600 and take the old mode just before the rename. A new file starts at 0666 & ~umask.
    perms = 0o600 if private else 0o666
    for _ in range(8):
        tmp = TEMP_PREFIX + secrets.token_hex(8)
        try:
            return tmp, os.open(tmp, _TEMP_FLAGS, perms, dir_fd=dir_fd)
        except FileExistsError:
            continue
        except OSError as exc:
            raise translate_error(exc, path) from exc
    raise StoreError(f"could not create a temporary file next to {path}; retry", path=path)


def stamp_past(fd: int, floor_ns: int, path: VPath) -> os.stat_result:
    """Stamp ``fd`` later than ``floor_ns`` where the filesystem cut the stamp to its own
    granularity (seconds on ext4 with small inodes, two seconds on FAT): the next step of
    that granularity; the file's status then. Without it the version would repeat, and so let
    a stale ``if_version`` through once an inode number comes back."""
    for step in _STEPS_NS:
        stamp = floor_ns + step
        os.utime(fd, ns=(stamp, stamp))
        st = os.fstat(fd)
        if st.st_mtime_ns > floor_ns:
            os.fsync(fd)
            return st
    raise StoreError(
        f"{path}: this disk's file times cannot tell two versions apart; "
        "mount the store on a filesystem with finer timestamps",
        path=path,
    )


def write_all(fd: int, data: memoryview) -> None:
    while data:
        data = data[os.write(fd, data) :]


def copy_contents(src: int, dst: int) -> None:
    offset = 0
    while chunk := os.pread(src, _CHUNK, offset):
        write_all(dst, memoryview(chunk))
        offset += len(chunk)


def unlink_quietly(dir_fd: int, name: str) -> None:
    with suppress(OSError):  # best effort: a leftover temporary file is hidden and harmless
        os.unlink(name, dir_fd=dir_fd)


def _names(dir_fd: int) -> list[str]:
    with os.scandir(dir_fd) as it:
        return [entry.name for entry in it]


def remove_dir(parent_fd: int, name: str, path: VPath) -> None:
    """``rmdir``, where temporary files left by killed writers do not count: they are never
    listed, so the directory looks empty. Under the directory's own lock, exclusive (every
    writer in it holds that lock from its temporary file to its rename), a temporary file is
    a leftover: removed, then the directory is. Anything else there, or the lock held by a
    writer at work (not waited for: a move holding it may wait for the parent's lock, which
    the caller holds): ``ENOTEMPTY`` as before."""
    try:
        os.rmdir(name, dir_fd=parent_fd)
        return
    except OSError as exc:
        if exc.errno not in (errno.ENOTEMPTY, errno.EEXIST):
            raise
        refusal = exc
    fd = open_at(parent_fd, name, path, DIR_FLAGS)
    try:
        names = _names(fd)
        if not names or not all(n.startswith(TEMP_PREFIX) for n in names):
            raise refusal
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:  # held by a writer, or no locks here: the files may be in use
            raise refusal from None
        names = _names(fd)  # looked at again under the lock
        if not all(n.startswith(TEMP_PREFIX) for n in names):
            raise refusal
        for leftover in names:
            unlink_quietly(fd, leftover)
        os.rmdir(name, dir_fd=parent_fd)
    finally:
        os.close(fd)


def remove_tree(parent_fd: int, name: str, path: VPath) -> None:
    """Delete the directory ``name`` and everything in it, bottom-up, without following a link
    (links are unlinked themselves). Iterative, one descriptor per level."""
    top = open_at(parent_fd, name, path, DIR_FLAGS)
    stack: list[tuple[int, str, list[str]]] = []
    try:
        stack.append((top, name, _names(top)))
    except BaseException:
        os.close(top)
        raise
    try:
        while stack:
            fd, dname, pending = stack[-1]
            if not pending:
                stack.pop()
                os.close(fd)
                os.rmdir(dname, dir_fd=stack[-1][0] if stack else parent_fd)
                continue
            entry = pending.pop()
            try:
                st = os.stat(entry, dir_fd=fd, follow_symlinks=False)
            except FileNotFoundError:
                continue
            if not stat.S_ISDIR(st.st_mode):
                os.unlink(entry, dir_fd=fd)
                continue
            try:
                child = os.open(entry, DIR_FLAGS, dir_fd=fd)
            except OSError as exc:
                if exc.errno not in _WRONG_TYPE:
                    raise
                os.unlink(entry, dir_fd=fd)  # swapped for a link or a file: remove that
                continue
            try:
                stack.append((child, entry, _names(child)))
            except BaseException:
                os.close(child)
                raise
    finally:
        for fd, _, _ in stack:
            os.close(fd)


def translate_error(exc: OSError, path: VPath) -> OperationError:
    """The Bastion error for a failed system call on ``path`` (never naming host paths)."""
    code = exc.errno
    if code == errno.ENOENT:
        return NotFoundError(path=path)
    if code == errno.EEXIST:
        return AlreadyExistsError(path=path)
    if code == errno.ENOTDIR:
        return NotADirectoryError_(path=path, reason="a component of the path is not a directory")
    if code == errno.EISDIR:
        return IsADirectoryError_(path=path)
    if code == errno.ENOTEMPTY:
        return DirectoryNotEmptyError(path=path)
    if code in (errno.ELOOP, errno.EMLINK):
        return UnsupportedFileError(
            f"{path} is a symbolic link; Bastion does not follow links", path=path
        )
    fault = disk_fault(code, path)
    if fault is not None:
        return fault
    reason = os.strerror(code) if code else type(exc).__name__
    return StoreError(
        f"{path}: local disk error ({reason}); retry, and ask an operator if it persists",
        path=path,
    )


def relative_of(path: VPath) -> str | None:
    """``path`` relative to the root for a one-call lookup (``.`` for the root), or ``None``
    when it cannot be one. Re-checked even though a VPath cannot hold these: one plain name
    per segment (a "/" inside a name would add a segment), no NUL, no reserved temporary
    name. Any doubt goes to the walk, which says exactly what is wrong."""
    parts = path.parts
    if not parts:
        return "."
    relative = "/".join(parts)
    if (
        not _ODD_NAMES.isdisjoint(parts)
        or relative.count("/") != len(parts) - 1
        or "\0" in relative
        or TEMP_PREFIX in relative
    ):
        return None
    return relative


def lock_both(sfd: int, src: VPath, dfd: int, dst: VPath) -> None:
    """Lock the directories of a move: once when they are one, else in inode order (two
    moves that lock the same two directories never wait for each other)."""
    s, d = os.fstat(sfd), os.fstat(dfd)
    if os.path.samestat(s, d):
        lock_dir(sfd, src)
        return
    first, second = sorted([((s.st_dev, s.st_ino), sfd, src), ((d.st_dev, d.st_ino), dfd, dst)])
    lock_dir(first[1], first[2])
    lock_dir(second[1], second[2])
