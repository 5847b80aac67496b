"""An in-memory store: fast, process-local, gone when the process ends."""

from __future__ import annotations

import itertools
import threading
import time
from dataclasses import dataclass, field

from bastion.core.errors import (
    AlreadyExistsError,
    IsADirectoryError_,
    NotADirectoryError_,
    NotFoundError,
)
from bastion.core.models import EntryKind, FileInfo, WriteMode
from bastion.core.paths import VPath
from bastion.core.ports import ReadCheck, Store
from bastion.stores._common import check_range, check_write, not_empty

__all__ = ["MemoryStore"]


@dataclass(slots=True)
class _File:
    data: bytes
    mtime: float
    version: str


@dataclass(slots=True)
class _Dir:
    mtime: float
    children: dict[str, _File | _Dir] = field(default_factory=dict)


class MemoryStore(Store):
    """Files and directories in a dict tree, guarded by one lock (safe across threads)."""

    kind = "memory"
    timeout = None  # in-process: nothing to wait for
    ephemeral = True  # gone with the process

    def __init__(self) -> None:
        self._root = _Dir(time.time())
        self._lock = threading.Lock()
        self._versions = itertools.count(1)
        self._changes = 0
        """Bumped under the lock by every change (write, delete, mkdir, rename)."""

    # -- helpers (call with the lock held) ---------------------------------------------------

    def _node(self, path: VPath) -> _File | _Dir:
        node: _File | _Dir = self._root
        for i, part in enumerate(path.parts):
            if not isinstance(node, _Dir):
                raise NotADirectoryError_(f"/{'/'.join(path.parts[:i])} is a file, not a directory")
            child = node.children.get(part)
            if child is None:
                raise NotFoundError(path=path)
            node = child
        return node

    def _parent_dir(self, path: VPath) -> _Dir:
        try:
            parent = self._node(path.parent)
        except NotFoundError:
            raise NotFoundError(
                f"parent directory {path.parent} does not exist", path=path.parent
            ) from None
        if not isinstance(parent, _Dir):
            raise NotADirectoryError_(path=path.parent)
        return parent

    def _info(self, path: VPath, node: _File | _Dir) -> FileInfo:
        if isinstance(node, _File):
            return FileInfo(path, EntryKind.FILE, len(node.data), node.mtime, node.version)
        return FileInfo(path, EntryKind.DIRECTORY, 0, node.mtime, None)

    # -- primitives --------------------------------------------------------------------------

    def change_mark(self) -> int:
        """Every change goes through this object: the count of changes so far."""
        return self._changes

    async def stat(self, path: VPath) -> FileInfo:
        with self._lock:
            return self._info(path, self._node(path))

    async def read_range(self, path: VPath, offset: int = 0, length: int | None = None) -> bytes:
        return self._read(path, offset, length, None)[1]

    async def read_file(
        self,
        path: VPath,
        offset: int = 0,
        length: int | None = None,
        *,
        check: ReadCheck | None = None,
    ) -> tuple[FileInfo, bytes]:
        return self._read(path, offset, length, check)

    def _read(
        self, path: VPath, offset: int, length: int | None, check: ReadCheck | None
    ) -> tuple[FileInfo, bytes]:
        """``read_file`` and ``read_range``: one look under the lock, ``check`` on the info
        before the bytes are taken."""
        check_range(offset, length)
        with self._lock:
            node = self._node(path)
            if isinstance(node, _Dir):
                raise IsADirectoryError_(path=path)
            info = self._info(path, node)
            if check is not None:
                check(info)
            data = node.data
        end = None if length is None else offset + length
        return info, data[offset:end]

    async def write(
        self,
        path: VPath,
        data: bytes,
        *,
        mode: WriteMode = WriteMode.OVERWRITE,
        if_version: str | None = None,
    ) -> FileInfo:
        mode = self.begin_write(path, mode)
        payload = bytes(data)
        with self._lock:
            parent = self._parent_dir(path)
            existing = parent.children.get(path.name)
            if isinstance(existing, _Dir):
                raise IsADirectoryError_(path=path)
            check_write(path, mode, if_version, None if existing is None else existing.version)
            if existing is not None and mode is WriteMode.APPEND:
                payload = existing.data + payload
            now = time.time()
            node = _File(payload, now, str(next(self._versions)))
            parent.children[path.name] = node
            parent.mtime = now
            self._changes += 1
            return self._info(path, node)

    async def delete(self, path: VPath, *, recursive: bool = False) -> None:
        if path.is_root:
            raise IsADirectoryError_("cannot delete the store root")
        with self._lock:
            parent = self._parent_dir(path)
            node = parent.children.get(path.name)
            if node is None:
                raise NotFoundError(path=path)
            if isinstance(node, _Dir) and node.children and not recursive:
                raise not_empty(path)
            del parent.children[path.name]
            parent.mtime = time.time()
            self._changes += 1

    async def list(self, path: VPath) -> list[FileInfo]:
        with self._lock:
            node = self._node(path)
            if not isinstance(node, _Dir):
                raise NotADirectoryError_(path=path)
            return [self._info(path.child(name), child) for name, child in node.children.items()]

    async def mkdir(self, path: VPath) -> None:
        if path.is_root:
            raise AlreadyExistsError(path="/")
        with self._lock:
            parent = self._parent_dir(path)
            if path.name in parent.children:
                raise AlreadyExistsError(path=path)
            now = time.time()
            parent.children[path.name] = _Dir(now)
            parent.mtime = now
            self._changes += 1

    async def rename(self, src: VPath, dst: VPath) -> None:
        if src.is_root or dst.is_root:
            raise IsADirectoryError_("cannot move the store root")
        if dst.is_relative_to(src):
            raise NotADirectoryError_(f"cannot move {src} into itself", path=src)
        with self._lock:
            src_parent = self._parent_dir(src)
            node = src_parent.children.get(src.name)
            if node is None:
                raise NotFoundError(path=src)
            dst_parent = self._parent_dir(dst)
            if dst.name in dst_parent.children:
                raise AlreadyExistsError(path=dst)
            del src_parent.children[src.name]
            dst_parent.children[dst.name] = node
            now = time.time()
            src_parent.mtime = dst_parent.mtime = now
            self._changes += 1
