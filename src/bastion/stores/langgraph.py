"""A LangGraph ``BaseStore`` as a Bastion store: one namespace of a key-value store becomes a
directory tree that the guard, the tools and the index see like any other mount.

``LangGraphStore(store, namespace=("tenants", "acme", "files"))`` roots the tree at that
namespace; nothing outside it is ever read, listed or written. Layout (one item per entry, so
a LangGraph agent sharing the store reads the same files):

* An entry ``/a/b/c.md`` is the item of key ``"c.md"`` in namespace ``namespace + ("a", "b")``.
  A directory is an item too (its marker), in its parent's namespace; the directory's own
  entries live in the namespace one label deeper.
* A file's value is ``{"kind": "file", "content": ..., "encoding": "utf-8" | "base64",
  "size", "version", "mtime", "parent"}``: text stays readable for other LangGraph code,
  other bytes are base64. A directory's is ``{"kind": "directory", "mtime", "parent"}``.
  ``parent`` (the directory's path) lets a listing ask the backend for one directory only.
* Namespace labels may not hold ``.`` (LangGraph's rule), and ``*`` or ``%`` mean patterns
  to some backends, so those three are percent-encoded in directory labels (``a.b`` is
  ``a%2Eb``); keys are the names as they are.

Isolation does not rest on the backend's prefix matching: LangGraph searches match a
*prefix*, and backends that compare namespaces as text would return ``("t", "acme2")`` to a
search of ``("t", "acme")`` (the sibling-tenant leak of deepagents' ``StoreBackend``). Every
item a search returns is checked label by label against the namespace asked for and dropped
when it lies outside; items that are not Bastion entries are ignored.

LangGraph stores have no conditional write, so ``if_version``, create-only writes, appends,
moves and recursive deletes are checked and applied under one lock of this object: atomic
among the writers that share this ``LangGraphStore`` (share one per namespace in a process),
not across processes. A backend other processes can write (LangGraph's Postgres store, a
platform store) would turn that check into a lost update, so there ``if_version``, create-only
writes and appends are refused (:class:`StoreError`) unless the store is made with
``single_process=True`` (no other process writes this namespace). ``InMemoryStore`` lives in
this process only: they are allowed there. Moves still check that the target is free within
this process only. Each file is one item, read whole: this store suits the memories, notes and
plans LangGraph agents keep, not large files. Store calls use the ``BaseStore``'s
blocking API from worker threads, which every implementation supports from any thread.
"""

from __future__ import annotations

import asyncio
import base64
import threading
import time
import uuid
import weakref
from collections.abc import Callable, Iterator, Sequence
from typing import Any, ParamSpec, TypeVar

from bastion.core.errors import (
    AlreadyExistsError,
    ConfigurationError,
    IsADirectoryError_,
    NotADirectoryError_,
    NotFoundError,
    OperationError,
    StoreError,
)
from bastion.core.models import EntryKind, FileInfo, WriteMode
from bastion.core.paths import VPath
from bastion.core.ports import ReadCheck, Store
from bastion.stores._common import (
    check_move,
    check_range,
    check_write,
    not_empty,
    refuse_unchecked,
)

try:
    from langgraph.store.base import BaseStore, Item, PutOp
    from langgraph.store.memory import InMemoryStore
except ImportError as exc:  # pragma: no cover - exercised in a test that hides langgraph
    raise ConfigurationError(
        "LangGraphStore needs langgraph: pip install 'bastion[langchain]'"
    ) from exc

__all__ = ["LangGraphStore"]

P = ParamSpec("P")
T = TypeVar("T")

_ESCAPES = (("%", "%25"), (".", "%2E"), ("*", "%2A"))
_FILE = "file"
_DIR = "directory"


def _label(name: str) -> str:
    """A path segment as a namespace label (``%``, ``.`` and ``*`` percent-encoded)."""
    for char, escaped in _ESCAPES:
        name = name.replace(char, escaped)
    return name


def _check_namespace(namespace: object) -> tuple[str, ...]:
    if isinstance(namespace, str) or not isinstance(namespace, tuple | list):
        raise ConfigurationError(
            "LangGraphStore namespace must be a tuple of labels, such as ('tenants', 'acme')"
        )
    labels = tuple(namespace)
    if not labels:
        raise ConfigurationError(
            "LangGraphStore needs a non-empty namespace: an empty one would see the whole store"
        )
    for label in labels:
        if not isinstance(label, str) or not label or any(c in label for c in ".*\x00"):
            raise ConfigurationError(
                f"invalid namespace label {label!r}: labels are non-empty strings without "
                "'.', '*' or NUL"
            )
    if labels[0] == "langgraph":
        raise ConfigurationError("a namespace may not start with 'langgraph' (reserved)")
    return labels


def _inside(item: Item, prefix: tuple[str, ...], *, exact: bool) -> bool:
    """True when ``item`` lies in ``prefix`` (or, unless ``exact``, below it), compared label
    by label: never by text, so ``("t", "acme2")`` is not inside ``("t", "acme")``."""
    namespace = tuple(item.namespace)
    return namespace == prefix if exact else namespace[: len(prefix)] == prefix


