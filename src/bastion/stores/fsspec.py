"""Object storage (S3, GCS, Azure, ...) and any other fsspec filesystem as a Bastion store.

``FsspecStore("s3://bucket/prefix", storage_options={...})`` mounts what fsspec can open.
Object stores have no directories, no append and (mostly) no conditional writes; this store
gives them the store contract on top of a flat namespace of objects (``_fsspec_objects``):

* **Directories** are marker objects written by ``mkdir`` (S3: an empty ``dir/`` object;
  elsewhere a ``.bastion-dir`` file, a reserved name), or any key below them: a bucket filled
  by other tools shows its prefixes as directories. Deleting the last file of such a prefix
  directory leaves a marker, so the directory does not vanish. A write needs its parent
  directory, as on every store.
* **Versions** change on every write: on S3 a token in the object's metadata (see
  ``_fsspec_s3``), elsewhere the filesystem's own tag (GCS generation, Azure ETag) or the
  modification time and size.
* **Conditional writes.** The expected version (``if_version``), create-only writes and
  appends are checked under a lock per key inside this process, and, on S3, by the server too
  (``If-Match`` / ``If-None-Match``): atomic across every process. Other filesystems cannot
  check them across processes, so there they are refused (:class:`StoreError`) rather than
  checked within this process only, unless the namespace lives in this process (fsspec's
  memory filesystem) or the store is made with ``single_process=True``: only this process
  writes under this root, so its lock sees every writer.
* **Ranges.** A read asks the server for the range only (an HTTP ``Range`` request), so
  memory stays near the size of the range whatever the size of the object. ``read_file``
  makes one request on S3: the object's info arrives with the bytes, and ``check`` runs
  before the body is read.
* **Moves** of a file are a server-side copy and a delete; of a directory, a copy of every
  object below it and a delete. Neither is atomic: a move cut short leaves both copies.

Calls are ``async``. Every request runs on fsspec's I/O loop: an asynchronous filesystem
(``fs.async_impl``: s3fs, gcsfs, adlfs) natively there, a blocking one in worker threads
started from there. Callers on any thread or event loop may share one store.

Errors never quote the server's message (it may name buckets or keys): a missing bucket,
refused credentials or an unreachable endpoint is a one-line :class:`StoreError` (or
:class:`StoreUnavailableError`) that starts with the path asked for (``_fsspec_edge``).
"""

from __future__ import annotations

import asyncio
import contextlib
import weakref
from collections.abc import Awaitable, Coroutine, Iterable, Mapping
from contextlib import AsyncExitStack
from typing import Any, TypeVar

from bastion.core.errors import (
    AlreadyExistsError,
    ConfigurationError,
    ConflictError,
    InvalidPathError,
    IsADirectoryError_,
    NotADirectoryError_,
    NotFoundError,
    OperationError,
)
from bastion.core.models import EntryKind, FileInfo, WriteMode
from bastion.core.paths import VPath
from bastion.core.patience import Patience
from bastion.core.ports import ReadCheck, Store
from bastion.stores._common import (
    check_move,
    check_range,
    check_write,
    conflict,
    not_empty,
    refuse_unchecked,
)
from bastion.stores._fsspec_edge import open_filesystem, translate
from bastion.stores._fsspec_objects import (
    ABSENT,
    Body,
    Expect,
    FsspecObjects,
    Obj,
    Objects,
    PreconditionFailed,
)

__all__ = ["FsspecStore"]

T = TypeVar("T")


def _key(path: VPath) -> str:
    return "/".join(path.parts)


def _file(path: VPath, obj: Obj) -> FileInfo:
    return FileInfo(path, EntryKind.FILE, obj.size, obj.mtime, obj.version)


def _child(path: VPath, name: str) -> VPath | None:
    """``path/name`` when ``name`` is a name Bastion can address exactly, else ``None`` (a
    key written by another tool: empty, ``..``, not NFC, a control character...)."""
    try:
        child = path.child(name)
    except InvalidPathError:
        return None
    return child if child.name == name else None


async def _together(check: Awaitable[None], value: Awaitable[T]) -> T:
    """``value``'s result, run concurrently with ``check``; ``check``'s error wins."""
    results: list[Any] = list(await asyncio.gather(check, value, return_exceptions=True))
    for outcome in results:
        if isinstance(outcome, BaseException):
            raise outcome
    result: T = results[1]
    return result


_SHARED_LOCKS: weakref.WeakValueDictionary[tuple[object, str, str], asyncio.Lock] = (
    weakref.WeakValueDictionary()
)
"""Per-key locks of every ``FsspecStore`` of the process (see ``FsspecStore._lock``); used
only on the loop named in their key, so no further lock is needed to reach them."""


