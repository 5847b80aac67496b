"""Reading a folder a sandboxed command wrote: by construction, only what it wrote.

The view's host folder is written by an untrusted command, possibly while it is being read (a
background process). So nothing here builds a host path string below the view's root:

- every name is taken as the bytes the kernel listed (``os.listdir`` of a descriptor: bytes
  that are no UTF-8 come back as lone surrogates and go back to the kernel unchanged); no name
  is normalized before it is used on the host;
- every open is of one listed name, relative to the descriptor of the directory that listed
  it, and follows no link: ``openat2`` with ``RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS |
  RESOLVE_NO_MAGICLINKS | RESOLVE_NO_XDEV`` where the kernel has it, else ``openat`` with
  ``O_NOFOLLOW``; always ``O_NONBLOCK | O_NOCTTY``, so a FIFO or a device swapped in at the last
  moment does not block and is not read;
- every descriptor is checked with ``fstat`` after the open: a directory must be the very
  directory that was listed (device and inode), a file a regular file; a link, FIFO, socket or
  device is never opened at all when it is seen as one first.

A file is read through the descriptor that was checked, so what is read is an inode of the view,
whatever the command renames meanwhile: nothing outside the view can arrive.

The walk is iterative (no recursion, however deep the tree) and holds few descriptors: a level's
descriptor is kept only every :data:`CHECKPOINT` levels; a level in between is opened again,
name by name from its nearest held ancestor, when the walk comes back to it, and must still be
the same directory (else it is reported in :attr:`Walk.changed` and left).
"""

from __future__ import annotations

import contextlib
import ctypes
import errno
import os
import stat
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Generic, TypeVar

__all__ = [
    "CHECKPOINT",
    "Item",
    "Walk",
    "holders",
    "ident",
    "open_root",
    "read_regular",
    "remove_tree",
]

CHECKPOINT = 16
"""Every this many levels a directory's descriptor is kept while the walk is below it."""

_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC
_FILE_FLAGS = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_NOCTTY | os.O_CLOEXEC
_CHUNK = 1 << 20

_SYS_OPENAT2 = 437  # the same number on every Linux architecture (Linux 5.6 and later)
_RESOLVE = 0x01 | 0x02 | 0x04 | 0x08  # NO_XDEV | NO_MAGICLINKS | NO_SYMLINKS | BENEATH

T = TypeVar("T")


class _OpenHow(ctypes.Structure):
    _fields_ = [("flags", ctypes.c_uint64), ("mode", ctypes.c_uint64), ("resolve", ctypes.c_uint64)]


def _load_openat2() -> Callable[[int, bytes, int], int] | None:
    if not sys.platform.startswith("linux"):
        return None
    try:
        syscall = ctypes.CDLL(None, use_errno=True).syscall
    except (AttributeError, OSError):
        return None
    syscall.restype = ctypes.c_long
    syscall.argtypes = [ctypes.c_long, ctypes.c_int, ctypes.c_char_p, ctypes.c_void_p]
    syscall.argtypes += [ctypes.c_size_t]

    def openat2(dir_fd: int, name: bytes, flags: int) -> int:
        how = _OpenHow(flags, 0, _RESOLVE)
        fd = int(syscall(_SYS_OPENAT2, dir_fd, name, ctypes.byref(how), ctypes.sizeof(how)))
        if fd < 0:
            code = ctypes.get_errno()
            raise OSError(code, os.strerror(code))
        return fd

    root = os.open("/", _DIR_FLAGS)
    try:  # a kernel without it, or a seccomp filter refusing it: openat with O_NOFOLLOW
        os.close(openat2(root, b".", _DIR_FLAGS))
    except OSError:
        return None
    finally:
        os.close(root)
    return openat2


_openat2 = _load_openat2()


def _open(dir_fd: int, name: str, flags: int) -> int:
    """Open the one listed ``name`` below ``dir_fd``, following no link."""
    if not name or name in (".", "..") or "/" in name or "\0" in name:
        raise OSError(errno.EINVAL, "not a single name")
    if _openat2 is not None:
        return _openat2(dir_fd, os.fsencode(name), flags)
    return os.open(name, flags, dir_fd=dir_fd)


def ident(info: os.stat_result) -> tuple[int, int]:
    return (info.st_dev, info.st_ino)


