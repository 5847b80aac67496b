"""Tree and chunk operations of the SQLite store, on one connection inside one transaction.

Plain functions over a ``sqlite3.Connection``: :class:`~bastion.stores.sqlite.SqliteStore`
composes them into its calls, and :class:`~bastion.stores._sqlite_db.Database` wraps each
call in a transaction. The schema is described in ``_sqlite_db``.
"""

from __future__ import annotations

import json
import secrets
import sqlite3
from collections.abc import Iterator
from dataclasses import dataclass

from bastion.core.errors import NotADirectoryError_, NotFoundError, StoreError
from bastion.core.models import EntryKind, FileInfo, Labels
from bastion.core.paths import VPath
from bastion.stores._common import labels_dict
from bastion.stores._sqlite_db import ROOT_ID

__all__ = [
    "Node",
    "append_chunks",
    "child",
    "children",
    "decode_labels",
    "encode_labels",
    "info",
    "next_version",
    "parent_dir",
    "read_chunks",
    "remove",
    "resolve",
    "touch",
    "write_chunks",
]

# Every query that returns entries selects the same columns, in the order of ``Node``.
_BY_NAME = (
    "SELECT i.id, i.kind, i.size, i.mtime, i.version, i.chunk_size, i.labels"
    " FROM dentries d JOIN inodes i ON i.id = d.inode WHERE d.parent = ? AND d.name = ?"
)
_LIST = (
    "SELECT d.name, i.id, i.kind, i.size, i.mtime, i.version, i.chunk_size, i.labels"
    " FROM dentries d JOIN inodes i ON i.id = d.inode WHERE d.parent = ?"
)
_BY_ID = (
    "SELECT i.id, i.kind, i.size, i.mtime, i.version, i.chunk_size, i.labels"
    " FROM inodes i WHERE i.id = ?"
)
_TREE = """
WITH RECURSIVE tree (id) AS (
    SELECT ? UNION ALL SELECT d.inode FROM dentries d JOIN tree t ON d.parent = t.id
)
SELECT id FROM tree
"""

Row = tuple[int, str, int, float, str | None, int, str | None]


@dataclass(frozen=True, slots=True)
class Node:
    """One row of ``inodes``."""

    id: int
    kind: EntryKind
    size: int
    mtime: float
    version: str | None
    chunk_size: int
    labels: str | None

    @property
    def is_dir(self) -> bool:
        return self.kind is EntryKind.DIRECTORY


def _node(row: Row) -> Node:
    return Node(row[0], EntryKind(row[1]), row[2], row[3], row[4], row[5], row[6])


def _damaged(path: VPath, what: str) -> StoreError:
    return StoreError(path=path, reason=f"the SQLite store is damaged ({what}); ask an operator")


# -- lookups ---------------------------------------------------------------------------------


def child(conn: sqlite3.Connection, parent: int, name: str) -> Node | None:
    row = conn.execute(_BY_NAME, (parent, name)).fetchone()
    return None if row is None else _node(row)


def children(conn: sqlite3.Connection, parent: int) -> Iterator[tuple[str, Node]]:
    for row in conn.execute(_LIST, (parent,)):
        yield row[0], _node(row[1:])


def resolve(conn: sqlite3.Connection, path: VPath) -> Node:
    """The entry at ``path``: :class:`NotFoundError` when missing, :class:`NotADirectoryError_`
    when a file stands where a directory is needed on the way."""
    row = conn.execute(_BY_ID, (ROOT_ID,)).fetchone()
    if row is None:
        raise _damaged(path, "no root directory")
    node = _node(row)
    for depth, name in enumerate(path.parts):
        if not node.is_dir:
            raise NotADirectoryError_(path=VPath(path.parts[:depth]))
        found = child(conn, node.id, name)
        if found is None:
            raise NotFoundError(path=path)
        node = found
    return node


def parent_dir(conn: sqlite3.Connection, path: VPath) -> Node:
    """The directory that holds (or would hold) ``path``."""
    try:
        parent = resolve(conn, path.parent)
    except NotFoundError:
        raise NotFoundError(
            f"parent directory {path.parent} does not exist", path=path.parent
        ) from None
    if not parent.is_dir:
        raise NotADirectoryError_(path=path.parent)
    return parent


def info(path: VPath, node: Node) -> FileInfo:
    labels = None if node.labels is None else decode_labels(node.labels, path)
    if node.is_dir:
        return FileInfo(path, EntryKind.DIRECTORY, 0, node.mtime, None, labels)
    return FileInfo(path, EntryKind.FILE, node.size, node.mtime, node.version, labels)