class FsspecStore(Store):
    """Files and directories in object storage or any fsspec filesystem (see the module doc).

    ``url_or_fs`` is a URL (``s3://bucket/prefix``, ``gs://bucket``, ``memory://x``) opened
    with ``storage_options`` (credentials, ``endpoint_url``, ...), or a filesystem instance
    made with ``asynchronous=False`` (the default). ``root`` overrides the URL's path: the
    folder (``bucket/prefix`` on object stores) that is this store's ``/``.
    ``single_process=True`` says that no other process writes under this root: conditional
    writes are then allowed on filesystems whose server cannot check them (see the module doc).
    """

    kind = "fsspec"

    def __init__(
        self,
        url_or_fs: Any,
        *,
        root: str | None = None,
        storage_options: Mapping[str, Any] | None = None,
        single_process: bool = False,
    ) -> None:
        fs, base = open_filesystem(url_or_fs, root, storage_options or {})
        if getattr(fs, "asynchronous", False):
            raise ConfigurationError(
                "FsspecStore: pass a filesystem made with asynchronous=False; "
                "the store runs it on fsspec's own I/O loop"
            )
        if hasattr(fs, "_call_s3"):
            from bastion.stores._fsspec_s3 import S3Objects

            self._objects: Objects = S3Objects(fs, base)
        else:
            self._objects = FsspecObjects(fs, base)
        self.kind = self._objects.kind
        # if_version, create-only writes and appends: allowed where they hold for every writer
        objects = self._objects
        self._conditional_ok = objects.server_checks or objects.process_local or single_process
        if fs.async_impl:
            self._loop: asyncio.AbstractEventLoop = fs.loop
        else:
            from fsspec.asyn import get_loop  # type: ignore[import-untyped]

            self._loop = get_loop()
        self._lock_scope = (self._loop, objects.kind, objects.location)

    def describe(self) -> str:
        return self._objects.describe()

    async def check(self) -> None:
        """Make one request to the storage; raise :class:`StoreError` when the bucket is
        missing, the credentials are refused or the endpoint is unreachable."""
        await self._run(VPath.ROOT, self._objects.probe())

    async def close(self) -> None:
        """Close the connections; the store cannot be used afterwards."""
        await self._run(VPath.ROOT, self._objects.close())

    # -- running on the filesystem's loop ----------------------------------------------------

    async def _run(self, path: VPath, work: Coroutine[Any, Any, T]) -> T:
        async def translated() -> T:
            try:
                return await work
            except (OperationError, ValueError):
                raise
            except Exception as exc:  # noqa: BLE001 - every foreign error becomes ours
                raise translate(exc, path) from None

        try:
            running = asyncio.get_running_loop()
        except RuntimeError:  # pragma: no cover - always called from a coroutine
            running = None
        if running is self._loop:
            return await translated()
        future = asyncio.run_coroutine_threadsafe(translated(), self._loop)
        return await asyncio.wrap_future(future)

    def _lock(self, key: str) -> asyncio.Lock:
        """The lock of ``key`` shared by every store of this process over the same objects
        (the filesystem's protocol and the key's full path, on the loop the store runs on):
        two workspaces or mounts over one bucket prefix or fsspec's memory filesystem (one
        namespace per process) check their conditions under the same lock. A lock per store
        object let two of them check the same version and both write."""
        loop, kind, root = self._lock_scope
        full = f"{root}/{key}" if key else root
        ident = (loop, kind, full)
        lock = _SHARED_LOCKS.get(ident)
        if lock is None:
            lock = _SHARED_LOCKS[ident] = asyncio.Lock()
        return lock

    async def _locked(self, keys: Iterable[str], work: Awaitable[T]) -> T:
        async with AsyncExitStack() as stack:
            for key in sorted(set(keys)):
                await stack.enter_async_context(self._lock(key))
            return await work

    # -- lookups (on the loop) ---------------------------------------------------------------

    def _name_ok(self, path: VPath) -> None:
        if self._objects.reserved is not None and self._objects.reserved in path.parts:
            raise InvalidPathError(
                path=path, reason=f"the name {self._objects.reserved} is reserved here"
            )

    async def _missing(self, path: VPath) -> OperationError:
        """Not found, or "not a directory" when a file lies on the way to ``path``."""
        probe = path.parent
        while not probe.is_root:  # the parent is usually there: one request
            if await self._objects.is_dir(_key(probe)):
                break
            if await self._objects.head(_key(probe)) is not None:
                return NotADirectoryError_(path=probe)
            probe = probe.parent
        return NotFoundError(path=path)

    async def _parent_dir(self, path: VPath) -> None:
        """Raise unless ``path``'s parent is a directory."""
        parent = path.parent
        if parent.is_root or await self._objects.is_dir(_key(parent)):
            return
        error = await self._missing(parent)
        if isinstance(error, NotFoundError):
            if await self._objects.head(_key(parent)) is not None:
                raise NotADirectoryError_(path=parent)
            raise NotFoundError(f"parent directory {parent} does not exist", path=parent)
        raise error

    async def _new_entry(self, path: VPath) -> None:
        """Raise unless ``path`` may be created: its parent is a directory and ``path`` is
        no directory (the caller knows it is no file)."""
        is_dir = await _together(self._parent_dir(path), self._objects.is_dir(_key(path)))
        if is_dir:
            raise IsADirectoryError_(path=path)

    async def _stat(self, path: VPath) -> FileInfo:
        self._name_ok(path)
        if path.is_root:
            return FileInfo(VPath.ROOT, EntryKind.DIRECTORY)
        key = _key(path)
        obj = await self._objects.head(key)
        if obj is not None:
            return _file(path, obj)
        if await self._objects.is_dir(key):
            return FileInfo(path, EntryKind.DIRECTORY)
        raise await self._missing(path)

    async def _keep(self, directory: VPath) -> None:
        """Keep ``directory`` after its last entry left: a prefix directory needs a marker."""
        if not directory.is_root and not await self._objects.is_dir(_key(directory)):
            await self._objects.mark(_key(directory), exclusive=False)

    # -- primitives --------------------------------------------------------------------------

    async def stat(self, path: VPath) -> FileInfo:
        return await self._run(path, self._stat(path))

    async def read_range(self, path: VPath, offset: int = 0, length: int | None = None) -> bytes:
        return (await self.read_file(path, offset, length))[1]

    async def read_file(
        self,
        path: VPath,
        offset: int = 0,
        length: int | None = None,
        *,
        check: ReadCheck | None = None,
    ) -> tuple[FileInfo, bytes]:
        """One request on S3: the info arrives with the range; ``check`` runs here, on the
        caller's thread, before the body is read."""
        check_range(offset, length)
        info, body = await self._run(path, self._open(path, offset, length))
        try:
            if check is not None:
                check(info)
        except BaseException:
            await self._run(path, body.aclose())
            raise
        return info, await self._run(path, body.read())

    async def _open(self, path: VPath, offset: int, length: int | None) -> tuple[FileInfo, Body]:
        self._name_ok(path)
        if path.is_root:
            raise IsADirectoryError_(path=path)
        end = None if length is None else offset + length
        found = await self._objects.open(_key(path), offset, end)
        if found is not None:
            obj, body = found
            return _file(path, obj), body
        if await self._objects.is_dir(_key(path)):
            raise IsADirectoryError_(path=path)
        raise await self._missing(path)

    async def write(
        self,
        path: VPath,
        data: bytes,
        *,
        mode: WriteMode = WriteMode.OVERWRITE,
        if_version: str | None = None,
    ) -> FileInfo:
        mode = self.begin_write(path, mode)
        if not self._conditional_ok:
            refuse_unchecked(path, mode, if_version)
        payload = bytes(data)
        key = _key(path)
        work = self._locked([key], self._write(path, payload, mode, if_version))
        return await self._run(path, work)

    async def _write(
        self, path: VPath, data: bytes, mode: WriteMode, if_version: str | None
    ) -> FileInfo:
        self._name_ok(path)
        key = _key(path)
        patience = Patience()
        while True:
            current = await self._objects.head(key)
            if current is None:  # a new file: its parent must be a directory, it must not be
                await self._new_entry(path)
            check_write(path, mode, if_version, None if current is None else current.version)
            expect: Expect = ABSENT if current is None else current
            if mode is WriteMode.OVERWRITE and if_version is None:
                expect = None
            try:
                if mode is WriteMode.APPEND and current is not None:
                    obj = await self._objects.append(key, current, data)
                else:
                    obj = await self._objects.put(key, data, expect)
            except PreconditionFailed:
                if mode is WriteMode.CREATE:
                    raise AlreadyExistsError(path=path) from None
                if if_version is not None:
                    raise conflict(path, if_version) from None
                # another process appended meanwhile: append to its result
                if not await patience.wait():
                    raise ConflictError(
                        f"{path} kept changing while appending to it; retry",
                        path=path,
                    ) from None
                continue
            return _file(path, obj)

    async def delete(self, path: VPath, *, recursive: bool = False) -> None:
        if path.is_root:
            raise IsADirectoryError_("cannot delete the store root")
        await self._run(path, self._locked([_key(path)], self._delete(path, recursive)))

    async def _delete(self, path: VPath, recursive: bool) -> None:
        self._name_ok(path)
        key = _key(path)
        if await self._objects.head(key) is not None:
            await self._objects.remove(key)
        elif await self._objects.is_dir(key):
            if not recursive and await self._objects.has_children(key):
                raise not_empty(path)
            await self._objects.remove_tree(key)
        else:
            raise await self._missing(path)
        await self._keep(path.parent)

    async def _list(self, path: VPath) -> list[FileInfo]:
        self._name_ok(path)
        listing = await self._objects.children(_key(path))
        if listing is None:
            if await self._objects.head(_key(path)) is not None:
                raise NotADirectoryError_(path=path)
            raise await self._missing(path)
        entries: dict[str, FileInfo] = {}
        for name, obj in listing.files:
            child = _child(path, name)
            if child is not None:
                entries[name] = _file(child, obj)
        for name in listing.dirs:
            child = _child(path, name)
            if child is not None:  # a directory hides a file of the same name
                entries[name] = FileInfo(child, EntryKind.DIRECTORY)
        return list(entries.values())

    async def list(self, path: VPath) -> list[FileInfo]:
        return await self._run(path, self._list(path))

    async def mkdir(self, path: VPath) -> None:
        if path.is_root:
            raise AlreadyExistsError(path="/")
        await self._run(path, self._locked([_key(path)], self._mkdir(path)))

    async def _mkdir(self, path: VPath) -> None:
        self._name_ok(path)
        key = _key(path)
        if await self._objects.head(key) is not None:
            raise AlreadyExistsError(path=path)
        is_dir = await _together(self._parent_dir(path), self._objects.is_dir(key))
        if is_dir:
            raise AlreadyExistsError(path=path)
        try:
            await self._objects.mark(key, exclusive=True)
        except PreconditionFailed:
            raise AlreadyExistsError(path=path) from None

    async def rename(self, src: VPath, dst: VPath) -> None:
        check_move(src, dst)
        work = self._locked([_key(src), _key(dst)], self._rename(src, dst))
        await self._run(src, work)

    async def _rename(self, src: VPath, dst: VPath) -> None:
        self._name_ok(src)
        self._name_ok(dst)
        old, new = _key(src), _key(dst)
        source = await self._objects.head(old)
        if source is None and not await self._objects.is_dir(old):
            raise await self._missing(src)
        await self._parent_dir(dst)
        if await self._objects.head(new) is not None or await self._objects.is_dir(new):
            raise AlreadyExistsError(path=dst)
        if source is not None:
            try:
                copied = await self._objects.copy(old, new, ABSENT, keep_version=True)
            except PreconditionFailed:
                raise AlreadyExistsError(path=dst) from None
            try:  # only the file that was copied: a write that came in between stays
                await self._objects.remove_if(old, source)
            except PreconditionFailed:
                with contextlib.suppress(PreconditionFailed):  # nobody wrote there since
                    await self._objects.remove_if(new, copied)
                raise ConflictError(
                    f"{src} changed while it was being moved; nothing was moved, retry",
                    path=src,
                ) from None
        else:
            await self._objects.move_tree(old, new)
        await self._keep(src.parent)

    # -- derived, done better here -----------------------------------------------------------

    async def copy_file(self, src: VPath, dst: VPath, *, overwrite: bool = False) -> FileInfo:
        """A copy made by the server: the bytes do not travel through this process."""
        if not self._conditional_ok and not overwrite:
            refuse_unchecked(dst, WriteMode.CREATE, None)
        return await self._run(src, self._locked([_key(dst)], self._copy(src, dst, overwrite)))

    async def _copy(self, src: VPath, dst: VPath, overwrite: bool) -> FileInfo:
        source = await self._stat(src)
        if source.is_dir:
            raise IsADirectoryError_(path=src)
        self._name_ok(dst)
        if dst.is_root:
            raise IsADirectoryError_(path="/")
        new = _key(dst)
        existing = await self._objects.head(new)
        if existing is None:
            await self._new_entry(dst)
        elif not overwrite:
            raise AlreadyExistsError(path=dst)
        expect: Expect = None if overwrite else ABSENT
        try:
            obj = await self._objects.copy(_key(src), new, expect, keep_version=False)
        except PreconditionFailed:
            raise AlreadyExistsError(path=dst) from None
        return _file(dst, obj)