class _Entry:
    """One item of this store, read."""

    __slots__ = ("info", "value")

    def __init__(self, info: FileInfo, value: dict[str, Any]) -> None:
        self.info = info
        self.value = value

    def data(self) -> bytes:
        content = self.value["content"]
        if self.value.get("encoding") == "base64":
            return base64.b64decode(content)
        return str(content).encode("utf-8")


def _entry(path: VPath, item: Item | None) -> _Entry | None:
    """The entry an item holds, or ``None`` when it is absent or not a Bastion entry."""
    if item is None or not isinstance(item.value, dict):
        return None
    return _entry_of(path, item.value)


def _entry_of(path: VPath, value: dict[str, Any]) -> _Entry | None:
    kind = value.get("kind")
    mtime = float(value.get("mtime", 0.0))
    if kind == _DIR:
        return _Entry(FileInfo(path, EntryKind.DIRECTORY, 0, mtime), value)
    if kind == _FILE and isinstance(value.get("content"), str):
        size, version = int(value.get("size", 0)), str(value.get("version"))
        return _Entry(FileInfo(path, EntryKind.FILE, size, mtime, version), value)
    return None


def _file_value(parent: VPath, data: bytes) -> dict[str, Any]:
    try:
        content, encoding = data.decode("utf-8"), "utf-8"
    except UnicodeDecodeError:
        content, encoding = base64.b64encode(data).decode("ascii"), "base64"
    return {
        "kind": _FILE,
        "content": content,
        "encoding": encoding,
        "size": len(data),
        "version": uuid.uuid4().hex,
        "mtime": time.time(),
        "parent": str(parent),
    }


_BACKEND_LOCKS: weakref.WeakKeyDictionary[BaseStore, threading.Lock] = weakref.WeakKeyDictionary()
_BACKEND_LOCKS_LOCK = threading.Lock()


def _lock_of(backend: BaseStore) -> threading.Lock:
    """The one lock of ``backend`` in this process, shared by every ``LangGraphStore`` over
    it: the checks of ``if_version``, create-only writes, appends and moves hold among all of
    them (two workspaces built over one ``InMemoryStore``, two mounts of nested namespaces).
    A lock per store object let two of them check the same version and both write."""
    with _BACKEND_LOCKS_LOCK:
        lock = _BACKEND_LOCKS.get(backend)
        if lock is None:
            lock = _BACKEND_LOCKS[backend] = threading.Lock()
        return lock


