"""A persistent virtual filesystem in one SQLite file: the embedded default for virtual mounts.

Directories, files and their labels live in one database file (schema and transactions:
``bastion.stores._sqlite_db``). File content is kept in fixed-size chunks, so reading a range
of a large file selects only the chunks that cover it, and an append rewrites only the last
chunk. Every call is one SQLite transaction: a reader sees the old or the new content of a
file, never a mix, and a process killed in the middle of a write leaves the old or the new
content (a transaction that did not commit is rolled back when the file is opened next).

Versions come from a counter in the database (plus a random tag), so they never repeat, even
when a file is deleted and written again, and they are the same for every process that opens
the file. The expected-version check and the write run in one ``BEGIN IMMEDIATE``
transaction: atomic against every writer of the file, in this process or another.

Labels. Each entry may carry :class:`~bastion.core.models.Labels` (``set_labels``, or
``write(..., labels=...)`` to write and label a file in one transaction, so that it is never
visible with the mount's defaults in between). The store says so with ``keeps_labels``, and
the guard then checks each entry's own labels; an entry without labels uses the mount's.
Labels belong to the entry: overwriting or appending keeps them, deleting drops them.

Calls are ``async``; ``sqlite3`` is blocking, so each runs in a worker thread
(``asyncio.to_thread``) on a pooled connection.
"""

from __future__ import annotations

import asyncio
import os
import sqlite3
import time
from collections.abc import Callable
from dataclasses import replace
from typing import TypeVar

from bastion.core.errors import (
    AlreadyExistsError,
    ConfigurationError,
    IsADirectoryError_,
    NotADirectoryError_,
    NotFoundError,
)
from bastion.core.models import EntryKind, FileInfo, Labels, WriteMode
from bastion.core.paths import VPath
from bastion.core.ports import ReadCheck, Store
from bastion.stores import _sqlite_tree as tree
from bastion.stores._common import check_move, check_range, check_write, not_empty
from bastion.stores._sqlite_db import Database

__all__ = ["DEFAULT_CHUNK_SIZE", "SqliteStore"]

DEFAULT_CHUNK_SIZE = 64 << 10
"""Bytes per stored chunk: a range read costs at most two partial chunks more than asked."""

_MIN_CHUNK, _MAX_CHUNK = 1 << 10, 16 << 20

T = TypeVar("T")
Conn = sqlite3.Connection


def _file(conn: Conn, path: VPath) -> tree.Node:
    """The node of the file at ``path`` (a directory raises :class:`IsADirectoryError_`)."""
    node = tree.resolve(conn, path)
    if node.is_dir:
        raise IsADirectoryError_(path=path)
    return node


