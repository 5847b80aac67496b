"""The PostgreSQL store's reads. They take no locks.

A range read looks the file up, then fetches only the chunks (and the slices of them) that
cover the range, of the content id it saw. An overwrite writes a new content id and drops the
old one's chunks in the same transaction, so a read that raced one finds them gone and looks
again: it returns the old or the new content, never a mix. An append only extends the tail
chunk in place, which leaves the bytes a reader was promised unchanged.
"""

from __future__ import annotations

from typing import Any, Final

from bastion.core.errors import IsADirectoryError_, NotADirectoryError_, NotFoundError, StoreError
from bastion.core.models import EntryKind, FileInfo
from bastion.core.paths import VPath
from bastion.stores import _pg_rows as db
from bastion.stores._pg_rows import Conn, Entry

__all__ = [
    "READ_ATTEMPTS",
    "changed_during_read",
    "fetch",
    "get_metadata",
    "list_dir",
    "lookup_file",
    "read",
    "span",
    "stat",
]

READ_ATTEMPTS: Final = 8
"""Lookups a read makes before it gives up on a file that keeps being overwritten."""


async def stat(conn: Conn, ns: int, path: VPath, root_mtime: float) -> FileInfo:
    if path.is_root:
        return FileInfo(VPath.ROOT, EntryKind.DIRECTORY, 0, root_mtime)
    return (await db.lookup(conn, ns, path)).info()


async def lookup_file(conn: Conn, ns: int, path: VPath) -> Entry:
    """The row of an existing file (a directory raises :class:`IsADirectoryError_`)."""
    if path.is_root:
        raise IsADirectoryError_(path="/")
    row = await db.lookup(conn, ns, path)
    if row.is_dir:
        raise IsADirectoryError_(path=path)
    return row


def span(row: Entry, offset: int, length: int | None) -> tuple[int, int]:
    """The byte range ``[start, end)`` of ``row``'s content that a read asks for."""
    start = min(offset, row.size)
    end = row.size if length is None else min(row.size, offset + length)
    return start, max(start, end)


async def fetch(conn: Conn, row: Entry, offset: int, length: int | None) -> bytes | None:
    """The bytes of the range of the content ``row`` names, fetching only the chunks (and the
    slices of them) that cover it; ``None`` when that content is gone (overwritten or deleted
    since ``row`` was read: look the file up again)."""
    start, end = span(row, offset, length)
    if start >= end:
        return b""
    return await _slices(conn, row, start, end)


async def read(
    conn: Conn, ns: int, path: VPath, offset: int, length: int | None
) -> tuple[FileInfo, bytes]:
    """The file's info and the bytes of the range, on one connection."""
    for _ in range(READ_ATTEMPTS):
        row = await lookup_file(conn, ns, path)
        data = await fetch(conn, row, offset, length)
        if data is not None:
            return row.info(), data
    raise changed_during_read(path)


def changed_during_read(path: VPath) -> StoreError:
    return StoreError(f"{path} kept changing while it was read; retry", path=path)


async def _slices(conn: Conn, row: Entry, start: int, end: int) -> bytes | None:
    cs = row.chunk_size
    cur = await conn.execute(
        """SELECT substring(data FROM (greatest(%(start)s - idx::bigint * %(cs)s, 0) + 1)::int
                   FOR (least(%(end)s - idx::bigint * %(cs)s, %(cs)s)
                        - greatest(%(start)s - idx::bigint * %(cs)s, 0))::int)
           FROM bastion_fs_chunks
           WHERE content = %(content)s AND idx BETWEEN %(lo)s AND %(hi)s
           ORDER BY idx""",
        {
            "start": start,
            "end": end,
            "cs": cs,
            "content": row.content,
            "lo": start // cs,
            "hi": (end - 1) // cs,
        },
    )
    data = b"".join(r[0] for r in await cur.fetchall())
    return data if len(data) == end - start else None


async def list_dir(conn: Conn, ns: int, path: VPath) -> list[FileInfo]:
    """The children of a directory, in one query with the directory and its ancestors."""
    key = db.path_key(path)
    lookups = [*db.ancestors(path), key] if not path.is_root else []
    cur = await conn.execute(
        "SELECT path, is_dir, size, mtime, version, content, chunk_size, labels"
        " FROM bastion_fs_entries WHERE ns = %s AND (parent = %s OR path = ANY(%s))",
        (ns, key, lookups),
    )
    found: dict[str, Entry] = {}
    children: list[FileInfo] = []
    for row in map(Entry.of, await cur.fetchall()):
        if db.path_key(row.path) in lookups:
            found[db.path_key(row.path)] = row
        else:
            children.append(row.info())
    if not path.is_root:
        row_ = db.walk_down(path, found)
        if row_ is None:
            raise NotFoundError(path=path)
        if not row_.is_dir:
            raise NotADirectoryError_(path=path)
    return children


async def get_metadata(conn: Conn, ns: int, path: VPath) -> dict[str, Any]:
    if path.is_root:
        return {}
    cur = await conn.execute(
        "SELECT metadata FROM bastion_fs_entries WHERE ns = %s AND path = %s",
        (ns, db.path_key(path)),
    )
    row = await cur.fetchone()
    if row is None:
        await db.lookup(conn, ns, path)  # says what is wrong
        raise NotFoundError(path=path)  # pragma: no cover - created in between
    return dict(row[0] or {})
