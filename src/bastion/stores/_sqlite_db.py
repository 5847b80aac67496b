"""The database under :class:`~bastion.stores.sqlite.SqliteStore`: schema, connections and
transactions.

Schema (version 1, recorded in ``PRAGMA user_version``; ``PRAGMA application_id`` marks the
file as Bastion's so that an unrelated database is refused rather than written into):

* ``inodes(id, kind, size, mtime, version, chunk_size, labels)``: one row per file or
  directory; the root directory is inode 1. ``labels`` is JSON or NULL (the mount's defaults).
* ``dentries(parent, name, inode)``: the tree; ``(parent, name)`` is the key, names are stored
  as :class:`~bastion.core.paths.VPath` gives them (NFC).
* ``chunks(inode, idx, data)``: file content in fixed-size pieces (the file's ``chunk_size``),
  so a range read selects only the pieces that cover it and an append rewrites only the tail.
* ``meta(key, value)``: the last version number handed out.

Transactions. Every call is one transaction: reads in a deferred one (one snapshot for every
statement, so a reader sees the old or the new content, never a mix), writes in ``BEGIN
IMMEDIATE`` (the database's write lock is taken before anything is read, so the
expected-version check and the write are atomic against every writer, in any process).
The file is in WAL mode with ``synchronous=FULL``: readers never wait for writers, and a
committed write survives a crash of the process or of the machine.

Threads and processes. ``sqlite3`` blocks, so the store runs each call in a worker thread; a
connection serves one thread at a time, taken from a small pool and given back. Writers of
one database object queue on a process-local lock before ``BEGIN IMMEDIATE``, so that they
hand over at once instead of polling SQLite's busy handler; writers in other processes wait
on SQLite's own lock for up to ``busy_timeout``. A transaction that still meets a busy
database is retried a bounded number of times, then fails with
:class:`~bastion.core.errors.StoreUnavailableError`.
"""

from __future__ import annotations

import os
import sqlite3
import threading
import time
import weakref
from collections.abc import Callable
from contextlib import suppress
from pathlib import Path
from typing import TypeVar

from bastion.core.errors import ConfigurationError, StoreError, StoreUnavailableError

__all__ = ["APPLICATION_ID", "ROOT_ID", "SCHEMA_VERSION", "Database"]

SCHEMA_VERSION = 1
APPLICATION_ID = 0x42535451  # "BSTQ": a Bastion SQLite store
ROOT_ID = 1

_ATTEMPTS = 3
_MAX_IDLE = 8
_JOURNAL_LIMIT = 64 << 20

_SCHEMA = """
CREATE TABLE inodes (
    id INTEGER PRIMARY KEY,
    kind TEXT NOT NULL CHECK (kind IN ('file', 'directory')),
    size INTEGER NOT NULL DEFAULT 0,
    mtime REAL NOT NULL,
    version TEXT,
    chunk_size INTEGER NOT NULL DEFAULT 0,
    labels TEXT
);
CREATE TABLE dentries (
    parent INTEGER NOT NULL REFERENCES inodes (id),
    name TEXT NOT NULL,
    inode INTEGER NOT NULL UNIQUE REFERENCES inodes (id),
    PRIMARY KEY (parent, name)
) WITHOUT ROWID;
CREATE TABLE chunks (
    inode INTEGER NOT NULL REFERENCES inodes (id),
    idx INTEGER NOT NULL,
    data BLOB NOT NULL,
    PRIMARY KEY (inode, idx)
);
CREATE TABLE meta (
    key TEXT PRIMARY KEY,
    value
);
"""

_BUSY_CODES = frozenset({5, 6})  # SQLITE_BUSY, SQLITE_LOCKED (primary codes)
_DAMAGED_CODES = frozenset({11, 26})  # SQLITE_CORRUPT, SQLITE_NOTADB

T = TypeVar("T")
Work = Callable[[sqlite3.Connection], T]


def _code(exc: sqlite3.Error) -> int:
    """The primary result code of a sqlite3 error (extended codes carry it in the low byte)."""
    return int(getattr(exc, "sqlite_errorcode", 1) or 1) & 0xFF


def _is_busy(exc: sqlite3.Error) -> bool:
    return _code(exc) in _BUSY_CODES


