"""The change journal in PostgreSQL: the tables, the retention and the contract of the SQLite
journal (:mod:`bastion.workspace.journal.db`) in a database every process of the workspace
reaches, on any machine (docs/changes.md).

``PgJournal("postgresql://user@host/db")`` keeps its rows in ``bastion_journal_*`` tables,
created on first use (several processes may start at once). Every writing transaction takes
one advisory lock first, so records, retention and checkpoints of all processes follow each
other as in SQLite: a change's id is its place in the journal, and a retention pass never
drops a content another process's record is relying on. A database that cannot be reached or
written makes :meth:`record` raise :class:`JournalError`, so the write is refused; the next
call connects again. Messages never contain the DSN (it may hold a password).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterable, Sequence
from typing import TYPE_CHECKING, Any, TypeVar

from bastion.core.errors import ConfigurationError, NotFoundError
from bastion.workspace.journal.db import (
    Change,
    Checkpoint,
    Entry,
    Journal,
    JournalError,
    Retention,
    State,
    entry_of,
    entry_rows,
)

if TYPE_CHECKING:
    import psycopg

__all__ = ["PgJournal", "is_postgres_url"]

_PRUNE_EVERY = 64
_LOCK = 0x6A6F75726E616C  # "journal": the advisory lock every writing transaction takes

_SCHEMA = """
CREATE TABLE IF NOT EXISTS bastion_journal_blobs (
    hash TEXT PRIMARY KEY, size BIGINT NOT NULL, data BYTEA NOT NULL);
CREATE TABLE IF NOT EXISTS bastion_journal_changes (
    id BIGSERIAL PRIMARY KEY, at DOUBLE PRECISION NOT NULL, principal TEXT NOT NULL,
    tenant TEXT, thread TEXT, op TEXT NOT NULL, path TEXT NOT NULL, target TEXT);
CREATE INDEX IF NOT EXISTS bastion_journal_changes_thread
    ON bastion_journal_changes(thread, id);
CREATE INDEX IF NOT EXISTS bastion_journal_changes_at ON bastion_journal_changes(at);
CREATE TABLE IF NOT EXISTS bastion_journal_entries (
    change_id BIGINT NOT NULL REFERENCES bastion_journal_changes(id) ON DELETE CASCADE,
    seq INTEGER NOT NULL, path TEXT NOT NULL,
    before_kind TEXT, before_hash TEXT, before_labels TEXT,
    after_kind TEXT, after_hash TEXT, after_labels TEXT,
    PRIMARY KEY (change_id, seq));
CREATE INDEX IF NOT EXISTS bastion_journal_entries_path ON bastion_journal_entries(path);
CREATE INDEX IF NOT EXISTS bastion_journal_entries_before
    ON bastion_journal_entries(before_hash);
CREATE INDEX IF NOT EXISTS bastion_journal_entries_after ON bastion_journal_entries(after_hash);
CREATE TABLE IF NOT EXISTS bastion_journal_checkpoints (
    name TEXT PRIMARY KEY, change_id BIGINT NOT NULL, at DOUBLE PRECISION NOT NULL,
    principal TEXT NOT NULL);
"""

_CHANGE_COLUMNS = "id, at, principal, tenant, thread, op, path, target"
_ENTRY_COLUMNS = (
    "change_id, path, before_kind, before_hash, before_labels, after_kind, after_hash, after_labels"
)

T = TypeVar("T")


def is_postgres_url(where: str) -> bool:
    return where.startswith(("postgresql://", "postgres://"))


class _NotHeld(Exception):
    """A content a record relies on is no longer in the journal (its transaction is undone)."""


def _reason(exc: BaseException) -> str:
    """What went wrong, without the server's message (it may quote the DSN)."""
    state = getattr(exc, "sqlstate", None)
    return type(exc).__name__ + (f" {state}" if state else "")


