"""The change journal's storage: one SQLite file that every process of a workspace opens.

Three tables. ``blobs`` holds each content once, by its SHA-256. ``changes`` holds one row per
operation that changed something (who, in which thread, what operation, when). ``entries``
holds what that operation did to each path: the state before and after (a file's content
hash, a folder, or nothing) and the labels the file had. ``checkpoints`` names a point in the
journal. A record is one transaction: it is written before the store is touched, so a journal
that cannot be written refuses the write (see :class:`JournalledStore`).

Retention (:class:`Retention`) drops the oldest changes by age and by the bytes the journal
holds, and the contents no change refers to any more; it runs every few records and on
:meth:`Journal.prune`.
"""

from __future__ import annotations

import hashlib
import json
import sqlite3
import threading
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bastion.core.errors import NotFoundError, StoreError
from bastion.core.models import Labels

__all__ = [
    "Change",
    "Checkpoint",
    "Entry",
    "Journal",
    "JournalError",
    "Retention",
    "State",
    "entry_of",
    "entry_rows",
    "labels_from_json",
    "labels_to_json",
]

_PRUNE_EVERY = 64
"""Records between two retention passes."""

_SCHEMA = """
CREATE TABLE IF NOT EXISTS blobs (hash TEXT PRIMARY KEY, size INTEGER NOT NULL, data BLOB NOT NULL);
CREATE TABLE IF NOT EXISTS changes (
    id INTEGER PRIMARY KEY AUTOINCREMENT, at REAL NOT NULL, principal TEXT NOT NULL,
    tenant TEXT, thread TEXT, op TEXT NOT NULL, path TEXT NOT NULL, target TEXT);
CREATE INDEX IF NOT EXISTS changes_thread ON changes(thread, id);
CREATE INDEX IF NOT EXISTS changes_at ON changes(at);
CREATE TABLE IF NOT EXISTS entries (
    change_id INTEGER NOT NULL REFERENCES changes(id) ON DELETE CASCADE,
    seq INTEGER NOT NULL, path TEXT NOT NULL,
    before_kind TEXT, before_hash TEXT, before_labels TEXT,
    after_kind TEXT, after_hash TEXT, after_labels TEXT,
    PRIMARY KEY (change_id, seq));
CREATE TABLE IF NOT EXISTS checkpoints (
    name TEXT PRIMARY KEY, change_id INTEGER NOT NULL, at REAL NOT NULL, principal TEXT NOT NULL);
"""


class JournalError(StoreError):
    """The change journal could not be written or read; nothing was changed."""

    code = "journal_unavailable"


@dataclass(frozen=True, slots=True)
class Retention:
    """How long, and how much, the journal keeps (``None``: no bound)."""

    max_age: float | None = 30 * 86400.0
    """Seconds a change is kept."""
    max_bytes: int | None = 1 << 30
    """Bytes of content the journal holds at most; the oldest changes go first."""


@dataclass(frozen=True, slots=True)
class State:
    """What was at a path: ``kind`` is ``"file"``, ``"dir"`` or ``None`` (nothing)."""

    kind: str | None = None
    hash: str | None = None
    labels: Labels | None = None

    @property
    def absent(self) -> bool:
        return self.kind is None


ABSENT = State()


@dataclass(frozen=True, slots=True)
class Entry:
    """What one change did to one path (a workspace path)."""

    path: str
    before: State
    after: State


@dataclass(frozen=True, slots=True)
class Change:
    """One operation that changed the workspace."""

    id: int
    at: float
    principal: str
    tenant: str | None
    thread: str | None
    op: str
    path: str
    target: str | None
    entries: tuple[Entry, ...]


@dataclass(frozen=True, slots=True)
class Checkpoint:
    """A named point in the journal: every change after ``change_id`` is after it."""

    name: str
    change_id: int
    at: float
    principal: str