def _busy(what: str) -> StoreUnavailableError:
    return StoreUnavailableError(
        f"{what}: the SQLite store stayed locked by another writer; retry shortly",
        path=what,
    )


def translate(exc: sqlite3.Error, what: str) -> StoreError:
    """A one-line, agent-safe :class:`StoreError` for a sqlite3 failure on ``what``."""
    code = _code(exc)
    if code in _BUSY_CODES:
        return _busy(what)
    if code in _DAMAGED_CODES:
        return StoreError(path=what, reason="the SQLite store's file is damaged; ask an operator")
    if code == 13:  # SQLITE_FULL
        return StoreError(
            path=what, reason="no space left on the disk of this mount; free space and retry"
        )
    if code == 8:  # SQLITE_READONLY
        return StoreError(
            f"{what}: the SQLite store's file is read-only; "
            "writes need it writable (ask an operator)",
            path=what,
        )
    name = getattr(exc, "sqlite_errorname", None) or type(exc).__name__
    return StoreError(path=what, reason=f"the SQLite store failed ({name}); retry")


def _close_all(idle: list[sqlite3.Connection]) -> None:
    while idle:
        idle.pop().close()


class Database:
    """One SQLite file: a pool of connections and the transaction runner (see the module doc)."""

    def __init__(self, path: str | os.PathLike[str], *, busy_timeout: float, create: bool) -> None:
        shown = os.fspath(path)
        target = Path(path).absolute()
        if not create and not target.is_file():
            raise ConfigurationError(
                f"SQLite store {shown!r} does not exist; create it or pass create=True"
            ).needing("create", True)
        mode = "rwc" if create else "rw"
        self._uri = f"{target.as_uri()}?mode={mode}"
        self._timeout = busy_timeout
        self._idle: list[sqlite3.Connection] = []
        self._pool_lock = threading.Lock()
        self._write_lock = threading.Lock()
        self._closed = False
        self._finalizer = weakref.finalize(self, _close_all, self._idle)
        try:
            conn = self._connect()
        except sqlite3.Error as exc:
            raise _open_error(exc, shown) from exc
        try:
            _initialize(conn, shown)
        except BaseException:
            conn.close()
            raise
        self._idle.append(conn)

    # -- pool --------------------------------------------------------------------------------

    def _connect(self) -> sqlite3.Connection:
        conn = sqlite3.connect(
            self._uri,
            uri=True,
            timeout=self._timeout,
            isolation_level=None,  # autocommit: the runner issues BEGIN / COMMIT itself
            check_same_thread=False,  # a pooled connection moves between worker threads
        )
        try:
            conn.execute("PRAGMA synchronous = FULL")
            conn.execute(f"PRAGMA journal_size_limit = {_JOURNAL_LIMIT}")
        except BaseException:
            conn.close()
            raise
        return conn

    def _acquire(self, what: str) -> sqlite3.Connection:
        with self._pool_lock:
            if self._closed:
                raise StoreError(path=what, reason="the SQLite store is closed")
            if self._idle:
                return self._idle.pop()
        return self._connect()

    def _release(self, conn: sqlite3.Connection, *, healthy: bool) -> None:
        with self._pool_lock:
            if healthy and not self._closed and len(self._idle) < _MAX_IDLE:
                self._idle.append(conn)
                return
        conn.close()

    def close(self) -> None:
        """Close the pooled connections; calls still running close theirs when they end."""
        with self._pool_lock:
            self._closed = True
        self._finalizer()

    # -- transactions ------------------------------------------------------------------------

    def read(self, work: Work[T], what: str) -> T:
        """Run ``work`` in one read transaction (one snapshot); ``what`` names it in errors."""
        return self._run(work, what, write=False)

    def write(self, work: Work[T], what: str) -> T:
        """Run ``work`` in one write transaction, committed only if it returns."""
        return self._run(work, what, write=True)

    def _run(self, work: Work[T], what: str, *, write: bool) -> T:
        for attempt in range(1, _ATTEMPTS + 1):
            try:
                return self._once(work, what, write=write)
            except sqlite3.Error as exc:
                if _is_busy(exc) and attempt < _ATTEMPTS:
                    time.sleep(0.01 * attempt)
                    continue
                raise translate(exc, what) from exc
        raise AssertionError("unreachable")  # pragma: no cover

    def _once(self, work: Work[T], what: str, *, write: bool) -> T:
        conn = self._acquire(what)
        healthy = False
        try:
            if not write:
                result = _transaction(conn, "BEGIN", work)
            else:
                if not self._write_lock.acquire(timeout=max(self._timeout, 0.001) * _ATTEMPTS):
                    raise _busy(what)
                try:
                    result = _transaction(conn, "BEGIN IMMEDIATE", work)
                finally:
                    self._write_lock.release()
            healthy = True
            return result
        except sqlite3.Error as exc:
            healthy = _is_busy(exc)  # a busy connection is fine; any other failure: drop it
            raise
        except Exception:
            healthy = not conn.in_transaction
            raise
        finally:
            self._release(conn, healthy=healthy)


