"""A store over a directory on the local disk, confined to it by file descriptors.

Confinement. The root directory is opened once (``O_DIRECTORY``) and kept as a descriptor; the
store never builds a host path string again. Every operation walks from that descriptor one
segment at a time with ``openat(O_DIRECTORY | O_NOFOLLOW)`` and acts on the last segment with a
``*at`` call relative to the parent's descriptor, so a path cannot leave the root: segments are
single names (never ``..``, ``/`` or NUL, re-checked here even though :class:`VPath` already
guarantees it) and no symbolic link is ever followed. Because a parent is held by descriptor once
opened, swapping it for a link afterwards changes nothing; swapping it before it is opened makes
the open fail.

Links and special files. Bastion never follows symbolic links, wherever they point (outside the
root, inside it, nowhere, in a loop): a link as a path component or as the target raises
:class:`UnsupportedFileError`, and so do FIFOs, sockets and devices, which are never opened for
their content. ``list`` leaves them out. A file is opened with ``O_NOFOLLOW | O_NONBLOCK |
O_NOCTTY`` and then checked with ``fstat``: whatever was swapped in between the check and the
open (a link, a FIFO, a device) is refused without blocking and without being read.

Hard links. A hard link to a file outside the root is the same inode as that file and cannot be
told apart from an ordinary file; it is served like any other file. Refusing ``st_nlink > 1``
would break legitimate trees (backups, package caches, git objects) while the real defence lies
elsewhere: only someone who may already read the target can link it (``protected_hardlinks``),
and writes here never modify an existing inode (they rename a new file into place), so a write
to such a link replaces the link and leaves the outside file untouched. The same trust holds for
mount points inside the root: whoever can mount there is the host's administrator.

Writes are atomic. The new content goes to a hidden temporary file in the same directory
(``.bastion-tmp-<hex>``, created with ``O_EXCL``), is fsynced, then renamed over the target
(overwrite, append) or hard-linked to it (create, which fails on any existing entry, even a
dangling link), and the directory is fsynced. Readers see the old or the new file, never a mix.
Append copies the old content and the new bytes into the temporary file. Temporary names are
reserved: they are never listed and cannot be addressed.

Versions are ``mtime_ns-size-inode`` of the file. Each write stamps the new file with a
modification time that increases strictly within the store, so a version never repeats even
when the clock is coarse and an inode number is reused. The expected-version check and the
write are atomic with respect to other writers of the same ``LocalStore`` (one lock per store);
across processes, or against other programs editing the directory, the check is best-effort.

The methods are ``async`` but make their system calls inline: each is microseconds on a local
disk, cheaper than a hop to a worker thread (a decision of the project lead).
"""

from __future__ import annotations

import ctypes
import errno
import os
import secrets
import stat
import threading
import time
import weakref
from collections.abc import Callable
from contextlib import suppress
from pathlib import Path

from bastion.core.errors import (
    AlreadyExistsError,
    ConfigurationError,
    ConflictError,
    DirectoryNotEmptyError,
    InvalidPathError,
    IsADirectoryError_,
    NotADirectoryError_,
    NotFoundError,
    OperationError,
    StoreError,
    UnsupportedFileError,
)
from bastion.core.models import EntryKind, FileInfo, WriteMode
from bastion.core.paths import VPath
from bastion.core.ports import Store

__all__ = ["TEMP_PREFIX", "LocalStore"]

TEMP_PREFIX = ".bastion-tmp-"
"""Names starting with this are the store's temporary files: never listed, never addressable."""

_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC
_FILE_FLAGS = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_NOCTTY | os.O_CLOEXEC
_TEMP_FLAGS = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
_CHUNK = 1 << 20
_RENAME_NOREPLACE = 1
# errno values an O_NOFOLLOW / O_DIRECTORY open returns when the entry is not what we want;
# the entry is then inspected (without following it) to say what it is.
_WRONG_TYPE = frozenset({errno.ELOOP, errno.EMLINK, errno.ENOTDIR, errno.ENXIO})


