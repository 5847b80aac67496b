"""The PostgreSQL store's writes: each one statement or one transaction.

Writers lock the file's row (``SELECT ... FOR UPDATE``) for the expected-version check, so the
check and the write are atomic across every process using the database. Structure is guarded
by a per-namespace advisory lock: operations that add or change entries take it shared (they
run in parallel), deleting or moving a directory takes it exclusively, so a subtree never
gains an entry while it is deleted or moved and no orphan is left behind.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from typing import Any, Final

from psycopg import errors
from psycopg.rows import TupleRow
from psycopg.types.json import Jsonb

from bastion.core.errors import AlreadyExistsError, IsADirectoryError_, NotFoundError, StoreError
from bastion.core.models import FileInfo, Labels, WriteMode
from bastion.core.paths import VPath
from bastion.stores import _pg_rows as db
from bastion.stores._common import check_move, check_write, conflict, not_empty
from bastion.stores._pg_rows import Conn, Entry

__all__ = ["delete", "mkdir", "rename", "set_labels", "set_metadata", "write"]


async def write(
    conn: Conn,
    ns: int,
    path: VPath,
    data: bytes,
    mode: WriteMode,
    if_version: str | None,
    chunk_size: int,
    labels: Labels | None = None,
) -> FileInfo:
    """Create, overwrite or append in one transaction; ``labels``, when given, are set in
    the same transaction (otherwise an existing file keeps its own)."""
    if path.is_root:
        raise IsADirectoryError_(path="/")
    if if_version is not None:
        await _refuse_stale(conn, ns, path, if_version)
    async with conn.transaction():
        await db.tree_lock(conn, ns, exclusive=False)
        info = await _write_locked(conn, ns, path, data, mode, if_version, chunk_size)
        if labels is not None:
            info = await set_labels(conn, ns, path, labels)
        return info


async def _refuse_stale(conn: Conn, ns: int, path: VPath, if_version: str) -> None:
    """Refuse a write whose expected version is already gone, without a transaction or a
    lock: versions never come back, so the check under the lock would refuse it too. Among
    many writers of one file most attempts are stale; they cost one round trip here."""
    cur = await conn.execute(
        "SELECT version FROM bastion_fs_entries WHERE ns = %s AND path = %s AND NOT is_dir",
        (ns, db.path_key(path)),
    )
    row = await cur.fetchone()
    if row is not None and str(row[0]) != if_version:
        raise conflict(path, if_version)


async def _write_locked(
    conn: Conn,
    ns: int,
    path: VPath,
    data: bytes,
    mode: WriteMode,
    if_version: str | None,
    chunk_size: int,
) -> FileInfo:
    while True:
        row = await db.locked(conn, ns, path)
        if row is None:
            if if_version is not None:
                raise conflict(path, if_version)
            if await db.require_parent(conn, ns, path) is not None:
                continue  # created since: lock it and decide again
            created = await _create(conn, ns, path, data, chunk_size)
            if created is not None:
                return created
            if mode is WriteMode.CREATE:
                raise AlreadyExistsError(path=path)
            continue  # another writer created it first: lock it and decide again
        if row.is_dir:
            raise IsADirectoryError_(path=path)
        check_write(path, mode, if_version, str(row.version))
        if mode is WriteMode.APPEND:
            return await _append(conn, ns, row, data)
        return await _overwrite(conn, ns, row, data, chunk_size)


async def _create(
    conn: Conn, ns: int, path: VPath, data: bytes, chunk_size: int
) -> FileInfo | None:
    cur = await conn.execute(
        """INSERT INTO bastion_fs_entries
                (ns, path, parent, is_dir, size, mtime, version, content, chunk_size)
            VALUES (%s, %s, %s, false, %s, %s, nextval('bastion_fs_versions'),
                    nextval('bastion_fs_versions'), %s)
            ON CONFLICT (ns, path) DO NOTHING
            RETURNING path, is_dir, size, mtime, version, content, chunk_size, labels""",
        (ns, db.path_key(path), db.parent_key(path), len(data), time.time(), chunk_size),
    )
    found = await cur.fetchone()
    if found is None:
        return None
    row = Entry.of(found)
    await _put_chunks(conn, row.content, data, chunk_size, first_idx=0)
    return row.info()


async def _overwrite(conn: Conn, ns: int, row: Entry, data: bytes, chunk_size: int) -> FileInfo:
    cur = await conn.execute(
        """WITH gone AS (DELETE FROM bastion_fs_chunks WHERE content = %s)
            UPDATE bastion_fs_entries
            SET size = %s, mtime = %s, version = nextval('bastion_fs_versions'),
                content = nextval('bastion_fs_versions'), chunk_size = %s
            WHERE ns = %s AND path = %s
            RETURNING path, is_dir, size, mtime, version, content, chunk_size, labels""",
        (row.content, len(data), time.time(), chunk_size, ns, db.path_key(row.path)),
    )
    new = Entry.of(await _one(cur))
    await _put_chunks(conn, new.content, data, chunk_size, first_idx=0)
    return new.info()


async def _append(conn: Conn, ns: int, row: Entry, data: bytes) -> FileInfo:
    """Append by extending the tail chunk in place and adding chunks after it."""
    cs = row.chunk_size
    fill = (-row.size) % cs  # room left in the tail chunk
    view = memoryview(data)
    if fill and data:
        await conn.execute(
            "UPDATE bastion_fs_chunks SET data = data || %b WHERE content = %s AND idx = %s",
            (view[:fill], row.content, row.size // cs),
        )
    rest = view[fill:] if fill else view
    await _put_chunks(conn, row.content, rest, cs, first_idx=(row.size + cs - 1) // cs)
    cur = await conn.execute(
        """UPDATE bastion_fs_entries
            SET size = size + %s, mtime = %s, version = nextval('bastion_fs_versions')
            WHERE ns = %s AND path = %s
            RETURNING path, is_dir, size, mtime, version, content, chunk_size, labels""",
        (len(data), time.time(), ns, db.path_key(row.path)),
    )
    return Entry.of(await _one(cur)).info()


async def _put_chunks(
    conn: Conn, content: int | None, data: bytes | memoryview, cs: int, *, first_idx: int
) -> None:
    if not data:
        return
    view = memoryview(data)
    rows = [
        (content, first_idx + n, view[at : at + cs]) for n, at in enumerate(range(0, len(view), cs))
    ]
    async with conn.cursor() as cur:
        await cur.executemany(
            "INSERT INTO bastion_fs_chunks (content, idx, data) VALUES (%s, %s, %b)", rows
        )


async def _one(cur: Any) -> TupleRow:
    row: TupleRow | None = await cur.fetchone()
    if row is None:  # pragma: no cover - the row is locked by this transaction
        raise StoreError("an entry vanished under its own lock; retry")
    return row


async def mkdir(conn: Conn, ns: int, path: VPath) -> None:
    if path.is_root:
        raise AlreadyExistsError(path="/")
    async with conn.transaction():
        await db.tree_lock(conn, ns, exclusive=False)
        if await db.require_parent(conn, ns, path) is not None:
            raise AlreadyExistsError(path=path)
        cur = await conn.execute(
            "INSERT INTO bastion_fs_entries (ns, path, parent, is_dir, mtime) "
            "VALUES (%s, %s, %s, true, %s) ON CONFLICT (ns, path) DO NOTHING RETURNING 1",
            (ns, db.path_key(path), db.parent_key(path), time.time()),
        )
        if await cur.fetchone() is None:
            raise AlreadyExistsError(path=path)


_DELETE_TREE: Final = """
    WITH gone AS (
        DELETE FROM bastion_fs_entries
        WHERE ns = %(ns)s AND (path = %(key)s OR (path > %(below)s AND path < %(end)s))
        RETURNING content
    ), chunks AS (
        DELETE FROM bastion_fs_chunks WHERE content IN (SELECT content FROM gone)
    )
    SELECT count(*) FROM gone"""


async def delete(conn: Conn, ns: int, path: VPath, recursive: bool) -> None:
    if path.is_root:
        raise IsADirectoryError_("cannot delete the store root")
    key = db.path_key(path)
    tree = {"ns": ns, "key": key, "below": key + "/", "end": db.subtree_end(key)}
    while True:
        seen = await db.lookup(conn, ns, path)
        async with conn.transaction():
            await db.tree_lock(conn, ns, exclusive=seen.is_dir)
            row = await db.locked(conn, ns, path)
            if row is None or row.is_dir != seen.is_dir:
                continue  # changed before the lock was taken: look again
            if row.is_dir and not recursive:
                cur = await conn.execute(
                    "SELECT 1 FROM bastion_fs_entries WHERE ns = %s AND parent = %s LIMIT 1",
                    (ns, key),
                )
                if await cur.fetchone() is not None:
                    raise not_empty(path)
            await conn.execute(_DELETE_TREE, tree)
            return


async def rename(conn: Conn, ns: int, src: VPath, dst: VPath) -> None:
    check_move(src, dst)
    key = db.path_key(src)
    while True:
        seen = await db.lookup(conn, ns, src)
        try:
            async with conn.transaction():
                await db.tree_lock(conn, ns, exclusive=seen.is_dir)
                row = await db.locked(conn, ns, src)
                if row is None or row.is_dir != seen.is_dir:
                    continue  # changed before the lock was taken: look again
                if await db.require_parent(conn, ns, dst) is not None:
                    raise AlreadyExistsError(path=dst)
                await conn.execute(
                    """UPDATE bastion_fs_entries
                       SET path = %(dst)s || substr(path, char_length(%(key)s) + 1),
                           parent = CASE WHEN path = %(key)s THEN %(dst_parent)s
                                    ELSE %(dst)s || substr(parent, char_length(%(key)s) + 1) END
                       WHERE ns = %(ns)s
                         AND (path = %(key)s OR (path > %(below)s AND path < %(end)s))""",
                    {
                        "ns": ns,
                        "key": key,
                        "below": key + "/",
                        "end": db.subtree_end(key),
                        "dst": db.path_key(dst),
                        "dst_parent": db.parent_key(dst),
                    },
                )
                return
        except errors.UniqueViolation:
            raise AlreadyExistsError(path=dst) from None


async def set_labels(conn: Conn, ns: int, path: VPath, labels: Labels | None) -> FileInfo:
    _not_root(path)
    cur = await conn.execute(
        "UPDATE bastion_fs_entries SET labels = %s WHERE ns = %s AND path = %s "
        "RETURNING path, is_dir, size, mtime, version, content, chunk_size, labels",
        (db.labels_json(labels), ns, db.path_key(path)),
    )
    return await _updated(conn, ns, path, await cur.fetchone())


async def set_metadata(conn: Conn, ns: int, path: VPath, metadata: Mapping[str, Any]) -> FileInfo:
    _not_root(path)
    cur = await conn.execute(
        "UPDATE bastion_fs_entries SET metadata = %s WHERE ns = %s AND path = %s "
        "RETURNING path, is_dir, size, mtime, version, content, chunk_size, labels",
        (Jsonb(dict(metadata)) if metadata else None, ns, db.path_key(path)),
    )
    return await _updated(conn, ns, path, await cur.fetchone())


def _not_root(path: VPath) -> None:
    if path.is_root:
        raise IsADirectoryError_("the store root carries no labels or metadata")


async def _updated(conn: Conn, ns: int, path: VPath, row: TupleRow | None) -> FileInfo:
    if row is None:
        await db.lookup(conn, ns, path)  # says what is wrong
        raise NotFoundError(path=path)  # pragma: no cover - created in between
    return Entry.of(row).info()