class SqliteStore(Store):
    """Files and directories in one SQLite database file (see the module doc).

    ``chunk_size`` applies to files written from now on (each file remembers its own).
    ``busy_timeout`` (seconds) is how long a call waits for another process's write before
    it retries; after a few tries it fails with ``StoreUnavailableError``. The file and its
    schema are created when missing unless ``create=False``.
    """

    kind = "sqlite"
    keeps_labels = True
    """Entries carry their own labels: the guard checks them (see the module doc)."""

    def __init__(
        self,
        path: str | os.PathLike[str],
        *,
        chunk_size: int = DEFAULT_CHUNK_SIZE,
        busy_timeout: float = 5.0,
        create: bool = True,
    ) -> None:
        if not _MIN_CHUNK <= chunk_size <= _MAX_CHUNK:
            raise ConfigurationError(
                f"chunk_size must be between {_MIN_CHUNK} and {_MAX_CHUNK} bytes, got {chunk_size}"
            )
        if busy_timeout < 0:
            raise ConfigurationError(f"busy_timeout must be >= 0 seconds, got {busy_timeout}")
        self._chunk_size = chunk_size
        self._db = Database(path, busy_timeout=busy_timeout, create=create)

    def close(self) -> None:
        """Close the database connections; the store cannot be used afterwards. Without
        ``close`` they are closed when the store is garbage-collected."""
        self._db.close()

    def describe(self) -> str:
        return "SQLite database"

    async def _read(self, path: VPath, work: Callable[[Conn], T]) -> T:
        return await asyncio.to_thread(self._db.read, work, str(path))

    async def _write(self, path: VPath, work: Callable[[Conn], T]) -> T:
        return await asyncio.to_thread(self._db.write, work, str(path))

    # -- primitives --------------------------------------------------------------------------

    async def stat(self, path: VPath) -> FileInfo:
        return await self._read(path, lambda conn: tree.info(path, tree.resolve(conn, path)))

    async def read_range(self, path: VPath, offset: int = 0, length: int | None = None) -> bytes:
        check_range(offset, length)

        def work(conn: Conn) -> bytes:
            return tree.read_chunks(conn, path, _file(conn, path), offset, length)

        return await self._read(path, work)

    async def read_file(
        self,
        path: VPath,
        offset: int = 0,
        length: int | None = None,
        *,
        check: ReadCheck | None = None,
    ) -> tuple[FileInfo, bytes]:
        """One lookup in one snapshot: the entry, its info, ``check``, then its chunks."""
        check_range(offset, length)

        def work(conn: Conn) -> tuple[FileInfo, bytes]:
            node = _file(conn, path)
            info = tree.info(path, node)
            if check is not None:
                check(info)
            return info, tree.read_chunks(conn, path, node, offset, length)

        return await self._read(path, work)

    async def write(
        self,
        path: VPath,
        data: bytes,
        *,
        mode: WriteMode = WriteMode.OVERWRITE,
        if_version: str | None = None,
        labels: Labels | None = None,
    ) -> FileInfo:
        """Write ``data`` in one transaction; ``labels``, when given, are set in the same
        transaction (otherwise an existing file keeps its labels)."""
        mode = self.begin_write(path, mode)
        view = memoryview(data).cast("B")
        encoded = None if labels is None else tree.encode_labels(labels)

        def work(conn: Conn) -> FileInfo:
            parent = tree.parent_dir(conn, path)
            existing = tree.child(conn, parent.id, path.name)
            if existing is not None and existing.is_dir:
                raise IsADirectoryError_(path=path)
            check_write(path, mode, if_version, None if existing is None else existing.version)
            return self._store(conn, path, parent, existing, view, mode, encoded)

        return await self._write(path, work)

    def _store(
        self,
        conn: Conn,
        path: VPath,
        parent: tree.Node,
        existing: tree.Node | None,
        view: memoryview,
        mode: WriteMode,
        labels: str | None,
    ) -> FileInfo:
        version, now = tree.next_version(conn), time.time()
        if existing is None:
            inode = conn.execute(
                "INSERT INTO inodes (kind, size, mtime, version, chunk_size, labels) "
                "VALUES ('file', ?, ?, ?, ?, ?) RETURNING id",
                (len(view), now, version, self._chunk_size, labels),
            ).fetchone()[0]
            conn.execute(
                "INSERT INTO dentries (parent, name, inode) VALUES (?, ?, ?)",
                (parent.id, path.name, inode),
            )
            tree.write_chunks(conn, inode, view, 0, self._chunk_size)
            tree.touch(conn, parent.id, now)
            size, chunk_size = len(view), self._chunk_size
        elif mode is WriteMode.APPEND:
            inode, chunk_size = existing.id, existing.chunk_size
            size = tree.append_chunks(conn, path, existing, view)
        else:
            inode, chunk_size = existing.id, self._chunk_size
            conn.execute("DELETE FROM chunks WHERE inode = ?", (inode,))
            tree.write_chunks(conn, inode, view, 0, chunk_size)
            size = len(view)
        if existing is not None:
            labels = existing.labels if labels is None else labels
            conn.execute(
                "UPDATE inodes SET size = ?, mtime = ?, version = ?, chunk_size = ?, labels = ? "
                "WHERE id = ?",
                (size, now, version, chunk_size, labels, inode),
            )
        node = tree.Node(inode, EntryKind.FILE, size, now, version, chunk_size, labels)
        return tree.info(path, node)

    async def delete(self, path: VPath, *, recursive: bool = False) -> None:
        if path.is_root:
            raise IsADirectoryError_("cannot delete the store root")

        def work(conn: Conn) -> None:
            parent = tree.parent_dir(conn, path)
            node = tree.child(conn, parent.id, path.name)
            if node is None:
                raise NotFoundError(path=path)
            if node.is_dir and not recursive and next(tree.children(conn, node.id), None):
                raise not_empty(path)
            tree.remove(conn, node)
            tree.touch(conn, parent.id, time.time())

        await self._write(path, work)

    async def list(self, path: VPath) -> list[FileInfo]:
        def work(conn: Conn) -> list[FileInfo]:
            node = tree.resolve(conn, path)
            if not node.is_dir:
                raise NotADirectoryError_(path=path)
            entries = tree.children(conn, node.id)
            return [tree.info(path.child(name), item) for name, item in entries]

        return await self._read(path, work)

    async def mkdir(self, path: VPath) -> None:
        if path.is_root:
            raise AlreadyExistsError(path="/")

        def work(conn: Conn) -> None:
            parent = tree.parent_dir(conn, path)
            if tree.child(conn, parent.id, path.name) is not None:
                raise AlreadyExistsError(path=path)
            now = time.time()
            inode = conn.execute(
                "INSERT INTO inodes (kind, size, mtime) VALUES ('directory', 0, ?) RETURNING id",
                (now,),
            ).fetchone()[0]
            conn.execute(
                "INSERT INTO dentries (parent, name, inode) VALUES (?, ?, ?)",
                (parent.id, path.name, inode),
            )
            tree.touch(conn, parent.id, now)

        await self._write(path, work)

    async def rename(self, src: VPath, dst: VPath) -> None:
        check_move(src, dst)

        def work(conn: Conn) -> None:
            src_parent = tree.parent_dir(conn, src)
            node = tree.child(conn, src_parent.id, src.name)
            if node is None:
                raise NotFoundError(path=src)
            dst_parent = tree.parent_dir(conn, dst)
            if tree.child(conn, dst_parent.id, dst.name) is not None:
                raise AlreadyExistsError(path=dst)
            conn.execute(
                "UPDATE dentries SET parent = ?, name = ? WHERE inode = ?",
                (dst_parent.id, dst.name, node.id),
            )
            now = time.time()
            tree.touch(conn, src_parent.id, now)
            tree.touch(conn, dst_parent.id, now)

        await self._write(src, work)

    # -- labels ------------------------------------------------------------------------------

    async def set_labels(self, path: VPath, labels: Labels | None) -> FileInfo:
        """Give the entry at ``path`` its own labels (``None``: back to the mount's). The
        content and its version do not change."""
        encoded = None if labels is None else tree.encode_labels(labels)

        def work(conn: Conn) -> FileInfo:
            node = tree.resolve(conn, path)
            conn.execute("UPDATE inodes SET labels = ? WHERE id = ?", (encoded, node.id))
            return tree.info(path, replace(node, labels=encoded))

        return await self._write(path, work)
