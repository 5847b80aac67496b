"""A store over a directory on the local disk, confined to it by file descriptors.

Confinement. The root directory is opened once (``O_DIRECTORY``) and kept as a descriptor; the
store never builds a host path string again. Every operation walks from that descriptor one
segment at a time with ``openat(O_DIRECTORY | O_NOFOLLOW)`` and acts on the last segment with a
``*at`` call relative to the parent's descriptor, so a path cannot leave the root: segments are
single names (never ``..``, ``/`` or NUL, re-checked here even though :class:`VPath` already
guarantees it) and no symbolic link is ever followed. Because a parent is held by descriptor once
opened, swapping it for a link afterwards changes nothing; swapping it before it is opened makes
the open fail. (Lookups and reads start from the root descriptor itself; only a listing opens a
fresh description of a directory, whose read offset it must not share.)

One-lookup reads. ``read_file`` (what the workspace reads with) opens the file in one system
call where the kernel offers ``openat2`` (Linux 5.6+): the whole relative path is resolved by
the kernel *beneath* the root descriptor with ``RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS``, so no
link is followed anywhere on the path and nothing outside the root can be reached, atomically.
It first looks at the entry (``fstatat`` without following it) so that special files are not
opened when seen, and checks the opened descriptor with ``fstat``. On any doubt (no
``openat2``, a seccomp filter refusing it, an entry that is not a plain file, any error) it
falls back to the descriptor walk above, which decides and says exactly what is wrong.

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

Versions are ``mtime_ns-size-inode-ctime_ns`` of the file (the status change time, which no
writer can set back, catches a program that rewrites a file in place and puts its size and
modification time back). Each write stamps the new file with a
modification time later than the replaced file's and than any this store stamped before, so a
version never repeats even when the clock is coarse and an inode number is reused. Where the
filesystem keeps coarser times than it is given (seconds on ext4 with 128-byte inodes), the
stamp moves on by that granularity, ahead of the clock while writes of one file come faster.

Writers exclude each other across processes, with ``flock`` on descriptors opened for the
call alone, held from the check to the rename. A write or a delete of an existing file holds
the parent directory's lock shared and the file's own lock exclusive, re-checked to be the
file the name still names (a writer that renamed a new file over it meanwhile: lock that one),
so writers of different files of one directory go on together. A write that creates the name
(or finds anything but a regular file there) holds the directory's lock exclusive; a move holds
both directories' exclusive, in inode order. So the expected-version check, the create-only
check, the copy of an append and the rename are one step against every writer, in this
process or in any other, through any root that reaches the file (locks belong to inodes, not
to paths). The kernel releases a lock when its holder dies, even by SIGKILL; there is no lock
file to leave behind or to hide. A thread lock per store still orders the writers of one
process. On a filesystem
without ``flock`` (some network disks) overwrites go on unlocked, and conditional writes,
create-only writes and appends are refused rather than made unsafe. Programs that write the
directory without the lock (an editor) are not excluded: against them the check is
best-effort.

Nothing waits on the event loop. Every call that may wait (a lock another process holds, an
fsync, a slow or network disk, a tree walk) runs in the store's own pool of worker threads
(``core.offload``), so the mount's timeout (30 s unless the mount says otherwise) bounds it and
the loop goes on serving every other request. A write that times out while waiting for a lock
gives up and changes nothing; one past its commit point (the rename) finishes. Lock waits poll
(``LOCK_NB``, a pause from 0.5 ms doubling to 20 ms) so that an abandoned call frees its
thread. Stats and reads of up to 256 KiB first try on the loop with calls the kernel answers
from memory or refuses at once (``openat2(RESOLVE_CACHED)``, ``preadv2(RWF_NOWAIT)``; see
``_cached``): a hot small read costs no thread hop, a cold one goes to a thread.
"""

from __future__ import annotations

import builtins
import ctypes
import errno
import os
import stat
import threading
import time
import weakref
from collections.abc import Callable
from pathlib import Path