def open_root(path: Path, expected: tuple[int, int]) -> int:
    """A descriptor of the view's root folder, checked to be the folder that was made."""
    fd = os.open(path, _DIR_FLAGS)
    if ident(os.fstat(fd)) != expected:
        os.close(fd)
        raise OSError(errno.ESTALE, "the view's folder was replaced")
    return fd


@dataclass(frozen=True, slots=True)
class Item(Generic[T]):
    """One entry found by the walk."""

    dir_fd: int
    """The descriptor of the directory that listed it; valid only while the item is handled."""
    name: str
    """The name as the kernel listed it."""
    info: os.stat_result
    """The entry itself (``lstat``: a link is a link)."""
    parent: T
    """What :class:`Walk`'s ``enter`` gave for the directory that listed it."""
    depth: int
    """1 for an entry of the root."""


@dataclass
class _Frame(Generic[T]):
    tag: T
    names: tuple[str, ...]
    ident: tuple[int, int]
    fd: int
    pending: list[str]


@dataclass
class Walk(Generic[T]):
    """Every entry below ``root_fd``, parents first, each directory's entries in name order.

    ``enter(item)`` is asked for every directory found: what it returns (not ``None``) is the
    tag its entries carry as :attr:`Item.parent`, and the walk goes into it; ``None`` leaves
    it unlooked-at. The caller keeps ``root_fd`` (it is never closed here)."""

    root_fd: int
    root: T
    enter: Callable[[Item[T]], T | None]
    unread: list[T] = field(default_factory=list)
    """Tags of directories that could not be read (permissions, too many open descriptors)."""
    changed: list[T] = field(default_factory=list)
    """Tags of directories not read to the end because they changed under the walk: swapped
    for something else between the look and the open, or no longer the directory that was
    listed when the walk came back to it (a live tree)."""

    def __iter__(self) -> Iterator[Item[T]]:
        stack: list[_Frame[T]] = []
        try:
            root = _Frame(self.root, (), ident(os.fstat(self.root_fd)), self.root_fd, [])
            root.pending = _listing(self.root_fd)
            stack.append(root)
            while stack:
                top = stack[-1]
                if not top.pending:
                    stack.pop()
                    if top.fd >= 0 and top is not root:
                        os.close(top.fd)
                    continue
                if top.fd < 0 and not self._reopen(stack):
                    self.changed.append(top.tag)
                    top.pending.clear()
                    continue
                name = top.pending.pop()
                try:
                    info = os.stat(name, dir_fd=top.fd, follow_symlinks=False)
                except FileNotFoundError:
                    continue  # gone since the listing
                item = Item(top.fd, name, info, top.tag, len(top.names) + 1)
                yield item
                if stat.S_ISDIR(info.st_mode):
                    tag = self.enter(item)
                    if tag is not None:
                        self._descend(stack, item, tag)
        finally:
            for frame in stack:
                if frame.fd >= 0 and frame.fd != self.root_fd:
                    os.close(frame.fd)

    def _descend(self, stack: list[_Frame[T]], item: Item[T], tag: T) -> None:
        top = stack[-1]
        try:
            fd = _open(top.fd, item.name, _DIR_FLAGS)
        except OSError as exc:
            if exc.errno in (errno.ENOTDIR, errno.ELOOP):
                self.changed.append(tag)  # swapped for a file or a link since the look
            elif exc.errno != errno.ENOENT:  # gone, with all it held
                self.unread.append(tag)  # there, but not readable
            return
        try:
            if ident(os.fstat(fd)) != ident(item.info):
                os.close(fd)
                self.changed.append(tag)  # another directory swapped in: not entered
                return
            pending = _listing(fd)
        except OSError:
            os.close(fd)
            self.unread.append(tag)
            return
        if top.fd != self.root_fd and len(top.names) % CHECKPOINT:
            os.close(top.fd)
            top.fd = -1
        stack.append(_Frame(tag, (*top.names, item.name), ident(item.info), fd, pending))

    @staticmethod
    def _reopen(stack: list[_Frame[T]]) -> bool:
        """Open the top frame's directory again from its nearest held ancestor, name by name,
        each checked to be the directory it was; ``False`` when one is not."""
        held = max(i for i, frame in enumerate(stack) if frame.fd >= 0)
        fd = stack[held].fd
        for frame in stack[held + 1 :]:
            try:
                child = _open(fd, frame.names[-1], _DIR_FLAGS)
            except OSError:
                child = -1
            if fd != stack[held].fd:
                os.close(fd)
            if child < 0:
                return False
            if ident(os.fstat(child)) != frame.ident:
                os.close(child)
                return False
            fd = child
        stack[-1].fd = fd
        return True