def digest(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def labels_to_json(labels: Labels | None) -> str | None:
    if labels is None:
        return None
    return json.dumps(
        {
            "tenant": labels.tenant,
            "classification": labels.classification,
            "roles": sorted(labels.roles),
            "tags": sorted(labels.tags),
            "undetermined": labels.undetermined,
        },
        separators=(",", ":"),
    )


def labels_from_json(raw: str | None) -> Labels | None:
    if raw is None:
        return None
    d = json.loads(raw)
    return Labels(
        tenant=d["tenant"],
        classification=d["classification"],
        roles=frozenset(d["roles"]),
        tags=frozenset(d["tags"]),
        undetermined=d["undetermined"],
    )


class _NotHeld(Exception):
    """A content a record relies on is no longer in the journal (its transaction is undone)."""


class Journal:
    """The journal file at ``path`` (created when missing), shared by every process."""

    overlaps_commit = True
    """Whether a record is best started ahead, in a thread of its own, so that its commit
    overlaps the store's work (:mod:`~bastion.workspace.journal.gate`): yes, a durable
    record's commit flushes the write-ahead log (``synchronous = FULL``), as long as the
    store's own flush. A journal whose commits do not flush is best written at the store's
    commit point, in the store's thread (no hop at all)."""

    def __init__(self, path: str | Path, retention: Retention | None = None) -> None:
        self.path = Path(path)
        self.retention = retention or Retention()
        self._lock = threading.Lock()
        self._since_prune = 0
        self._sync = 1
        try:
            memory = str(path) == ":memory:"  # a journal of this process alone (tests)
            if not memory:
                self.path.parent.mkdir(parents=True, exist_ok=True)
            db = sqlite3.connect(
                ":memory:" if memory else self.path, timeout=30, check_same_thread=False
            )
            db.execute("PRAGMA journal_mode=WAL")
            db.execute("PRAGMA synchronous=NORMAL")
            db.execute("PRAGMA foreign_keys=ON")
            db.executescript(_SCHEMA)
        except (OSError, sqlite3.Error) as exc:
            raise JournalError(f"the change journal cannot be opened: {exc}") from None
        self._db = db

    def compact(self) -> None:
        """Fold the write-ahead log into the file and give free pages back to the disk."""
        with self._lock:
            self._db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
            self._db.execute("VACUUM")

    def close(self) -> None:
        with self._lock:
            self._db.close()

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
        """Add ``entries`` (and the ``contents`` they name) to ``change``, or to a new change
        described by ``head`` (principal, tenant, thread, op, path, target); its id. ``held``:
        hashes of contents the entries name that the caller did not send, since the journal
        holds them (what the caller wrote there last); ``None``, and nothing recorded, when
        one of them is no longer held (retention dropped it): the caller sends it then.
        ``durable``: the commit is flushed to disk before it returns (a change to a store that
        outlives the process); otherwise it survives the process, not the machine."""
        try:
            with self._lock:
                self._synchronous(2 if durable else 1)
                return self._record(change, head, entries, contents, held)
        except _NotHeld:
            return None
        except sqlite3.Error as exc:
            raise JournalError(
                f"the change journal cannot be written ({exc}); nothing was changed"
            ) from None

    def _synchronous(self, level: int) -> None:
        """``PRAGMA synchronous`` (1 NORMAL, 2 FULL) for the next transactions."""
        if self._sync != level:
            self._db.execute(f"PRAGMA synchronous={level}")
            self._sync = level

    def _record(
        self,
        change: int | None,
        head: tuple[str, str | None, str | None, str, str, str | None],
        entries: Sequence[tuple[str, State, State]],
        contents: Iterable[tuple[str, bytes]],
        held: Iterable[str],
    ) -> int:
        with self._db:
            db = self._db
            db.executemany(  # the first write: from here no other process prunes
                "INSERT OR IGNORE INTO blobs(hash, size, data) VALUES (?, ?, ?)",
                [(h, len(data), data) for h, data in contents],
            )
            for hash_ in held:
                if not db.execute("SELECT 1 FROM blobs WHERE hash = ?", (hash_,)).fetchone():
                    raise _NotHeld
            if (
                change is not None
                and not db.execute("SELECT 1 FROM changes WHERE id = ?", (change,)).fetchone()
            ):
                change = None  # taken back (its first store call failed) or pruned
            if change is None:
                cur = db.execute(
                    "INSERT INTO changes(at, principal, tenant, thread, op, path, target)"
                    " VALUES (?, ?, ?, ?, ?, ?, ?)",
                    (time.time(), *head),
                )
                change = int(cur.lastrowid or 0)
                seq = 0
            else:
                row = db.execute(
                    "SELECT COALESCE(MAX(seq) + 1, 0) FROM entries WHERE change_id = ?",
                    (change,),
                ).fetchone()
                seq = int(row[0])
            db.executemany(
                "INSERT INTO entries VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
                entry_rows(change, seq, entries),
            )
            self._since_prune += 1
            if self._since_prune >= _PRUNE_EVERY:
                self._since_prune = 0
                self._prune(db)
        return change

    def forget(self, change: int, count: int) -> None:
        """Take back the last ``count`` entries of ``change`` (their store call failed); the
        change goes with them when it has no entries left."""
        try:
            with self._lock, self._db:
                self._db.execute(
                    "DELETE FROM entries WHERE change_id = ? AND seq >= "
                    "(SELECT COALESCE(MAX(seq), 0) + 1 - ? FROM entries WHERE change_id = ?)",
                    (change, count, change),
                )
                self._db.execute(
                    "DELETE FROM changes WHERE id = ? AND NOT EXISTS "
                    "(SELECT 1 FROM entries WHERE change_id = ?)",
                    (change, change),
                )
        except sqlite3.Error:  # the store call already failed; its error is what is raised
            pass

    def checkpoint(self, name: str, principal: str) -> Checkpoint:
        try:
            with self._lock, self._db:
                row = self._db.execute("SELECT COALESCE(MAX(id), 0) FROM changes").fetchone()
                cp = Checkpoint(name, int(row[0]), time.time(), principal)
                self._db.execute(
                    "INSERT OR REPLACE INTO checkpoints VALUES (?, ?, ?, ?)",
                    (cp.name, cp.change_id, cp.at, cp.principal),
                )
        except sqlite3.Error as exc:
            raise JournalError(f"the checkpoint cannot be written: {exc}") from None
        return cp

    def prune(self) -> int:
        """Apply the retention now; the number of changes dropped."""
        with self._lock, self._db:
            return self._prune(self._db)

    def _prune(self, db: sqlite3.Connection) -> int:
        dropped = 0
        if self.retention.max_age is not None:
            cur = db.execute(
                "DELETE FROM changes WHERE at < ?", (time.time() - self.retention.max_age,)
            )
            dropped += cur.rowcount
        cap = self.retention.max_bytes
        if dropped:
            _collect(db)
        if cap is not None:
            total = int(db.execute("SELECT COALESCE(SUM(size), 0) FROM blobs").fetchone()[0])
            while total > cap:
                row = db.execute("SELECT MIN(id) FROM changes").fetchone()
                if row[0] is None:
                    break
                db.execute("DELETE FROM changes WHERE id = ?", (row[0],))
                dropped += 1
                _collect(db)
                total = int(db.execute("SELECT COALESCE(SUM(size), 0) FROM blobs").fetchone()[0])
        return dropped

    # -- reading -----------------------------------------------------------------------------

    def content(self, hash_: str) -> bytes:
        with self._lock:
            row = self._db.execute("SELECT data FROM blobs WHERE hash = ?", (hash_,)).fetchone()
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
        """Changes, oldest first, narrowed by each filter given: the first ``limit`` of them,
        or with ``newest`` the last ``limit``."""
        where, args = ["1=1"], []
        for clause, value in (
            ("thread = ?", thread),
            ("at >= ?", since),
            ("id > ?", after_id),
            ("id < ?", before_id),
            ("principal = ?", principal),
        ):
            if value is not None:
                where.append(clause)
                args.append(value)
        if ids is not None:
            where.append(f"id IN ({','.join('?' * len(ids))})")
            args.extend(ids)
        order = "DESC" if newest else "ASC"
        sql = f"SELECT * FROM changes WHERE {' AND '.join(where)} ORDER BY id {order} LIMIT ?"  # noqa: S608 (fixed clauses)
        with self._lock:
            rows = self._db.execute(sql, [*args, -1 if limit is None else limit]).fetchall()
            rows.sort(key=lambda r: r[0])
            found: dict[int, list[Entry]] = {r[0]: [] for r in rows}
            wanted = list(found)
            for i in range(0, len(wanted), 500):
                part = wanted[i : i + 500]
                query = (
                    "SELECT change_id, path, before_kind, before_hash, before_labels,"  # noqa: S608
                    " after_kind, after_hash, after_labels FROM entries WHERE change_id IN"
                    f" ({','.join('?' * len(part))}) ORDER BY change_id, seq"
                )
                for e in self._db.execute(query, part):
                    found[e[0]].append(entry_of(e))
        return [
            Change(r[0], r[1], r[2], r[3], r[4], r[5], r[6], r[7], tuple(found[r[0]])) for r in rows
        ]

    def labels_seen(
        self, paths: Iterable[str], hashes: Iterable[str]
    ) -> tuple[dict[str, set[str]], dict[str, set[str]]]:
        """Every label set the journal recorded for each of ``paths`` and each of the contents
        ``hashes`` (as JSON): a content or a path once labelled stays that hard to read."""
        by_path: dict[str, set[str]] = {}
        by_hash: dict[str, set[str]] = {}
        sql = (
            "SELECT path, before_hash, before_labels, after_hash, after_labels FROM entries"
            " WHERE {column} IN ({marks})"
        )
        with self._lock:
            for column, wanted in (("path", list(paths)), ("before_hash", list(hashes))):
                columns = [column] if column == "path" else ["before_hash", "after_hash"]
                for col in columns:
                    for i in range(0, len(wanted), 500):
                        part = wanted[i : i + 500]
                        query = sql.format(column=col, marks=",".join("?" * len(part)))
                        for path, bh, bl, ah, al in self._db.execute(query, part):
                            for h, lab in ((bh, bl), (ah, al)):
                                if lab is not None:
                                    by_path.setdefault(path, set()).add(lab)
                                    if h is not None:
                                        by_hash.setdefault(h, set()).add(lab)
        return by_path, by_hash

    def checkpoint_named(self, name: str) -> Checkpoint:
        with self._lock:
            row = self._db.execute("SELECT * FROM checkpoints WHERE name = ?", (name,)).fetchone()
        if row is None:
            raise NotFoundError(f"no checkpoint named {name!r}; list them with checkpoints()")
        return Checkpoint(*row)

    def checkpoints(self) -> list[Checkpoint]:
        with self._lock:
            rows = self._db.execute("SELECT * FROM checkpoints ORDER BY change_id, at").fetchall()
        return [Checkpoint(*r) for r in rows]

    def size(self) -> tuple[int, int, int]:
        """(changes, entries, content bytes) held now."""
        with self._lock:
            c = self._db.execute("SELECT COUNT(*) FROM changes").fetchone()[0]
            e = self._db.execute("SELECT COUNT(*) FROM entries").fetchone()[0]
            b = self._db.execute("SELECT COALESCE(SUM(size), 0) FROM blobs").fetchone()[0]
        return int(c), int(e), int(b)


def _collect(db: sqlite3.Connection) -> None:
    """Drop the contents no entry names any more."""
    db.execute(
        "DELETE FROM blobs WHERE hash NOT IN (SELECT before_hash FROM entries WHERE before_hash"
        " IS NOT NULL UNION SELECT after_hash FROM entries WHERE after_hash IS NOT NULL)"
    )


def entry_rows(
    change: int, seq: int, entries: Sequence[tuple[str, State, State]]
) -> list[tuple[object, ...]]:
    """The ``entries`` rows of one change, numbered from ``seq``: what both journals insert
    (path, then the kind, hash and labels before and after)."""
    return [
        (
            change,
            seq + i,
            path,
            b.kind,
            b.hash,
            labels_to_json(b.labels),
            a.kind,
            a.hash,
            labels_to_json(a.labels),
        )
        for i, (path, b, a) in enumerate(entries)
    ]


def entry_of(row: Sequence[Any]) -> Entry:
    """The entry a row of ``entries`` holds (change id, path, then the kind, hash and labels
    before and after): what both journals read back."""
    return Entry(
        row[1],
        State(row[2], row[3], labels_from_json(row[4])),
        State(row[5], row[6], labels_from_json(row[7])),
    )