from bastion.core.errors import (
    AlreadyExistsError,
    ConfigurationError,
    DirectoryNotEmptyError,
    IsADirectoryError_,
    NotADirectoryError_,
    NotFoundError,
    StoreError,
)
from bastion.core.listings import Held, Listing, Sought, held_now
from bastion.core.models import FileInfo, WriteMode
from bastion.core.offload import DISK_THREADS, Workers, commit, held
from bastion.core.paths import VPath
from bastion.core.ports import ReadCheck, Store
from bastion.stores._cached import MISSING, CachedReads, read_fast
from bastion.stores._common import check_range, conflict, refuse_unchecked
from bastion.stores._fd import (
    DIR_FLAGS,
    TEMP_PREFIX,
    copy_contents,
    info_of,
    last_name,
    lock_both,
    lock_dir,
    lock_entry,
    lstat_at,
    lstat_raw,
    make_temp,
    open_at,
    open_file,
    openat2_call,
    pread_range,
    prime_sidecar,
    probe_openat2,
    refuse_special,
    relative_of,
    remove_dir,
    remove_tree,
    stamp_past,
    translate_error,
    unlink_quietly,
    version_of,
    write_all,
)
from bastion.stores._listing import listed, odd_in, scan_ahead, scan_for

__all__ = ["TEMP_PREFIX", "LocalStore"]

_RENAME_NOREPLACE = 1


def _load_renameat2() -> Callable[..., int] | None:
    try:
        func = ctypes.CDLL(None, use_errno=True).renameat2
    except (AttributeError, OSError):  # not glibc >= 2.28 / musl, or no libc to load
        return None
    func.argtypes = [ctypes.c_int, ctypes.c_char_p, ctypes.c_int, ctypes.c_char_p, ctypes.c_uint]
    func.restype = ctypes.c_int
    return func


_renameat2 = _load_renameat2()


def _open_confined(self: LocalStore, path: VPath) -> tuple[int, os.stat_result] | None:
    """A read descriptor on the plain file at ``path``, and its status, opened by the one
    confined lookup of :meth:`read_file` (``openat2`` beneath the root, no link anywhere on
    the path), for a caller that reads many files in one worker thread (grep). ``None``
    where the answer must come from :meth:`read_file` instead: no ``openat2``, a network
    filesystem (where even a lookup may wait on a server), a closed store, a subclass
    with reads of its own, anything but a plain file. Blocking; the caller closes it."""
    if self._cached is None or type(self).read_file is not LocalStore.read_file:
        return None
    return self._open_beneath(path)


