"""The flat namespace under :class:`~bastion.stores.fsspec.FsspecStore`, and its generic backend.

``FsspecStore`` gives a filesystem's meaning (directories that exist empty, parents that must
exist, versions, conditional writes) to a namespace of objects. A backend is that namespace:
a handful of coroutines over keys relative to the store's root (``""`` is the root,
``"docs/a.md"`` a file). Two backends exist: :class:`FsspecObjects` for any fsspec filesystem
(this module) and ``S3Objects`` for S3 through s3fs (``_fsspec_s3``), which asks the server to
check conditional writes.

Directories. Object stores have none: a directory is a *marker* object written by ``mkdir``,
or any key below it (a "prefix" directory, as other tools leave them). Here the marker is a
file named :data:`MARKER` inside the directory; the name is reserved (hidden from listings,
refused as a file name). S3 uses its own convention, an empty object ``dir/``.

Every coroutine runs on the store's event loop (fsspec's I/O loop), never the caller's. A
blocking filesystem is called through ``asyncio.to_thread`` from there.
"""

from __future__ import annotations

import asyncio
import contextlib
import posixpath
from abc import ABC, abstractmethod
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from enum import Enum
from typing import Any, Final

__all__ = [
    "ABSENT",
    "MARKER",
    "Absent",
    "Body",
    "Expect",
    "FsspecObjects",
    "Listing",
    "Obj",
    "Objects",
    "PreconditionFailed",
    "stamp",
]

MARKER: Final = ".bastion-dir"
"""Name of the marker file that keeps an empty directory on a generic fsspec filesystem."""

_MISSING = (FileNotFoundError, NotADirectoryError)


class Absent(Enum):
    """The expectation that no object exists at a key (create-only)."""

    ABSENT = "absent"


ABSENT: Final = Absent.ABSENT


@dataclass(frozen=True, slots=True)
class Obj:
    """One stored object (a file), as the store reports it."""

    size: int
    mtime: float
    version: str
    """What Bastion shows as the file's version; changes with every write."""
    etag: str | None = None
    """What the server compares in a conditional write (``If-Match``), when it can."""


Expect = Obj | Absent | None
"""A write's precondition: the object read before (``Obj``), none at all (``ABSENT``), or
anything (``None``)."""


class PreconditionFailed(Exception):
    """A conditional write or delete found another object than expected (internal)."""


@dataclass(frozen=True, slots=True)
class Listing:
    """The direct children of a directory: files with their objects, directory names."""

    files: Sequence[tuple[str, Obj]]
    dirs: Sequence[str]


class Body(ABC):
    """The bytes of a range, not read yet: the store checks the object's info first."""

    @abstractmethod
    async def read(self) -> bytes: ...

    @abstractmethod
    async def aclose(self) -> None: ...


class _Bytes(Body):
    def __init__(self, data: bytes = b"") -> None:
        self._data = data

    async def read(self) -> bytes:
        return self._data

    async def aclose(self) -> None:
        self._data = b""


EMPTY_BODY: Final[Body] = _Bytes()