class PgJournal(Journal):
    """The change journal in the PostgreSQL database ``dsn`` (see the module doc)."""

    overlaps_commit = True  # each commit waits for the server's flush: run it beside the store's

    def __init__(
        self, dsn: str, retention: Retention | None = None, *, timeout: float = 10.0
    ) -> None:
        if not isinstance(dsn, str) or not dsn.strip():
            raise ConfigurationError("journal: a PostgreSQL journal needs postgresql://host/db")
        try:
            import psycopg
            from psycopg.conninfo import conninfo_to_dict
        except ImportError:
            raise ConfigurationError(
                "journal: a PostgreSQL journal needs psycopg: pip install 'bastion[postgres]'"
            ) from None
        self._psycopg = psycopg
        try:
            conninfo_to_dict(dsn)
        except Exception:  # noqa: BLE001 - its message may quote the DSN, password included
            raise ConfigurationError(
                "journal: the PostgreSQL URL cannot be parsed; use postgresql://user@host/db"
            ) from None
        self._dsn = dsn
        self._timeout = timeout
        self.retention = retention or Retention()
        self._lock = threading.Lock()
        self._since_prune = 0
        self._pg: psycopg.Connection[Any] | None = None
        with self._lock:
            self._call(self._create, "opened")

    def __repr__(self) -> str:
        return "PgJournal(postgresql)"

    # -- the connection ----------------------------------------------------------------------

    def _connection(self) -> psycopg.Connection[Any]:
        pg = self._pg
        if pg is None or pg.closed or pg.broken:
            if pg is not None:
                pg.close()
            self._pg = None
            ms = int(self._timeout * 1000)
            pg = self._psycopg.connect(
                self._dsn,
                autocommit=True,
                connect_timeout=max(1, int(self._timeout)),
                options=f"-c statement_timeout={ms} -c lock_timeout={ms}",
            )
            self._pg = pg
        return pg

    def _call(self, work: Callable[[psycopg.Connection[Any]], T], what: str) -> T:
        """``work`` on the connection (the caller holds the lock); a database error is a
        :class:`JournalError` and the next call connects again."""
        try:
            return work(self._connection())
        except self._psycopg.Error as exc:
            if self._pg is not None and (self._pg.broken or self._pg.closed):
                self._pg = None
            suffix = "; nothing was changed" if what == "written" else ""
            raise JournalError(
                f"the change journal cannot be {what} ({_reason(exc)}){suffix}"
            ) from None

    @staticmethod
    def _create(pg: psycopg.Connection[Any]) -> None:
        with pg.transaction():
            pg.execute("SELECT pg_advisory_xact_lock(%s)", (_LOCK,))
            pg.execute(_SCHEMA)

    def compact(self) -> None:
        """Give the space of dropped rows back (``VACUUM``)."""

        def work(pg: psycopg.Connection[Any]) -> None:
            for table in ("blobs", "entries", "changes"):
                pg.execute(f"VACUUM bastion_journal_{table}")

        with self._lock:
            self._call(work, "read")

    def close(self) -> None:
        with self._lock:
            if self._pg is not None:
                self._pg.close()
                self._pg = None

    # -- writing -----------------------------------------------------------------------------

    def record(
        self,
        change: int | None,
        head: tuple[str, str | None, str | None, str, str, str | None],
        entries: Sequence[tuple[str, State, State]],
        contents: Iterable[tuple[str, bytes]],
        held: Iterable[str] = (),
        durable: bool = True,
    ) -> int | None:
        """As :meth:`Journal.record`; every commit is flushed, ``durable`` or not: without the
        flush a crash of the database would lose a record while the process, and a memory
        store's content, live on."""
        blobs = [(h, len(data), data) for h, data in contents]
        wanted = list(held)

        def work(pg: psycopg.Connection[Any]) -> int:
            nonlocal change
            with pg.transaction(), pg.cursor() as cur:
                cur.execute("SELECT pg_advisory_xact_lock(%s)", (_LOCK,))
                cur.executemany(
                    "INSERT INTO bastion_journal_blobs(hash, size, data) VALUES (%s, %s, %s)"
                    " ON CONFLICT (hash) DO NOTHING",
                    blobs,
                )
                if wanted:
                    cur.execute(
                        "SELECT count(*) FROM bastion_journal_blobs WHERE hash = ANY(%s)",
                        (wanted,),
                    )
                    if _one(cur) != len(set(wanted)):
                        raise _NotHeld
                if change is not None:
                    cur.execute("SELECT 1 FROM bastion_journal_changes WHERE id = %s", (change,))
                    if cur.fetchone() is None:
                        change = None  # taken back (its first store call failed) or pruned
                if change is None:
                    cur.execute(
                        "INSERT INTO bastion_journal_changes"
                        "(at, principal, tenant, thread, op, path, target)"
                        " VALUES (%s, %s, %s, %s, %s, %s, %s) RETURNING id",
                        (time.time(), *head),
                    )
                    change, seq = _one(cur), 0
                else:
                    cur.execute(
                        "SELECT COALESCE(MAX(seq) + 1, 0) FROM bastion_journal_entries"
                        " WHERE change_id = %s",
                        (change,),
                    )
                    seq = _one(cur)
                cur.executemany(
                    "INSERT INTO bastion_journal_entries VALUES"
                    " (%s, %s, %s, %s, %s, %s, %s, %s, %s)",
                    entry_rows(change, seq, entries),
                )
                self._since_prune += 1
                if self._since_prune >= _PRUNE_EVERY:
                    self._since_prune = 0
                    self._drop(cur)
            return change

        try:
            with self._lock:
                return self._call(work, "written")
        except _NotHeld:
            return None

    def forget(self, change: int, count: int) -> None:
        def work(pg: psycopg.Connection[Any]) -> None:
            with pg.transaction(), pg.cursor() as cur:
                cur.execute("SELECT pg_advisory_xact_lock(%s)", (_LOCK,))
                cur.execute(
                    "DELETE FROM bastion_journal_entries WHERE change_id = %s AND seq >="
                    " (SELECT COALESCE(MAX(seq), 0) + 1 - %s FROM bastion_journal_entries"
                    " WHERE change_id = %s)",
                    (change, count, change),
                )
                cur.execute(
                    "DELETE FROM bastion_journal_changes WHERE id = %s AND NOT EXISTS"
                    " (SELECT 1 FROM bastion_journal_entries WHERE change_id = %s)",
                    (change, change),
                )

        try:
            with self._lock:
                self._call(work, "written")
        except JournalError:  # the store call already failed; its error is what is raised
            pass

    def checkpoint(self, name: str, principal: str) -> Checkpoint:
        def work(pg: psycopg.Connection[Any]) -> Checkpoint:
            with pg.transaction(), pg.cursor() as cur:
                cur.execute("SELECT pg_advisory_xact_lock(%s)", (_LOCK,))
                cur.execute("SELECT COALESCE(MAX(id), 0) FROM bastion_journal_changes")
                cp = Checkpoint(name, _one(cur), time.time(), principal)
                cur.execute(
                    "INSERT INTO bastion_journal_checkpoints VALUES (%s, %s, %s, %s)"
                    " ON CONFLICT (name) DO UPDATE SET change_id = EXCLUDED.change_id,"
                    " at = EXCLUDED.at, principal = EXCLUDED.principal",
                    (cp.name, cp.change_id, cp.at, cp.principal),
                )
            return cp

        with self._lock:
            return self._call(work, "written")

    def prune(self) -> int:
        def work(pg: psycopg.Connection[Any]) -> int:
            with pg.transaction(), pg.cursor() as cur:
                cur.execute("SELECT pg_advisory_xact_lock(%s)", (_LOCK,))
                return self._drop(cur)

        with self._lock:
            return self._call(work, "written")

    def _drop(self, cur: psycopg.Cursor[Any]) -> int:
        dropped = 0
        if self.retention.max_age is not None:
            cur.execute(
                "DELETE FROM bastion_journal_changes WHERE at < %s",
                (time.time() - self.retention.max_age,),
            )
            dropped += cur.rowcount
        if dropped:
            _collect(cur)
        cap = self.retention.max_bytes
        if cap is not None:
            while _held_bytes(cur) > cap:
                cur.execute(
                    "DELETE FROM bastion_journal_changes WHERE id ="
                    " (SELECT MIN(id) FROM bastion_journal_changes)"
                )
                if cur.rowcount == 0:
                    break
                dropped += 1
                _collect(cur)
        return dropped

    # -- reading -----------------------------------------------------------------------------

    def _read(self, work: Callable[[psycopg.Connection[Any]], T]) -> T:
        with self._lock:
            return self._call(work, "read")

    def content(self, hash_: str) -> bytes:
        row = self._read(
            lambda pg: pg.execute(
                "SELECT data FROM bastion_journal_blobs WHERE hash = %s", (hash_,)
            ).fetchone()
        )
        if row is None:
            raise NotFoundError("that content is no longer in the change journal (retention)")
        return bytes(row[0])

    def changes(
        self,
        *,
        thread: str | None = None,
        since: float | None = None,
        after_id: int | None = None,
        before_id: int | None = None,
        principal: str | None = None,
        ids: Sequence[int] | None = None,
        limit: int | None = None,
        newest: bool = False,
    ) -> list[Change]:
        where, args = ["TRUE"], list[Any]()
        for clause, value in (
            ("thread = %s", thread),
            ("at >= %s", since),
            ("id > %s", after_id),
            ("id < %s", before_id),
            ("principal = %s", principal),
        ):
            if value is not None:
                where.append(clause)
                args.append(value)
        if ids is not None:
            where.append("id = ANY(%s)")
            args.append(list(ids))
        order = "DESC" if newest else "ASC"
        sql = (
            f"SELECT {_CHANGE_COLUMNS} FROM bastion_journal_changes"  # noqa: S608 (fixed clauses)
            f" WHERE {' AND '.join(where)} ORDER BY id {order} LIMIT %s"
        )

        def work(pg: psycopg.Connection[Any]) -> list[Change]:
            rows = sorted(pg.execute(sql, [*args, limit]).fetchall(), key=lambda r: r[0])
            found: dict[int, list[Entry]] = {r[0]: [] for r in rows}
            if found:
                for e in pg.execute(
                    f"SELECT {_ENTRY_COLUMNS} FROM bastion_journal_entries"  # noqa: S608
                    " WHERE change_id = ANY(%s) ORDER BY change_id, seq",
                    (list(found),),
                ):
                    found[e[0]].append(entry_of(e))
            return [
                Change(r[0], r[1], r[2], r[3], r[4], r[5], r[6], r[7], tuple(found[r[0]]))
                for r in rows
            ]

        return self._read(work)

    def labels_seen(
        self, paths: Iterable[str], hashes: Iterable[str]
    ) -> tuple[dict[str, set[str]], dict[str, set[str]]]:
        wanted_paths, wanted_hashes = list(paths), list(hashes)
        by_path: dict[str, set[str]] = {}
        by_hash: dict[str, set[str]] = {}
        sql = (
            "SELECT path, before_hash, before_labels, after_hash, after_labels"
            " FROM bastion_journal_entries WHERE path = ANY(%s)"
            " OR before_hash = ANY(%s) OR after_hash = ANY(%s)"
        )

        def work(pg: psycopg.Connection[Any]) -> None:
            rows = pg.execute(sql, (wanted_paths, wanted_hashes, wanted_hashes)).fetchall()
            for path, bh, bl, ah, al in rows:
                for h, lab in ((bh, bl), (ah, al)):
                    if lab is None:
                        continue
                    by_path.setdefault(path, set()).add(lab)
                    if h is not None:
                        by_hash.setdefault(h, set()).add(lab)

        self._read(work)
        return by_path, by_hash

    def checkpoint_named(self, name: str) -> Checkpoint:
        row = self._read(
            lambda pg: pg.execute(
                "SELECT name, change_id, at, principal FROM bastion_journal_checkpoints"
                " WHERE name = %s",
                (name,),
            ).fetchone()
        )
        if row is None:
            raise NotFoundError(f"no checkpoint named {name!r}; list them with checkpoints()")
        return Checkpoint(*row)

    def checkpoints(self) -> list[Checkpoint]:
        rows = self._read(
            lambda pg: pg.execute(
                "SELECT name, change_id, at, principal FROM bastion_journal_checkpoints"
                " ORDER BY change_id, at"
            ).fetchall()
        )
        return [Checkpoint(*r) for r in rows]

    def size(self) -> tuple[int, int, int]:
        row = self._read(
            lambda pg: pg.execute(
                "SELECT (SELECT COUNT(*) FROM bastion_journal_changes),"
                " (SELECT COUNT(*) FROM bastion_journal_entries),"
                " (SELECT COALESCE(SUM(size), 0) FROM bastion_journal_blobs)"
            ).fetchone()
        )
        assert row is not None
        return int(row[0]), int(row[1]), int(row[2])


def _one(cur: psycopg.Cursor[Any]) -> int:
    row = cur.fetchone()
    assert row is not None
    return int(row[0])


def _held_bytes(cur: psycopg.Cursor[Any]) -> int:
    cur.execute("SELECT COALESCE(SUM(size), 0) FROM bastion_journal_blobs")
    return _one(cur)


def _collect(cur: psycopg.Cursor[Any]) -> None:
    """Drop the contents no entry names any more."""
    cur.execute(
        "DELETE FROM bastion_journal_blobs b WHERE NOT EXISTS"
        " (SELECT 1 FROM bastion_journal_entries e WHERE e.before_hash = b.hash)"
        " AND NOT EXISTS (SELECT 1 FROM bastion_journal_entries e WHERE e.after_hash = b.hash)"
    )