# -- labels ----------------------------------------------------------------------------------


def encode_labels(labels: Labels) -> str:
    return json.dumps(labels_dict(labels), separators=(",", ":"))


def decode_labels(text: str, path: VPath) -> Labels:
    try:
        raw = json.loads(text)
        tenant = raw["tenant"]
        classification = raw["classification"]
        roles = frozenset(str(r) for r in raw["roles"])
        tags = frozenset(str(t) for t in raw["tags"])
    except (ValueError, TypeError, KeyError) as exc:
        raise _damaged(path, "unreadable labels") from exc
    if not (tenant is None or isinstance(tenant, str)) or not isinstance(classification, str):
        raise _damaged(path, "unreadable labels")
    return Labels(tenant, classification, roles, tags)


# -- versions and times ----------------------------------------------------------------------


def next_version(conn: sqlite3.Connection) -> str:
    """A version never handed out before by this file: a counter (kept in the database, so
    it survives reopening and is shared by every process) and a random tag (so that a file
    restored from a backup does not hand out the same versions again for other content)."""
    row = conn.execute(
        "UPDATE meta SET value = value + 1 WHERE key = 'last_version' RETURNING value"
    ).fetchone()
    if row is None:
        raise StoreError("the SQLite store is damaged (no version counter); restore it")
    return f"{int(row[0])}-{secrets.token_hex(4)}"


def touch(conn: sqlite3.Connection, inode: int, mtime: float) -> None:
    conn.execute("UPDATE inodes SET mtime = ? WHERE id = ?", (mtime, inode))


# -- chunks ----------------------------------------------------------------------------------


def read_chunks(
    conn: sqlite3.Connection, path: VPath, node: Node, offset: int, length: int | None
) -> bytes:
    """The bytes ``[offset, offset + length)`` of the file, selecting only the chunks that
    cover them."""
    end = node.size if length is None else min(node.size, offset + length)
    if offset >= end:
        return b""
    size = node.chunk_size
    first, last = offset // size, (end - 1) // size
    rows = conn.execute(
        "SELECT idx, data FROM chunks WHERE inode = ? AND idx BETWEEN ? AND ? ORDER BY idx",
        (node.id, first, last),
    ).fetchall()
    if len(rows) != last - first + 1 or rows[0][0] != first or rows[-1][0] != last:
        raise _damaged(path, "missing chunks")
    head = offset - first * size
    tail = end - last * size
    if first == last:
        data = bytes(rows[0][1][head:tail])
    else:
        pieces = [rows[0][1][head:], *(row[1] for row in rows[1:-1]), rows[-1][1][:tail]]
        data = b"".join(pieces)
    if len(data) != end - offset:
        raise _damaged(path, "short chunks")
    return data


def write_chunks(
    conn: sqlite3.Connection, inode: int, data: memoryview, first: int, size: int
) -> None:
    """Store ``data`` as chunks ``first, first + 1, ...`` of ``size`` bytes (the last one
    shorter)."""
    conn.executemany(
        "INSERT INTO chunks (inode, idx, data) VALUES (?, ?, ?)",
        (
            (inode, first + n, data[start : start + size])
            for n, start in enumerate(range(0, len(data), size))
        ),
    )


def append_chunks(conn: sqlite3.Connection, path: VPath, node: Node, data: memoryview) -> int:
    """Add ``data`` at the end of the file, touching only its last chunk and new ones;
    returns the new size."""
    size = node.chunk_size
    index, used = divmod(node.size, size)
    rest = data
    if used and rest:
        row = conn.execute(
            "SELECT data FROM chunks WHERE inode = ? AND idx = ?", (node.id, index)
        ).fetchone()
        if row is None or len(row[0]) != used:
            raise _damaged(path, "short last chunk")
        take = min(size - used, len(rest))
        conn.execute(
            "UPDATE chunks SET data = ? WHERE inode = ? AND idx = ?",
            (bytes(row[0]) + rest[:take].tobytes(), node.id, index),
        )
        rest = rest[take:]
        index += 1
    write_chunks(conn, node.id, rest, index, size)
    return node.size + len(data)


def remove(conn: sqlite3.Connection, node: Node) -> None:
    """Delete ``node`` and, for a directory, everything below it (entries, inodes, chunks)."""
    ids = [(row[0],) for row in conn.execute(_TREE, (node.id,))] if node.is_dir else [(node.id,)]
    conn.executemany("DELETE FROM chunks WHERE inode = ?", ids)
    conn.executemany("DELETE FROM dentries WHERE inode = ?", ids)
    conn.executemany("DELETE FROM inodes WHERE id = ?", ids)