class LocalStore(Store):
    """Files under one host directory, reached only through descriptors (see the module doc)."""

    kind = "local"
    timeout = 30.0
    """Its calls wait in worker threads, so a mount bounds them (``core.timeouts``)."""
    bounds_own_waits = True
    """It applies the mount's limit to its hops to a thread (``core.offload.CALL_LIMIT``)."""
    gated_commits = True
    """Its write, delete and rename call ``commit()`` before their change (``core.offload``)."""

    def __init__(
        self,
        root: str | os.PathLike[str],
        *,
        create: bool = False,
        threads: int = DISK_THREADS,
    ) -> None:
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
            ).needing("create", True) from exc
        self._root_fd = fd
        self._closed = False
        self._close_fd = weakref.finalize(self, os.close, fd)
        self._lock = threading.Lock()
        self._last_ns = 0
        self._openat2 = (
            openat2_call if openat2_call is not None and probe_openat2(openat2_call, fd) else None
        )
        self._cached = CachedReads.probe(fd)
        self._workers = Workers("bastion-local", threads)

    def close(self) -> None:
        """Release the root descriptor; the store cannot be used afterwards. Call it only when
        no other call is in flight (the descriptor number could be reused under that call);
        without ``close`` the descriptor is released when the store is garbage-collected."""
        self._closed = True
        self._cached = None
        self._workers.close()
        self._close_fd()

    def describe(self) -> str:
        return "local disk"

    @property
    def root_fd(self) -> int:
        """The store's own descriptor of its root folder (the sandbox binds a read-only local
        mount from it). It stays the store's: never close it; open ``/proc/self/fd/N`` for a
        descriptor of your own."""
        return self._root_fd

    open_confined = _open_confined  # a module function: the class is at its method cap

    # -- primitives --------------------------------------------------------------------------

    async def stat(self, path: VPath) -> FileInfo:
        cached = self._cached
        if cached is not None:
            relative = relative_of(path)
            seen = None if relative is None else cached.stat(relative)
            if isinstance(seen, os.stat_result):
                return info_of(path, seen)
            if seen is MISSING:
                raise NotFoundError(path=path)
        return await self._workers.run(self._stat, path)

    def cached_presence(self, path: VPath) -> bool | None:
        """Whether a file or a folder is at ``path``, as the kernel knows from memory
        (``_cached``); ``None`` when it would have to look (a name never looked up), or for
        anything else there. The guard writes a new name without a stat first when it is
        not known to be there (``Admission.write``)."""
        cached = self._cached
        relative = relative_of(path)
        if cached is None or relative is None:
            return None
        seen = cached.stat(relative)
        if seen is MISSING:
            return False
        return True if isinstance(seen, os.stat_result) else None

    async def read_range(self, path: VPath, offset: int = 0, length: int | None = None) -> bytes:
        check_range(offset, length)
        if path.is_root:
            raise IsADirectoryError_(path="/")
        fast = read_fast(self._cached, path, offset, length, None)
        if fast is not None:
            return fast[1]
        return await self._workers.run(self._read_range, path, offset, length)

    async def read_file(
        self,
        path: VPath,
        offset: int = 0,
        length: int | None = None,
        *,
        check: ReadCheck | None = None,
    ) -> tuple[FileInfo, bytes]:
        """One lookup: open the file (by ``openat2`` where the kernel has it, else by the
        descriptor walk), then its info from that descriptor, ``check``, and the bytes."""
        check_range(offset, length)
        if path.is_root:
            raise IsADirectoryError_(path="/")
        fast = read_fast(self._cached, path, offset, length, check)
        if fast is not None:
            return fast
        return await self._workers.run(self._read_file, path, offset, length, check)

    async def write(
        self,
        path: VPath,
        data: bytes,
        *,
        mode: WriteMode = WriteMode.OVERWRITE,
        if_version: str | None = None,
    ) -> FileInfo:
        mode = self.begin_write(path, mode)
        return await self._workers.run(self._write, path, data, mode, if_version)

    async def delete(self, path: VPath, *, recursive: bool = False) -> None:
        if path.is_root:
            raise IsADirectoryError_("cannot delete the store root")
        await self._workers.run(self._delete, path, recursive)

    async def list(self, path: VPath) -> list[FileInfo]:
        holding = held_now()
        if holding is None:
            return await self._workers.run(listed, self._open_dir, path)
        return builtins.list((await self._held(holding, path))[0])

    async def list_sought(self, path: VPath, sought: Sought) -> builtins.list[FileInfo]:
        """Files ``sought`` does not keep are told by their directory entries (no ``lstat``)
        and left out; within a call holding listings, so are folders below it ``sought``
        does not go into (``stores._listing``)."""
        holding = held_now()
        if holding is None:
            return (await self._workers.run(scan_for, self._open_dir, path, sought.keeps))[0]
        found = holding.get_sought(self, path.parts, sought)
        if found is None:
            more = [VPath(p) for p in holding.expected(self, path.parts)]
            run = self._workers.run
            made = await run(scan_ahead, self._open_dir, path, None, more, sought)
            for parts, listing in made.items():
                if holding.get_sought(self, parts, sought) is None:
                    holding.sought[self, parts] = (sought, listing)
            found = made[path.parts]
        return builtins.list(found[0])

    async def odd_names(self, path: VPath) -> frozenset[str]:
        """Links, special files and non-NFC names in ``path`` (which ``list`` leaves out)."""
        holding = held_now()
        if holding is None:
            return await self._workers.run(odd_in, self._open_dir, path)
        odd = holding.odd(self, path.parts)
        return odd if odd is not None else (await self._held(holding, path))[1]

    async def _held(self, holding: Held, path: VPath) -> Listing:
        """The listing of ``path`` held by the current call (``core.listings``): made on the
        first ask, in one trip to a worker thread with the folders the call expects next."""
        found = holding.get(self, path.parts)
        if found is not None:
            return found
        more = [VPath(p) for p in holding.expected(self, path.parts)]
        scanned = await self._workers.run(scan_ahead, self._open_dir, path, holding.ahead, more)
        for parts, listing in scanned.items():
            if holding.get(self, parts) is None:
                holding.put(self, parts, listing)
        return scanned[path.parts]

    async def mkdir(self, path: VPath) -> None:
        if path.is_root:
            raise AlreadyExistsError(path="/")
        await self._workers.run(self._mkdir, path)

    async def rename(self, src: VPath, dst: VPath) -> None:
        if src.is_root or dst.is_root:
            raise IsADirectoryError_("cannot move the store root")
        if dst.is_relative_to(src):
            raise NotADirectoryError_(f"cannot move {src} into itself", path=src)
        await self._workers.run(self._rename, src, dst)

    # -- the same, in a worker thread ----------------------------------------------------------

    def _stat(self, path: VPath) -> FileInfo:
        if path.is_root:
            fd = self._open_dir(path)
            try:
                return info_of(path, os.fstat(fd))
            finally:
                os.close(fd)
        pfd = self._parent_fd(path)
        try:
            st = lstat_at(pfd, last_name(path), path)
            if st is None:
                # a name about to be made (a write, a move's target): its labels' sidecar is
                # asked for next, answered from memory once looked up here
                prime_sidecar(pfd, last_name(path))
        finally:
            self._release(pfd)
        if st is None:
            raise NotFoundError(path=path)
        refuse_special(st, path)
        return info_of(path, st)

    def _read_range(self, path: VPath, offset: int, length: int | None) -> bytes:
        fd, st = self._open_walked(path)
        try:
            end = st.st_size if length is None else min(st.st_size, offset + length)
            return pread_range(fd, offset, end, path)
        finally:
            os.close(fd)

    def _read_file(
        self, path: VPath, offset: int, length: int | None, check: ReadCheck | None
    ) -> tuple[FileInfo, bytes]:
        opened = self._open_beneath(path)
        fd, st = opened if opened is not None else self._open_walked(path)
        try:
            info = info_of(path, st)
            if check is not None:
                check(info)
            end = st.st_size if length is None else min(st.st_size, offset + length)
            return info, pread_range(fd, offset, end, path)
        finally:
            os.close(fd)

    def _write(self, path: VPath, data: bytes, mode: WriteMode, if_version: str | None) -> FileInfo:
        with held(self._lock):
            pfd = self._open_parent(path)
            lock_fd = -1
            try:
                locked, lock_fd = lock_entry(pfd, last_name(path), path)
                if not locked:
                    refuse_unchecked(path, mode, if_version)
                info = self._write_locked(pfd, path, memoryview(data), mode, if_version)
                prime_sidecar(pfd, last_name(path))
                return info
            finally:
                if lock_fd >= 0:
                    os.close(lock_fd)
                os.close(pfd)  # the locks go with the descriptors

    def _delete(self, path: VPath, recursive: bool) -> None:
        with held(self._lock):
            pfd = self._open_dir(path.parent)
            lock_fd = -1
            try:
                name = last_name(path)
                # where locks are missing there is no check to protect: delete anyway
                lock_fd = lock_entry(pfd, name, path)[1]
                st = lstat_at(pfd, name, path)
                if st is None:
                    raise NotFoundError(path=path)
                refuse_special(st, path)
                commit()
                try:
                    if not stat.S_ISDIR(st.st_mode):
                        os.unlink(name, dir_fd=pfd)
                    elif recursive:
                        remove_tree(pfd, name, path)
                    else:
                        remove_dir(pfd, name, path)
                    os.fsync(pfd)
                except OSError as exc:
                    if exc.errno in (errno.ENOTEMPTY, errno.EEXIST):
                        hint = (
                            "it changed while being deleted; retry"
                            if recursive
                            else "pass recursive=True to delete it and its contents"
                        )
                        raise DirectoryNotEmptyError(
                            f"{path} is not empty; {hint}", path=path
                        ).needing("recursive", True) from exc
                    raise translate_error(exc, path) from exc
            finally:
                if lock_fd >= 0:
                    os.close(lock_fd)
                os.close(pfd)

    def _mkdir(self, path: VPath) -> None:
        with held(self._lock):
            pfd = self._open_parent(path)
            try:
                os.mkdir(last_name(path), 0o777, dir_fd=pfd)
                os.fsync(pfd)
            except OSError as exc:
                raise translate_error(exc, path) from exc
            finally:
                os.close(pfd)

    def _rename(self, src: VPath, dst: VPath) -> None:
        with held(self._lock):
            sfd = self._open_dir(src.parent)
            try:
                if src.parent == dst.parent:  # a rename within a folder: one descriptor
                    lock_dir(sfd, src)
                    self._rename_locked(sfd, src, sfd, dst)
                    return
                dfd = self._open_parent(dst)
                try:
                    lock_both(sfd, src, dfd, dst)
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
        fd = open_at(self._root_fd, ".", VPath.ROOT, DIR_FLAGS)
        try:
            for depth in range(1, len(path.parts) + 1):
                here = VPath(path.parts[:depth])
                parent, fd = fd, open_at(fd, last_name(here), here, DIR_FLAGS)
                os.close(parent)
        except BaseException:
            os.close(fd)
            raise
        return fd

    def _parent_fd(self, path: VPath) -> int:
        """A descriptor on the parent directory of ``path``, for ``*at`` calls only (never to
        list): the root descriptor itself when the parent is the root. Give it back with
        :meth:`_release`."""
        if self._closed:
            raise StoreError("the local store is closed")
        if len(path.parts) == 1:
            return self._root_fd
        fd = self._root_fd
        try:
            for depth in range(1, len(path.parts)):
                here = VPath(path.parts[:depth])
                parent, fd = fd, open_at(fd, last_name(here), here, DIR_FLAGS)
                self._release(parent)
        except BaseException:
            self._release(fd)
            raise
        return fd

    def _release(self, fd: int) -> None:
        if fd != self._root_fd:
            os.close(fd)

    def _open_walked(self, path: VPath) -> tuple[int, os.stat_result]:
        """A read descriptor on the regular file ``path`` and its ``fstat``, walked from the
        root one directory descriptor at a time."""
        pfd = self._parent_fd(path)
        try:
            return open_file(pfd, last_name(path), path)
        finally:
            self._release(pfd)

    def _open_beneath(self, path: VPath) -> tuple[int, os.stat_result] | None:
        """The fast way to :meth:`_open_walked`: one ``openat2`` that the kernel confines
        below the root and refuses through any link. ``None`` whenever it cannot decide
        alone (no ``openat2``, not a plain regular file, any error): the walk then decides and
        says exactly what is wrong."""
        open_beneath = self._openat2
        if open_beneath is None or self._closed:
            return None
        relative = relative_of(path)
        if relative is None or path.is_root:
            return None
        try:
            # Special files are not opened at all when seen first (as on the walk).
            seen = os.stat(relative, dir_fd=self._root_fd, follow_symlinks=False)
        except (OSError, ValueError):
            return None
        if not stat.S_ISREG(seen.st_mode):
            return None
        fd = open_beneath(self._root_fd, relative)
        if fd < 0:
            return None
        try:
            st = os.fstat(fd)
        except OSError:
            os.close(fd)
            return None
        if not stat.S_ISREG(st.st_mode):  # swapped since the check: refused on the walk
            os.close(fd)
            return None
        return fd, st

    def _open_parent(self, path: VPath) -> int:
        try:
            return self._open_dir(path.parent)
        except NotFoundError as exc:
            raise NotFoundError(
                f"parent directory {path.parent} does not exist", path=path.parent
            ) from exc

    def _next_ns(self, replaced: os.stat_result | None) -> int:
        """A modification time later than the ``replaced`` file's and than any this store
        stamped before (see versions)."""
        floor = 0 if replaced is None else replaced.st_mtime_ns + 1
        self._last_ns = max(time.time_ns(), self._last_ns + 1, floor)
        return self._last_ns

    def _write_locked(
        self,
        pfd: int,
        path: VPath,
        data: memoryview,
        mode: WriteMode,
        if_version: str | None,
    ) -> FileInfo:
        name = last_name(path)
        current = lstat_at(pfd, name, path)
        if current is not None:
            if stat.S_ISDIR(current.st_mode):
                raise IsADirectoryError_(path=path)
            refuse_special(current, path)
            if mode is WriteMode.CREATE:
                raise AlreadyExistsError(path=path)
        appending = current is not None and mode is WriteMode.APPEND
        old_fd = -1
        if appending:
            # the version of what is actually appended to
            old_fd, current = open_file(pfd, name, path)
        try:
            if if_version is not None and (current is None or version_of(current) != if_version):
                raise conflict(path, if_version)
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
        name = last_name(path)
        tmp, tfd = make_temp(pfd, path, private=current is not None)
        try:
            if old_fd >= 0:
                copy_contents(old_fd, tfd)
            write_all(tfd, data)
            if current is not None:
                os.fchmod(tfd, stat.S_IMODE(current.st_mode) & 0o777)
            stamp = self._next_ns(current)
            os.utime(tfd, ns=(stamp, stamp))
            os.fsync(tfd)
            final = os.fstat(tfd)
            if current is not None and final.st_mtime_ns <= current.st_mtime_ns:
                final = stamp_past(tfd, current.st_mtime_ns, path)
                self._last_ns = max(self._last_ns, final.st_mtime_ns)
            commit()
            if mode is WriteMode.CREATE:
                _link_new(pfd, tmp, name)
            else:
                os.rename(tmp, name, src_dir_fd=pfd, dst_dir_fd=pfd)
            tmp = ""
            os.fsync(pfd)
            final = os.fstat(tfd)  # a rename or a link changes the status change time
        except OSError as exc:
            raise translate_error(exc, path) from exc
        finally:
            os.close(tfd)
            if tmp:
                unlink_quietly(pfd, tmp)
        return info_of(path, final)

    def _rename_locked(self, sfd: int, src: VPath, dfd: int, dst: VPath) -> None:
        sname, dname = last_name(src), last_name(dst)
        st = lstat_at(sfd, sname, src)
        if st is None:
            raise NotFoundError(path=src)
        refuse_special(st, src)
        commit()
        try:
            if not _rename_noreplace(sfd, sname, dfd, dname):
                # No renameat2 here: the lock makes check-then-rename atomic for this store.
                if lstat_at(dfd, dname, dst) is not None:
                    raise AlreadyExistsError(path=dst)
                os.rename(sname, dname, src_dir_fd=sfd, dst_dir_fd=dfd)
            os.fsync(dfd)
            if sfd != dfd and not os.path.samestat(os.fstat(sfd), os.fstat(dfd)):
                os.fsync(sfd)
        except OSError as exc:
            raise translate_error(exc, dst if exc.errno == errno.EEXIST else src) from exc


# -- helpers that tests swap out (module globals) ------------------------------------------


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
            if lstat_raw(dir_fd, name) is not None:
                raise FileExistsError(errno.EEXIST, os.strerror(errno.EEXIST)) from exc
            os.rename(tmp, name, src_dir_fd=dir_fd, dst_dir_fd=dir_fd)
        return
    unlink_quietly(dir_fd, tmp)