def _names(fd: int) -> list[str]:
    """The names of the directory open on ``fd``, as the kernel lists them."""
    with os.scandir(fd) as listing:
        return [entry.name for entry in listing]


def _listing(fd: int) -> list[str]:
    """The names of the directory open on ``fd``, last first (the walk pops them)."""
    return sorted(_names(fd), reverse=True)


def read_regular(item: Item[T], cap: int) -> tuple[os.stat_result, bytes] | None:
    """The content of the regular file ``item`` (at most ``cap + 1`` bytes: more means over
    ``cap``) and its ``fstat``; ``None`` when it is not the regular file that was listed any
    more. Raises ``OSError`` when it cannot be opened or read."""
    if not stat.S_ISREG(item.info.st_mode):
        return None
    fd = _open(item.dir_fd, item.name, _FILE_FLAGS)
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode) or ident(info) != ident(item.info):
            return None
        chunks: list[bytes] = []
        room = cap + 1
        while room > 0 and (chunk := os.read(fd, min(room, _CHUNK))):
            chunks.append(chunk)
            room -= len(chunk)
        return info, b"".join(chunks)
    finally:
        os.close(fd)


def holders(root: tuple[int, int]) -> list[int]:
    """The processes whose root folder is the directory ``root`` names (device, inode): those
    of a command still running over its view. Processes that cannot be looked at (another
    user's) are not counted; zombies have no root and are not either."""
    found = []
    for entry in os.scandir("/proc"):
        if entry.name.isdigit():
            with contextlib.suppress(OSError):
                if ident(Path(entry.path, "root").stat()) == root:
                    found.append(int(entry.name))
    return found


def remove_tree(path: Path) -> None:
    """Delete the folder ``path`` and everything in it, however deep, following no link: each
    folder's subfolders are first moved up into ``path`` itself (a rename between two held
    descriptors), so no more than three descriptors are open and nothing recurses. A folder
    the command made unreadable to us (mode 000) is given its owner's bits back first. Best
    effort: what cannot be removed is left, never raised."""
    try:
        top = _open_dir_fixing(os.open, path)
    except OSError:
        return
    moved = [0]
    try:
        while names := _names(top):
            if not any([_clear(top, name, moved) for name in names]):
                return  # no progress: leave what is left
    except OSError:
        return
    finally:
        os.close(top)
    with contextlib.suppress(OSError):
        path.rmdir()


def _clear(top: int, name: str, moved: list[int]) -> bool:
    """Remove the entry ``name`` of ``top``: unlink it, or empty it into ``top`` (its files
    unlinked, its folders moved up, named by the count ``moved``) and remove it. Whether
    anything was removed or moved."""
    progress = False
    with contextlib.suppress(OSError):
        info = os.stat(name, dir_fd=top, follow_symlinks=False)
        if not stat.S_ISDIR(info.st_mode):
            os.unlink(name, dir_fd=top)
            return True
        fd = _open_dir_fixing(lambda n, flags: os.open(n, flags, dir_fd=top), name)
        try:
            for sub in _names(fd):
                if stat.S_ISDIR(os.stat(sub, dir_fd=fd, follow_symlinks=False).st_mode):
                    moved[0] += 1
                    os.rename(sub, f".up-{moved[0]}", src_dir_fd=fd, dst_dir_fd=top)
                else:
                    os.unlink(sub, dir_fd=fd)
                progress = True
        finally:
            os.close(fd)
        os.rmdir(name, dir_fd=top)
        return True
    return progress


def _open_dir_fixing(opener: Callable[[str | Path, int], int], name: str | Path) -> int:
    """Open a directory (no link followed); when its mode shuts us out, give its owner read,
    write and search bits back, through a descriptor of that very inode, and open it again."""
    try:
        return opener(name, _DIR_FLAGS)
    except PermissionError:
        pinned = opener(name, os.O_PATH | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC)
        try:
            Path(f"/proc/self/fd/{pinned}").chmod(0o700)
            return os.open(f"/proc/self/fd/{pinned}", _DIR_FLAGS & ~os.O_NOFOLLOW)
        finally:
            os.close(pinned)