def _transaction(conn: sqlite3.Connection, begin: str, work: Work[T]) -> T:
    conn.execute(begin)
    try:
        result = work(conn)
        conn.execute("COMMIT")
    except BaseException:
        if conn.in_transaction:
            # on failure the caller drops the connection, and SQLite rolls back on close
            with suppress(sqlite3.Error):
                conn.execute("ROLLBACK")
        raise
    return result


def _initialize(conn: sqlite3.Connection, shown: str) -> None:
    """Switch the file to WAL and check (or create, when empty) the schema."""
    try:
        mode = str(conn.execute("PRAGMA journal_mode = WAL").fetchone()[0]).lower()
        if mode != "wal":
            raise ConfigurationError(
                f"SQLite store {shown!r} cannot use write-ahead logging (journal mode {mode}); "
                "put it on a local filesystem"
            )
        if _schema_state(conn, shown) == 0:
            conn.execute("BEGIN IMMEDIATE")
            try:
                if _schema_state(conn, shown) == 0:  # nobody else created it meanwhile
                    _create_schema(conn)
                conn.execute("COMMIT")
            except BaseException:
                if conn.in_transaction:
                    conn.execute("ROLLBACK")
                raise
    except sqlite3.Error as exc:
        raise _open_error(exc, shown) from exc


def _open_error(exc: sqlite3.Error, shown: str) -> StoreError | ConfigurationError:
    """What a failure to open the file means to the developer who configured it."""
    if _is_busy(exc):
        return StoreUnavailableError(
            f"SQLite store {shown!r} stayed locked by another process; retry shortly"
        )
    if _code(exc) in _DAMAGED_CODES:
        return ConfigurationError(
            f"SQLite store {shown!r} is damaged or not a database ({exc}); "
            "restore it from a backup or use a new file"
        )
    return ConfigurationError(
        f"cannot open the SQLite store {shown!r} ({exc}); check the path and its folder"
    )


def _schema_state(conn: sqlite3.Connection, shown: str) -> int:
    """The schema version of the file, 0 for an empty file; raises for anything else."""
    app = int(conn.execute("PRAGMA application_id").fetchone()[0])
    version = int(conn.execute("PRAGMA user_version").fetchone()[0])
    if app == 0 and version == 0:
        tables = conn.execute("SELECT count(*) FROM sqlite_master").fetchone()[0]
        if tables:
            raise ConfigurationError(
                f"SQLite store {shown!r} is another application's database; use a new file"
            )
        return 0
    if app != APPLICATION_ID:
        raise ConfigurationError(
            f"SQLite store {shown!r} is another application's database; use a new file"
        )
    if version > SCHEMA_VERSION:
        raise ConfigurationError(
            f"SQLite store {shown!r} has schema version {version}, newer than this Bastion "
            f"({SCHEMA_VERSION}); upgrade Bastion"
        )
    if version < 1:
        raise ConfigurationError(f"SQLite store {shown!r} has no schema version; use a new file")
    return version


def _create_schema(conn: sqlite3.Connection) -> None:
    for statement in _SCHEMA.split(";"):
        if statement.strip():
            conn.execute(statement)
    conn.execute(
        "INSERT INTO inodes (id, kind, size, mtime) VALUES (?, 'directory', 0, ?)",
        (ROOT_ID, time.time()),
    )
    conn.execute("INSERT INTO meta (key, value) VALUES ('last_version', 0)")
    conn.execute(f"PRAGMA application_id = {APPLICATION_ID}")
    conn.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")