class Objects(ABC):
    """A flat namespace of objects below a root (see the module doc)."""

    kind: str = "fsspec"
    reserved: str | None = None
    """A file name the backend keeps for itself, or ``None``."""
    server_checks: bool = False
    """True when the server checks ``expect`` itself (S3's ``If-Match``): conditional writes
    then hold against every writer, in any process."""
    process_local: bool = False
    """True when the namespace lives in this process only (fsspec's memory filesystem): the
    store's in-process lock then sees every writer there is."""
    location: str = ""
    """The root as the filesystem names it (``bucket/prefix``, a folder): with :attr:`kind`,
    what tells two stores over the same objects, whose locks must then be one."""

    @abstractmethod
    async def head(self, key: str) -> Obj | None:
        """The file at ``key``, or ``None`` (missing, or a directory)."""

    @abstractmethod
    async def is_dir(self, key: str) -> bool:
        """True when ``key`` is a directory: a marker, or anything below it."""

    @abstractmethod
    async def open(self, key: str, start: int, end: int | None) -> tuple[Obj, Body] | None:
        """The file at ``key`` and its bytes ``[start, end)``, not read yet; ``None`` when
        there is no file."""

    @abstractmethod
    async def put(self, key: str, data: bytes, expect: Expect) -> Obj:
        """Write the whole object. A backend whose server checks conditions (S3's
        ``If-Match``) raises :class:`PreconditionFailed` when ``expect`` fails; the others
        rely on the check the store made under its lock just before."""

    async def append(self, key: str, current: Obj, data: bytes) -> Obj:
        """Write ``current``'s content followed by ``data``, on the condition that the
        object is still ``current``. Object stores have no append: this rewrites it."""
        found = await self.open(key, 0, None)
        if found is None:
            raise PreconditionFailed(key)
        obj, body = found
        if obj.version != current.version:
            await body.aclose()
            raise PreconditionFailed(key)
        return await self.put(key, await body.read() + data, current)

    @abstractmethod
    async def children(self, key: str) -> Listing | None:
        """The direct children of directory ``key``; ``None`` when it is no directory."""

    @abstractmethod
    async def has_children(self, key: str) -> bool:
        """True when anything but the marker lies below directory ``key``."""

    @abstractmethod
    async def mark(self, key: str, *, exclusive: bool) -> None:
        """Write directory ``key``'s marker (``exclusive``: fail if it is there already)."""

    @abstractmethod
    async def remove(self, key: str) -> None:
        """Delete the file at ``key``."""

    async def remove_if(self, key: str, expect: Obj) -> None:
        """Delete the file at ``key`` on condition that it is still ``expect``. A backend
        whose server checks conditions (S3's ``If-Match``) raises :class:`PreconditionFailed`
        when it is not; the others rely on the store's lock (the file is removed)."""
        await self.remove(key)

    @abstractmethod
    async def remove_tree(self, key: str) -> None:
        """Delete directory ``key``: its marker and everything below it."""

    @abstractmethod
    async def move_tree(self, src: str, dst: str) -> None:
        """Move directory ``src`` and everything below it to ``dst`` (copy, then delete)."""

    @abstractmethod
    async def copy(self, src: str, dst: str, expect: Expect, *, keep_version: bool) -> Obj:
        """Copy one file; ``keep_version`` keeps its version (a move), else it gets a new
        one (a copy)."""

    @abstractmethod
    async def probe(self) -> None:
        """One request that fails when the namespace cannot be reached or read."""

    async def close(self) -> None:  # noqa: B027 - most backends hold nothing to release
        """Release connections."""

    def describe(self) -> str:
        return f"{self.kind} filesystem (fsspec)"


def stamp(value: Any) -> float:
    """A POSIX timestamp from what filesystems put in ``info`` (datetime, ISO text, number)."""
    if isinstance(value, datetime):
        return value.timestamp()
    if isinstance(value, int | float):
        return float(value)
    if isinstance(value, str):
        try:
            return datetime.fromisoformat(value.replace("Z", "+00:00")).timestamp()
        except ValueError:
            return 0.0
    return 0.0


_TIME_KEYS = ("mtime", "LastModified", "last_modified", "updated", "modified", "created")
_TAG_KEYS = ("generation", "etag", "ETag", "version_id", "VersionId", "md5Hash")