class LangGraphStore(Store):
    """Files and directories kept as items of a LangGraph ``BaseStore`` under ``namespace``."""

    kind = "langgraph"

    def __init__(
        self,
        store: BaseStore,
        namespace: Sequence[str],
        *,
        page_size: int = 500,
        timeout: float | None = 30.0,
        single_process: bool = False,
    ) -> None:
        if not isinstance(store, BaseStore):
            raise ConfigurationError("LangGraphStore needs a langgraph.store.base.BaseStore")
        if page_size < 1:
            raise ConfigurationError("page_size must be at least 1")
        self.store = store
        self.namespace: tuple[str, ...] = _check_namespace(namespace)
        """The root: every item this store reads or writes lies at or under it."""
        self.page_size = page_size
        """Items asked for per search page (listings, deletes and moves of directories)."""
        self.timeout = timeout
        self._lock = _lock_of(store)
        # if_version, create-only writes and appends: allowed where the lock sees every writer
        self._conditional_ok = single_process or isinstance(store, InMemoryStore)

    def describe(self) -> str:
        return f"langgraph ({type(self.store).__name__})"

    # -- addressing --------------------------------------------------------------------------

    def _ns(self, directory: VPath) -> tuple[str, ...]:
        """The namespace that holds the entries of ``directory``."""
        return self.namespace + tuple(_label(p) for p in directory.parts)

    # -- blocking primitives (run in worker threads) -----------------------------------------

    def _get(self, path: VPath) -> _Entry | None:
        if path.is_root:
            return _Entry(FileInfo(VPath.ROOT, EntryKind.DIRECTORY), {"kind": _DIR})
        return _entry(path, self.store.get(self._ns(path.parent), path.name, refresh_ttl=False))

    def _items(self, directory: VPath, *, below: bool, limit: int | None = None) -> Iterator[Item]:
        """The items in ``directory``'s namespace (``below``: and in every deeper one)."""
        prefix = self._ns(directory)
        wanted = None if below else {"parent": str(directory)}
        seen: set[tuple[tuple[str, ...], str]] = set()
        offset = 0
        while True:
            page = self.store.search(
                prefix, filter=wanted, limit=self.page_size, offset=offset, refresh_ttl=False
            )
            for item in page:
                where = (tuple(item.namespace), item.key)
                if where in seen or not _inside(item, prefix, exact=not below):
                    continue
                seen.add(where)
                yield item
                if limit is not None and len(seen) >= limit:
                    return
            if len(page) < self.page_size:
                return
            offset += len(page)

    def _missing(self, path: VPath) -> OperationError:
        """Not found, or "not a directory" when a file lies on the way to ``path``."""
        probe = path.parent
        while not probe.is_root:
            found = self._get(probe)
            if found is not None:
                if found.info.is_file:
                    return NotADirectoryError_(path=probe)
                break
            probe = probe.parent
        return NotFoundError(path=path)

    def _existing(self, path: VPath) -> _Entry:
        found = self._get(path)
        if found is None:
            raise self._missing(path)
        return found

    def _parent_dir(self, path: VPath) -> None:
        parent = path.parent
        found = self._get(parent)
        if found is None:
            error = self._missing(parent)
            if isinstance(error, NotFoundError):
                raise NotFoundError(f"parent directory {parent} does not exist", path=parent)
            raise error
        if found.info.is_file:
            raise NotADirectoryError_(path=parent)

    def _put(self, path: VPath, value: dict[str, Any] | None) -> PutOp:
        """Set (or, with ``None``, delete) the item of ``path``: never embedded by the
        backend's index, never expiring behind the workspace's back."""
        return PutOp(self._ns(path.parent), path.name, value, index=False, ttl=None)

    def _stat(self, path: VPath) -> FileInfo:
        return self._existing(path).info

    def _write(self, path: VPath, data: bytes, mode: WriteMode, if_version: str | None) -> FileInfo:
        with self._lock:
            self._parent_dir(path)
            current = self._get(path)
            if current is not None and current.info.is_dir:
                raise IsADirectoryError_(path=path)
            check_write(path, mode, if_version, None if current is None else current.info.version)
            if current is not None and mode is WriteMode.APPEND:
                data = current.data() + data
            value = _file_value(path.parent, data)
            self.store.batch([self._put(path, value)])
            found = _entry_of(path, value)
            assert found is not None
            return found.info

    def _delete(self, path: VPath, recursive: bool) -> None:
        with self._lock:
            found = self._existing(path)
            ops = [self._put(path, None)]
            if found.info.is_dir:
                below = list(self._items(path, below=True, limit=None if recursive else 1))
                if below and not recursive:
                    raise not_empty(path)
                ops += [PutOp(tuple(i.namespace), i.key, None) for i in below]
            self.store.batch(ops)

    def _list(self, path: VPath) -> list[FileInfo]:
        if self._existing(path).info.is_file:
            raise NotADirectoryError_(path=path)
        listed = []
        for item in self._items(path, below=False):
            found = _entry(path / item.key, item)
            if found is not None:
                listed.append(found.info)
        return listed

    def _mkdir(self, path: VPath) -> None:
        with self._lock:
            self._parent_dir(path)
            if self._get(path) is not None:
                raise AlreadyExistsError(path=path)
            value = {"kind": _DIR, "mtime": time.time(), "parent": str(path.parent)}
            self.store.batch([self._put(path, value)])

    def _rename(self, src: VPath, dst: VPath) -> None:
        with self._lock:
            found = self._existing(src)
            self._parent_dir(dst)
            if self._get(dst) is not None:
                raise AlreadyExistsError(path=dst)
            moved = {**found.value, "parent": str(dst.parent)}
            ops = [self._put(dst, moved), self._put(src, None)]
            if found.info.is_dir:
                old, new = self._ns(src), self._ns(dst)
                for item in self._items(src, below=True):
                    parent = str(item.value.get("parent", ""))
                    value = {**item.value, "parent": str(dst) + parent[len(str(src)) :]}
                    where = new + tuple(item.namespace)[len(old) :]
                    ops.append(PutOp(where, item.key, value, index=False, ttl=None))
                    ops.append(PutOp(tuple(item.namespace), item.key, None))
            self.store.batch(ops)

    # -- the port ----------------------------------------------------------------------------

    async def _run(
        self, path: VPath, fn: Callable[P, T], /, *args: P.args, **kwargs: P.kwargs
    ) -> T:
        try:
            return await asyncio.to_thread(fn, *args, **kwargs)
        except OperationError:
            raise
        except Exception as exc:  # noqa: BLE001 - every foreign error becomes ours
            raise StoreError(
                f"{path}: the LangGraph store failed ({type(exc).__name__}); try again later",
                path=path,
            ) from None

    async def stat(self, path: VPath) -> FileInfo:
        return await self._run(path, self._stat, path)

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
        check_range(offset, length)
        found = await self._run(path, self._existing, path)
        if found.info.is_dir:
            raise IsADirectoryError_(path=path)
        if check is not None:
            check(found.info)  # the caller's own check: its errors are its own
        end = None if length is None else offset + length
        return found.info, found.data()[offset:end]

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
        return await self._run(path, self._write, path, bytes(data), mode, if_version)

    async def delete(self, path: VPath, *, recursive: bool = False) -> None:
        if path.is_root:
            raise IsADirectoryError_("cannot delete the store root")
        await self._run(path, self._delete, path, recursive)

    async def list(self, path: VPath) -> list[FileInfo]:
        return await self._run(path, self._list, path)

    async def mkdir(self, path: VPath) -> None:
        if path.is_root:
            raise AlreadyExistsError(path="/")
        await self._run(path, self._mkdir, path)

    async def rename(self, src: VPath, dst: VPath) -> None:
        check_move(src, dst)
        await self._run(src, self._rename, src, dst)