def _load_renameat2() -> Callable[..., int] | None:
    try:
        func = ctypes.CDLL(None, use_errno=True).renameat2
    except (AttributeError, OSError):  # not glibc >= 2.28 / musl, or no libc to load
        return None
    func.argtypes = [ctypes.c_int, ctypes.c_char_p, ctypes.c_int, ctypes.c_char_p, ctypes.c_uint]
    func.restype = ctypes.c_int
    return func


_renameat2 = _load_renameat2()


class LocalStore(Store):
    """Files under one host directory, reached only through descriptors (see the module doc)."""

    kind = "local"

    def __init__(self, root: str | os.PathLike[str], *, create: bool = False) -> None:
        if os.open not in os.supports_dir_fd or os.stat not in os.supports_follow_symlinks:
            raise ConfigurationError("LocalStore needs *at() system calls (Linux or BSD)")
        if create:
            try:
                Path(root).mkdir(parents=True, exist_ok=True)
            except OSError as exc:
                raise ConfigurationError(
                    f"cannot create the local store root {os.fspath(root)!r}: {exc.strerror}"
                ) from exc
        try:
            # The root itself is developer configuration: links in *its* path are resolved once.
            fd = os.open(root, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
        except OSError as exc:
            raise ConfigurationError(
                f"local store root {os.fspath(root)!r} is not an existing directory "
                f"({exc.strerror}); create it or pass create=True"
            ) from exc
        self._root_fd = fd
        self._closed = False
        self._close_fd = weakref.finalize(self, os.close, fd)
        self._lock = threading.Lock()
        self._last_ns = 0

    def close(self) -> None:
        """Release the root descriptor; the store cannot be used afterwards. Call it only when
        no other call is in flight (the descriptor number could be reused under that call);
        without ``close`` the descriptor is released when the store is garbage-collected."""
        self._closed = True
        self._close_fd()

    def describe(self) -> str:
        return "local disk"

    # -- primitives --------------------------------------------------------------------------

    async def stat(self, path: VPath) -> FileInfo:
        if path.is_root:
            fd = self._open_dir(path)
            try:
                return _info(path, os.fstat(fd))
            finally:
                os.close(fd)
        pfd = self._open_dir(path.parent)
        try:
            st = _lstat(pfd, _name(path), path)
        finally:
            os.close(pfd)
        if st is None:
            raise NotFoundError(f"{path} not found")
        _refuse_special(st, path)
        return _info(path, st)

    async def read_range(self, path: VPath, offset: int = 0, length: int | None = None) -> bytes:
        if offset < 0 or (length is not None and length < 0):
            raise ValueError("offset and length must be non-negative")
        if path.is_root:
            raise IsADirectoryError_("/ is a directory")
        pfd = self._open_dir(path.parent)
        try:
            fd = _open_file(pfd, _name(path), path)
        finally:
            os.close(pfd)
        try:
            size = os.fstat(fd).st_size
            end = size if length is None else min(size, offset + length)
            chunks: list[bytes] = []
            pos = offset
            while pos < end:
                chunk = os.pread(fd, min(end - pos, _CHUNK), pos)
                if not chunk:
                    break
                chunks.append(chunk)
                pos += len(chunk)
            return b"".join(chunks)
        except OSError as exc:
            raise _translate(exc, path) from exc
        finally:
            os.close(fd)

    async def write(
        self,
        path: VPath,
        data: bytes,
        *,
        mode: WriteMode = WriteMode.OVERWRITE,
        if_version: str | None = None,
    ) -> FileInfo:
        if path.is_root:
            raise IsADirectoryError_("/ is a directory")
        with self._lock:
            pfd = self._open_parent(path)
            try:
                return self._write_locked(pfd, path, memoryview(data), mode, if_version)
            finally:
                os.close(pfd)

    async def delete(self, path: VPath, *, recursive: bool = False) -> None:
        if path.is_root:
            raise IsADirectoryError_("cannot delete the store root")
        with self._lock:
            pfd = self._open_dir(path.parent)
            try:
                name = _name(path)
                st = _lstat(pfd, name, path)
                if st is None:
                    raise NotFoundError(f"{path} not found")
                _refuse_special(st, path)
                try:
                    if not stat.S_ISDIR(st.st_mode):
                        os.unlink(name, dir_fd=pfd)
                    elif recursive:
                        _remove_tree(pfd, name, path)
                    else:
                        os.rmdir(name, dir_fd=pfd)
                    os.fsync(pfd)
                except OSError as exc:
                    if exc.errno in (errno.ENOTEMPTY, errno.EEXIST):
                        hint = (
                            "it changed while being deleted; retry"
                            if recursive
                            else "pass recursive=True to delete it and its contents"
                        )
                        raise DirectoryNotEmptyError(f"{path} is not empty; {hint}") from exc
                    raise _translate(exc, path) from exc
            finally:
                os.close(pfd)

    async def list(self, path: VPath) -> list[FileInfo]:
        fd = self._open_dir(path)
        entries: list[FileInfo] = []
        try:
            with os.scandir(fd) as it:  # scandir works on a duplicate and leaves fd open
                for entry in it:
                    child = _child(path, entry.name)
                    if child is None:
                        continue
                    try:
                        st = entry.stat(follow_symlinks=False)
                    except FileNotFoundError:
                        continue  # removed while listing
                    if stat.S_ISREG(st.st_mode) or stat.S_ISDIR(st.st_mode):
                        entries.append(_info(child, st))
        except OSError as exc:
            raise _translate(exc, path) from exc
        finally:
            os.close(fd)
        return entries

    async def mkdir(self, path: VPath) -> None:
        if path.is_root:
            raise AlreadyExistsError("/ already exists")
        with self._lock:
            pfd = self._open_parent(path)
            try:
                os.mkdir(_name(path), 0o777, dir_fd=pfd)
                os.fsync(pfd)
            except OSError as exc:
                raise _translate(exc, path) from exc
            finally:
                os.close(pfd)

    async def rename(self, src: VPath, dst: VPath) -> None:
        if src.is_root or dst.is_root:
            raise IsADirectoryError_("cannot move the store root")
        if dst.is_relative_to(src):
            raise NotADirectoryError_(f"cannot move {src} into itself")
        with self._lock:
            sfd = self._open_dir(src.parent)
            try:
                dfd = self._open_parent(dst)
                try:
                    self._rename_locked(sfd, src, dfd, dst)
                finally:
                    os.close(dfd)
            finally:
                os.close(sfd)

    # -- internals ---------------------------------------------------------------------------

    def _open_dir(self, path: VPath) -> int:
        """A new descriptor for the directory ``path``, walked from the root without links."""
        if self._closed:
            raise StoreError("the local store is closed")
        # A fresh open file description, not a dup: a dup would share the directory offset
        # with every other listing of the root, and concurrent listings would lose entries.
        fd = _open_at(self._root_fd, ".", VPath.ROOT, _DIR_FLAGS)
        try:
            for depth in range(1, len(path.parts) + 1):
                here = VPath(path.parts[:depth])
                parent, fd = fd, _open_at(fd, _name(here), here, _DIR_FLAGS)
                os.close(parent)
        except BaseException:
            os.close(fd)
            raise
        return fd

    def _open_parent(self, path: VPath) -> int:
        try:
            return self._open_dir(path.parent)
        except NotFoundError as exc:
            raise NotFoundError(f"parent directory {path.parent} does not exist") from exc

    def _next_ns(self) -> int:
        """A modification time later than any this store stamped before (see versions)."""
        self._last_ns = max(time.time_ns(), self._last_ns + 1)
        return self._last_ns

    def _write_locked(
        self,
        pfd: int,
        path: VPath,
        data: memoryview,
        mode: WriteMode,
        if_version: str | None,
    ) -> FileInfo:
        name = _name(path)
        current = _lstat(pfd, name, path)
        if current is not None:
            if stat.S_ISDIR(current.st_mode):
                raise IsADirectoryError_(f"{path} is a directory")
            _refuse_special(current, path)
            if mode is WriteMode.CREATE:
                raise AlreadyExistsError(f"{path} already exists")
        appending = current is not None and mode is WriteMode.APPEND
        old_fd = _open_file(pfd, name, path) if appending else -1
        try:
            if old_fd >= 0:
                current = _fstat(old_fd, path)  # the version of what is actually appended to
            if if_version is not None and (current is None or _version(current) != if_version):
                raise ConflictError(
                    f"{path} changed since version {if_version}; read it again and retry"
                )
            return self._replace(pfd, path, data, mode, current, old_fd)
        finally:
            if old_fd >= 0:
                os.close(old_fd)

    def _replace(
        self,
        pfd: int,
        path: VPath,
        data: memoryview,
        mode: WriteMode,
        current: os.stat_result | None,
        old_fd: int,
    ) -> FileInfo:
        """Write ``old_fd``'s content (if any) and ``data`` to a temporary file, then move it
        to ``path``: exclusively for CREATE, replacing the old entry otherwise."""
        name = _name(path)
        tmp, tfd = _make_temp(pfd, path, private=current is not None)
        try:
            if old_fd >= 0:
                _copy(old_fd, tfd)
            _write_all(tfd, data)
            if current is not None:
                os.fchmod(tfd, stat.S_IMODE(current.st_mode) & 0o777)
            stamp = self._next_ns()
            os.utime(tfd, ns=(stamp, stamp))
            os.fsync(tfd)
            final = os.fstat(tfd)
            if mode is WriteMode.CREATE:
                _link_new(pfd, tmp, name)
            else:
                os.rename(tmp, name, src_dir_fd=pfd, dst_dir_fd=pfd)
            tmp = ""
            os.fsync(pfd)
        except OSError as exc:
            raise _translate(exc, path) from exc
        finally:
            os.close(tfd)
            if tmp:
                _unlink_quietly(pfd, tmp)
        return _info(path, final)

    def _rename_locked(self, sfd: int, src: VPath, dfd: int, dst: VPath) -> None:
        sname, dname = _name(src), _name(dst)
        st = _lstat(sfd, sname, src)
        if st is None:
            raise NotFoundError(f"{src} not found")
        _refuse_special(st, src)
        try:
            if not _rename_noreplace(sfd, sname, dfd, dname):
                # No renameat2 here: the lock makes check-then-rename atomic for this store.
                if _lstat(dfd, dname, dst) is not None:
                    raise AlreadyExistsError(f"{dst} already exists")
                os.rename(sname, dname, src_dir_fd=sfd, dst_dir_fd=dfd)
            os.fsync(dfd)
            if not os.path.samestat(os.fstat(sfd), os.fstat(dfd)):
                os.fsync(sfd)
        except OSError as exc:
            raise _translate(exc, dst if exc.errno == errno.EEXIST else src) from exc


# -- helpers -----------------------------------------------------------------------------------


def _name(path: VPath) -> str:
    """The last segment of ``path``, re-checked: one plain name, never a traversal."""
    name = path.name
    if name in ("", ".", "..") or "/" in name or "\0" in name:
        raise InvalidPathError(f"{path} has an invalid name segment")
    if name.startswith(TEMP_PREFIX):
        raise InvalidPathError(f"names starting with {TEMP_PREFIX} are reserved; rename {path}")
    return name


def _child(path: VPath, name: str) -> VPath | None:
    """The path of a listed entry, or ``None`` when the name cannot be addressed as one."""
    if name.startswith(TEMP_PREFIX):
        return None
    try:
        name.encode("utf-8")  # undecodable bytes come back as lone surrogates
        child = path.child(name)
    except (InvalidPathError, UnicodeError):
        return None
    return child if child.name == name else None  # not NFC: would not reach this entry


def _version(st: os.stat_result) -> str:
    return f"{st.st_mtime_ns:x}-{st.st_size:x}-{st.st_ino:x}"


def _info(path: VPath, st: os.stat_result) -> FileInfo:
    if stat.S_ISDIR(st.st_mode):
        return FileInfo(path, EntryKind.DIRECTORY, 0, st.st_mtime_ns / 1e9, None)
    return FileInfo(path, EntryKind.FILE, st.st_size, st.st_mtime_ns / 1e9, _version(st))


def _refusal(st: os.stat_result, path: VPath) -> OperationError | None:
    """Why an entry of this type is refused, or ``None`` for a regular file or a directory."""
    mode = st.st_mode
    if stat.S_ISREG(mode) or stat.S_ISDIR(mode):
        return None
    if stat.S_ISLNK(mode):
        return UnsupportedFileError(f"{path} is a symbolic link; Bastion does not follow links")
    what = (
        "a FIFO"
        if stat.S_ISFIFO(mode)
        else "a socket"
        if stat.S_ISSOCK(mode)
        else "a device"
        if stat.S_ISCHR(mode) or stat.S_ISBLK(mode)
        else "not a regular file"
    )
    return UnsupportedFileError(f"{path} is {what}; Bastion does not open special files")


def _refuse_special(st: os.stat_result, path: VPath) -> None:
    refusal = _refusal(st, path)
    if refusal is not None:
        raise refusal


def _lstat_raw(dir_fd: int, name: str) -> os.stat_result | None:
    """The entry itself (never what a link points to), or ``None`` when there is none."""
    try:
        return os.stat(name, dir_fd=dir_fd, follow_symlinks=False)
    except FileNotFoundError:
        return None


def _lstat(dir_fd: int, name: str, path: VPath) -> os.stat_result | None:
    try:
        return _lstat_raw(dir_fd, name)
    except OSError as exc:
        raise _translate(exc, path) from exc


def _fstat(fd: int, path: VPath) -> os.stat_result:
    try:
        return os.fstat(fd)
    except OSError as exc:
        raise _translate(exc, path) from exc


def _explain(dir_fd: int, name: str, path: VPath, *, want_dir: bool) -> OperationError:
    """Say why opening ``name`` as a directory or a regular file failed."""
    st = _lstat(dir_fd, name, path)
    if st is None:
        return NotFoundError(f"{path} not found")
    refusal = _refusal(st, path)
    if refusal is not None:
        return refusal
    if want_dir and stat.S_ISREG(st.st_mode):
        return NotADirectoryError_(f"{path} is a file, not a directory")
    return StoreError(f"{path} changed during the operation; retry")


def _open_at(dir_fd: int, name: str, path: VPath, flags: int) -> int:
    try:
        return os.open(name, flags, dir_fd=dir_fd)
    except OSError as exc:
        if exc.errno in _WRONG_TYPE:
            raise _explain(dir_fd, name, path, want_dir=bool(flags & os.O_DIRECTORY)) from exc
        raise _translate(exc, path) from exc


def _open_file(dir_fd: int, name: str, path: VPath) -> int:
    """A read descriptor on the regular file ``name``; anything else is refused, unopened
    when seen before the open and closed unread when swapped in just before it."""
    st = _lstat(dir_fd, name, path)
    if st is None:
        raise NotFoundError(f"{path} not found")
    if stat.S_ISDIR(st.st_mode):
        raise IsADirectoryError_(f"{path} is a directory")
    _refuse_special(st, path)
    fd = _open_at(dir_fd, name, path, _FILE_FLAGS)
    try:
        st = os.fstat(fd)
        if stat.S_ISDIR(st.st_mode):
            raise IsADirectoryError_(f"{path} is a directory")
        _refuse_special(st, path)
    except BaseException:
        os.close(fd)
        raise
    return fd


def _make_temp(dir_fd: int, path: VPath, *, private: bool) -> tuple[str, int]:
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
            raise _translate(exc, path) from exc
    raise StoreError(f"could not create a temporary file next to {path}; retry")


def _write_all(fd: int, data: memoryview) -> None:
    while data:
        data = data[os.write(fd, data) :]


def _copy(src: int, dst: int) -> None:
    offset = 0
    while chunk := os.pread(src, _CHUNK, offset):
        _write_all(dst, memoryview(chunk))
        offset += len(chunk)


def _rename_noreplace(sfd: int, sname: str, dfd: int, dname: str) -> bool:
    """``renameat2(RENAME_NOREPLACE)``: ``False`` when this system or filesystem lacks it."""
    if _renameat2 is None:
        return False
    rc = _renameat2(sfd, os.fsencode(sname), dfd, os.fsencode(dname), _RENAME_NOREPLACE)
    if rc == 0:
        return True
    code = ctypes.get_errno()
    if code in (errno.ENOSYS, errno.EINVAL, errno.ENOTSUP, errno.EOPNOTSUPP):
        return False
    raise OSError(code, os.strerror(code))


def _link_new(dir_fd: int, tmp: str, name: str) -> None:
    """Give ``tmp`` the new name ``name``, failing if any entry (even a dangling link) has it."""
    try:
        os.link(tmp, name, src_dir_fd=dir_fd, dst_dir_fd=dir_fd, follow_symlinks=False)
    except OSError as exc:
        if exc.errno not in (errno.EPERM, errno.ENOTSUP, errno.EOPNOTSUPP):
            raise
        # A filesystem without hard links: move the temporary file itself, never replacing
        # (without renameat2, check then rename: atomic only under the store's lock).
        if not _rename_noreplace(dir_fd, tmp, dir_fd, name):
            if _lstat_raw(dir_fd, name) is not None:
                raise FileExistsError(errno.EEXIST, os.strerror(errno.EEXIST)) from exc
            os.rename(tmp, name, src_dir_fd=dir_fd, dst_dir_fd=dir_fd)
        return
    _unlink_quietly(dir_fd, tmp)


def _unlink_quietly(dir_fd: int, name: str) -> None:
    with suppress(OSError):  # best effort: a leftover temporary file is hidden and harmless
        os.unlink(name, dir_fd=dir_fd)


def _names(dir_fd: int) -> list[str]:
    with os.scandir(dir_fd) as it:
        return [entry.name for entry in it]


def _remove_tree(parent_fd: int, name: str, path: VPath) -> None:
    """Delete the directory ``name`` and everything in it, bottom-up, without following a link
    (links are unlinked themselves). Iterative, one descriptor per level."""
    top = _open_at(parent_fd, name, path, _DIR_FLAGS)
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
                child = os.open(entry, _DIR_FLAGS, dir_fd=fd)
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


def _translate(exc: OSError, path: VPath) -> OperationError:
    """The Bastion error for a failed system call on ``path`` (never naming host paths)."""
    code = exc.errno
    if code == errno.ENOENT:
        return NotFoundError(f"{path} not found")
    if code == errno.EEXIST:
        return AlreadyExistsError(f"{path} already exists")
    if code == errno.ENOTDIR:
        return NotADirectoryError_(f"{path}: a component of the path is not a directory")
    if code == errno.EISDIR:
        return IsADirectoryError_(f"{path} is a directory")
    if code == errno.ENOTEMPTY:
        return DirectoryNotEmptyError(f"{path} is not empty")
    if code in (errno.ELOOP, errno.EMLINK):
        return UnsupportedFileError(f"{path} is a symbolic link; Bastion does not follow links")
    if code in (errno.EACCES, errno.EPERM):
        return StoreError(f"{path}: permission denied by the local disk")
    reason = os.strerror(code) if code else type(exc).__name__
    return StoreError(f"{path}: local disk error ({reason})")
