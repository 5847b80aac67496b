"""The PostgreSQL store's rows: how entries are encoded and looked up, for one namespace.

The schema is described in ``_pg_schema``; the reads are in ``_pg_read``, the writes in
``_pg_write``. Each function takes a connection in autocommit mode (``Conn``) and the
namespace's id. Paths are stored as the absolute store path (``/a/b.txt``) in the ``C``
collation, so a subtree is one key range: ``'/a/' < path < '/a0'`` (``'0'`` follows ``'/'``).
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final

from psycopg import AsyncConnection
from psycopg.rows import TupleRow
from psycopg.types.json import Jsonb

from bastion.core.errors import NotADirectoryError_, NotFoundError, StoreError
from bastion.core.models import EntryKind, FileInfo, Labels
from bastion.core.paths import VPath
from bastion.stores._common import labels_dict

__all__ = [
    "Conn",
    "Entry",
    "ancestors",
    "labels_json",
    "locked",
    "lookup",
    "namespace",
    "parent_key",
    "path_key",
    "require_parent",
    "rows",
    "subtree_end",
    "tree_lock",
    "walk_down",
]

Conn = AsyncConnection[TupleRow]

_TREE_LOCK: Final = 0x62667331  # advisory lock class for a namespace's tree ("bfs1")
# Every query that returns entries selects, in this order (``Entry.of`` reads them):
# path, is_dir, size, mtime, version, content, chunk_size, labels


@dataclass(frozen=True, slots=True)
class Entry:
    """One entry as stored."""

    path: VPath
    is_dir: bool
    size: int
    mtime: float
    version: int | None
    content: int | None
    chunk_size: int
    labels: Labels | None

    @classmethod
    def of(cls, row: TupleRow) -> Entry:
        path, is_dir, size, mtime, version, content, chunk_size, labels = row
        return cls(
            stored_path(path),
            is_dir,
            size,
            mtime,
            version,
            content,
            chunk_size or 0,
            stored_labels(labels),
        )

    def info(self) -> FileInfo:
        if self.is_dir:
            return FileInfo(self.path, EntryKind.DIRECTORY, 0, self.mtime, None, self.labels)
        return FileInfo(
            self.path, EntryKind.FILE, self.size, self.mtime, str(self.version), self.labels
        )


# -- encoding ---------------------------------------------------------------------------------


def stored_path(stored: str) -> VPath:
    return VPath(tuple(stored[1:].split("/"))) if stored != "/" else VPath.ROOT


def path_key(path: VPath) -> str:
    return str(path)


def parent_key(path: VPath) -> str:
    return str(path.parent)


def subtree_end(key: str) -> str:
    """The first key after every ``key/...`` in the ``C`` collation ('0' follows '/')."""
    return key + "0"


def ancestors(path: VPath) -> list[str]:
    return [str(VPath(path.parts[:n])) for n in range(1, len(path.parts))]


def stored_labels(stored: Any) -> Labels | None:
    if stored is None:
        return None
    return Labels(
        tenant=stored.get("tenant"),
        classification=stored.get("classification", "public"),
        roles=frozenset(stored.get("roles", ())),
        tags=frozenset(stored.get("tags", ())),
    )


def labels_json(labels: Labels | None) -> Jsonb | None:
    if labels is None:
        return None
    return Jsonb(labels_dict(labels))


# -- lookups ----------------------------------------------------------------------------------


async def namespace(conn: Conn, name: str) -> tuple[int, float]:
    """The id and creation time of namespace ``name``, created on first use (only then
    written: a namespace that exists opens on a read-only database, a standby)."""
    query = "SELECT id, created FROM bastion_fs_namespaces WHERE name = %s"
    row = await (await conn.execute(query, (name,))).fetchone()
    if row is None:
        await conn.execute(
            "INSERT INTO bastion_fs_namespaces (name, created) VALUES (%s, %s) "
            "ON CONFLICT (name) DO NOTHING",
            (name, time.time()),
        )
        row = await (await conn.execute(query, (name,))).fetchone()
    if row is None:  # pragma: no cover - deleted between the two statements
        raise StoreError(f"namespace {name!r} vanished while it was opened; retry")
    return int(row[0]), float(row[1])


async def rows(conn: Conn, ns: int, keys: Sequence[str]) -> dict[str, Entry]:
    cur = await conn.execute(
        "SELECT path, is_dir, size, mtime, version, content, chunk_size, labels"
        " FROM bastion_fs_entries WHERE ns = %s AND path = ANY(%s)",
        (ns, list(keys)),
    )
    return {str(r.path): r for r in map(Entry.of, await cur.fetchall())}


def walk_down(path: VPath, found: Mapping[str, Entry], *, writing: bool = False) -> Entry | None:
    """The row of ``path`` given the rows of it and its ancestors, or ``None`` when only it is
    missing; raise when an ancestor is missing or is a file."""
    for key in ancestors(path):
        above = found.get(key)
        if above is None:
            if writing:
                raise NotFoundError(
                    f"parent directory {path.parent} does not exist", path=path.parent
                )
            raise NotFoundError(path=path)
        if not above.is_dir:
            raise NotADirectoryError_(path=key)
    return found.get(path_key(path))


async def lookup(conn: Conn, ns: int, path: VPath) -> Entry:
    """The row of an existing entry (never the root), in one query with its ancestors."""
    row = walk_down(path, await rows(conn, ns, [*ancestors(path), path_key(path)]))
    if row is None:
        raise NotFoundError(path=path)
    return row


async def require_parent(conn: Conn, ns: int, path: VPath) -> Entry | None:
    """Check that ``path``'s parent is an existing directory; return ``path``'s row if any."""
    return walk_down(path, await rows(conn, ns, [*ancestors(path), path_key(path)]), writing=True)


async def locked(conn: Conn, ns: int, path: VPath) -> Entry | None:
    cur = await conn.execute(
        "SELECT path, is_dir, size, mtime, version, content, chunk_size, labels"
        " FROM bastion_fs_entries WHERE ns = %s AND path = %s FOR UPDATE",
        (ns, path_key(path)),
    )
    row = await cur.fetchone()
    return None if row is None else Entry.of(row)


async def tree_lock(conn: Conn, ns: int, *, exclusive: bool) -> None:
    if exclusive:
        await conn.execute("SELECT pg_advisory_xact_lock(%s::int, %s::int)", (_TREE_LOCK, ns))
    else:
        await conn.execute(
            "SELECT pg_advisory_xact_lock_shared(%s::int, %s::int)", (_TREE_LOCK, ns)
        )