class FsspecObjects(Objects):
    """Any fsspec filesystem as a flat namespace, directories kept by :data:`MARKER` files.

    Conditional writes are checked by the store under its in-process lock, not by the server:
    atomic for every writer in this process, not across processes, so the store refuses them
    unless the namespace is this process's own (see ``docs/stores.md``).
    Versions come from the filesystem's own tags (GCS generation, Azure or S3 ETag) when it
    has one, else from the modification time and size.
    """

    reserved = MARKER

    def __init__(self, fs: Any, root: str) -> None:
        self.fs = fs
        protocol = fs.protocol if isinstance(fs.protocol, str) else fs.protocol[0]
        self.kind = str(protocol)
        self.process_local = self.kind == "memory"
        self.root = str(fs._strip_protocol(root) if root else "").rstrip("/")
        self.location = self.root

    def _path(self, key: str) -> str:
        if not key:
            return self.root or str(self.fs.root_marker) or "/"
        return f"{self.root}/{key}" if self.root else key

    async def _call(self, name: str, *args: Any, **kwargs: Any) -> Any:
        if self.fs.async_impl:
            return await getattr(self.fs, f"_{name}")(*args, **kwargs)
        return await asyncio.to_thread(getattr(self.fs, name), *args, **kwargs)

    async def _info(self, key: str) -> dict[str, Any] | None:
        path = self._path(key)
        self.fs.invalidate_cache(path)
        try:
            info: dict[str, Any] = await self._call("info", path)
        except _MISSING:
            return None
        return info

    def _obj(self, info: dict[str, Any]) -> Obj:
        size = int(info.get("size") or 0)
        mtime = next((stamp(info[k]) for k in _TIME_KEYS if info.get(k) is not None), 0.0)
        tag = next((str(info[k]) for k in _TAG_KEYS if info.get(k)), None)
        version = tag.strip('"') if tag else f"{size}-{mtime!r}"
        return Obj(size, mtime, version)

    async def head(self, key: str) -> Obj | None:
        info = await self._info(key)
        if info is None or info.get("type") != "file":
            return None
        return self._obj(info)

    async def is_dir(self, key: str) -> bool:
        info = await self._info(key)
        return info is not None and info.get("type") == "directory"

    async def open(self, key: str, start: int, end: int | None) -> tuple[Obj, Body] | None:
        obj = await self.head(key)
        if obj is None:
            return None
        stop = obj.size if end is None else min(end, obj.size)
        if start >= stop:
            return obj, EMPTY_BODY
        return obj, _Range(self, self._path(key), start, stop)

    async def put(self, key: str, data: bytes, expect: Expect) -> Obj:
        path = self._path(key)
        await self._call("pipe_file", path, data)
        obj = await self.head(key)
        if obj is None:  # deleted by someone else at once; report what was written
            return Obj(len(data), 0.0, f"{len(data)}-0.0")
        return obj

    async def children(self, key: str) -> Listing | None:
        path = self._path(key)
        self.fs.invalidate_cache(path)
        try:
            entries: list[dict[str, Any]] = await self._call("ls", path, detail=True)
        except _MISSING:
            return None if key else Listing((), ())
        prefix = self.fs._strip_protocol(path).rstrip("/")
        files: list[tuple[str, Obj]] = []
        dirs: list[str] = []
        for entry in entries:
            name = str(entry["name"]).rstrip("/")
            if name == prefix:  # ls of a file lists the file itself
                if entry.get("type") == "file":
                    return None
                continue
            base = posixpath.basename(name)
            if entry.get("type") == "directory":
                dirs.append(base)
            elif base != MARKER:
                files.append((base, self._obj(entry)))
        return Listing(files, dirs)

    async def has_children(self, key: str) -> bool:
        listing = await self.children(key)
        return bool(listing and (listing.files or listing.dirs))

    async def mark(self, key: str, *, exclusive: bool) -> None:
        path = self._path(key)
        with contextlib.suppress(OSError):  # a filesystem with real directories needs one
            await self._call("makedirs", path, exist_ok=True)
        marker = f"{path}/{MARKER}"
        if exclusive and await self._call("exists", marker):
            raise PreconditionFailed(key)
        await self._call("pipe_file", marker, b"")

    async def remove(self, key: str) -> None:
        await self._call("rm_file", self._path(key))

    async def remove_tree(self, key: str) -> None:
        with contextlib.suppress(*_MISSING):
            await self._call("rm", self._path(key), recursive=True)

    async def move_tree(self, src: str, dst: str) -> None:
        base = self._path(src)
        found: list[str] = await self._call("find", base, withdirs=False)
        await self.mark(dst, exclusive=False)
        for name in found:
            rest = str(name)[len(base) :].lstrip("/")
            target = self._path(f"{dst}/{rest}")
            parent = posixpath.dirname(target)
            with contextlib.suppress(OSError):
                await self._call("makedirs", parent, exist_ok=True)
            await self._call("cp_file", name, target)
        await self.remove_tree(src)

    async def copy(self, src: str, dst: str, expect: Expect, *, keep_version: bool) -> Obj:
        await self._call("cp_file", self._path(src), self._path(dst))
        obj = await self.head(dst)
        if obj is None:
            raise FileNotFoundError(dst)
        return obj

    async def probe(self) -> None:
        with contextlib.suppress(*_MISSING):
            await self._call("ls", self._path(""), detail=False)


class _Range(Body):
    def __init__(self, objects: FsspecObjects, path: str, start: int, end: int) -> None:
        self._objects, self._path, self._start, self._end = objects, path, start, end

    async def read(self) -> bytes:
        data: bytes = await self._objects._call("cat_file", self._path, self._start, self._end)
        return data

    async def aclose(self) -> None:
        return None
