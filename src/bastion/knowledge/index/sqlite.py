"""The core's persistent index: one SQLite file, searched through an in-memory mirror.

The light install (no extra) keeps its index here: SQLite is in the standard library. The
file holds every chunk with its labels (and its vector, for an index built with an
embedder); every upsert and delete is one SQLite transaction, written before the mirror
takes it in, so a process killed mid-write leaves a document at its old version or its new
one. Searches run on the :class:`MemoryIndex` mirror loaded at open (the same BM25 and dot
product as the memory index: the same scores, the same ranking).

Several processes may share the file. Each write also appends the ids of the documents it
touched to a ``changes`` table in the same transaction; :meth:`SQLiteIndex.refresh` asks
SQLite whether another connection committed since (``PRAGMA data_version``, no read of
the file) and, when one did, reloads only the documents named by the changes it has not
seen. A ``clear`` (or changes pruned before a process saw them) reloads everything.
"""

from __future__ import annotations

import json
import os
import sqlite3
import threading
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np

from bastion.core.errors import ConfigurationError, StoreError
from bastion.knowledge.embedders.base import same_space
from bastion.knowledge.index.analysis import Analyzer
from bastion.knowledge.index.memory import MemoryIndex
from bastion.knowledge.index.models import DocumentMeta, IndexedChunk

__all__ = ["FILE_NAME", "SQLiteIndex"]

FILE_NAME = "index.sqlite"
"""The file :meth:`Knowledge.open` keeps this index in, inside its folder."""

_FORMAT = 1
_KEEP_CHANGES = 10_000
"""Changes kept for other processes to catch up with; older ones are pruned (a process that
fell further behind reloads everything)."""
_COLUMNS = (
    "chunk_id, doc_id, path, seq, text, start_line, end_line, section, title, date, tenant, "
    "classification, roles, tags, version, vector"
)
_SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS chunks (
    chunk_id TEXT PRIMARY KEY, doc_id TEXT NOT NULL, path TEXT NOT NULL, seq INTEGER NOT NULL,
    text TEXT NOT NULL, start_line INTEGER NOT NULL, end_line INTEGER NOT NULL,
    section TEXT NOT NULL, title TEXT, date TEXT, tenant TEXT, classification TEXT NOT NULL,
    roles TEXT NOT NULL, tags TEXT NOT NULL, version TEXT, vector BLOB
);
CREATE INDEX IF NOT EXISTS chunks_doc ON chunks (doc_id, seq);
CREATE TABLE IF NOT EXISTS changes (seq INTEGER PRIMARY KEY AUTOINCREMENT, doc_id TEXT);
"""


class SQLiteIndex(MemoryIndex):
    """A persistent index in the SQLite file ``path`` (created with its folder if missing).

    ``dim`` is the embedder's vector size (``None`` for a keyword-only index); ``embedder``
    its name. Opening a file built with another embedder or analyzer raises
    :class:`ConfigurationError`: rebuild it (``bastion reindex --rebuild``).
    """

    kind = "sqlite"

    def __init__(
        self,
        path: str | os.PathLike[str],
        *,
        dim: int | None = None,
        embedder: str | None = None,
        analyzer: Analyzer | None = None,
    ) -> None:
        super().__init__(analyzer=analyzer)
        self.path = Path(path)
        self.dim = dim
        self._db_lock = threading.RLock()
        self._seen = 0
        """The last change (``changes.seq``) the mirror took in."""
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self._db = sqlite3.connect(
                self.path, timeout=30.0, isolation_level=None, check_same_thread=False
            )
        except (OSError, sqlite3.Error) as exc:
            raise self._failed("open", exc) from exc
        try:
            self._db.execute("PRAGMA journal_mode=WAL")
            with self._writing(catch_up=False):
                for statement in _SCHEMA.split(";"):
                    if statement.strip():
                        self._db.execute(statement)
                self._check_meta(embedder)
            self._load_all()
        except sqlite3.Error as exc:
            self._db.close()
            raise self._failed("open", exc) from exc
        except BaseException:
            self._db.close()
            raise
        self._version = self._data_version()

    # -- the file ----------------------------------------------------------------------------

    def _check_meta(self, embedder: str | None) -> None:
        wanted: dict[str, Any] = {
            "format": _FORMAT,
            "dim": self.dim,
            "embedder": embedder,
            "analyzer": self._analyzer.name,
        }
        row = self._db.execute("SELECT value FROM meta WHERE key = 'built'").fetchone()
        if row is None:
            self._db.execute("INSERT INTO meta VALUES ('built', ?)", (json.dumps(wanted),))
            return
        found = json.loads(row[0])
        if same_space(found.get("embedder"), embedder):
            wanted["embedder"] = found.get("embedder")
        if found != wanted:
            diff = ", ".join(
                f"{k}: {found.get(k)!r} != {v!r}" for k, v in wanted.items() if found.get(k) != v
            )
            raise ConfigurationError(
                f"the index in {self.path.parent.name} was built differently ({diff}); "
                "rebuild it with `bastion reindex --rebuild` or use another folder"
            )

    def _data_version(self) -> int:
        with self._db_lock:
            return int(self._db.execute("PRAGMA data_version").fetchone()[0])

    @contextmanager
    def _writing(self, *, catch_up: bool = True) -> Iterator[None]:
        """One write transaction (SQLite's write lock held across processes), after taking in
        what others wrote since the mirror last looked, so the mirror stays in step."""
        with self._db_lock:
            try:
                self._db.execute("BEGIN IMMEDIATE")
            except sqlite3.Error as exc:
                raise self._failed("write", exc) from exc
            try:
                if catch_up:
                    self._catch_up()
                yield
                self._db.execute("COMMIT")
            except sqlite3.Error as exc:
                self._db.execute("ROLLBACK")
                raise self._failed("write", exc) from exc
            except BaseException:
                self._db.execute("ROLLBACK")
                raise
            self._version = self._data_version()

    def _failed(self, action: str, exc: BaseException) -> StoreError:
        """SQLite's error as one line naming the index folder and the error's type only."""
        reason = getattr(exc, "strerror", None) or type(exc).__name__
        return StoreError(
            f"index {action} failed in {self.path.parent.name} ({reason}); check the folder's "
            "disk and permissions, or rebuild the index if it keeps failing"
        )

    # -- loading and catching up -------------------------------------------------------------

    def _rows(self, where: str = "", args: Sequence[object] = ()) -> list[IndexedChunk]:
        cursor = self._db.execute(
            f"SELECT {_COLUMNS} FROM chunks {where} ORDER BY doc_id, seq",  # noqa: S608
            tuple(args),
        )
        shared: dict[tuple[object, ...], DocumentMeta] = {}
        return [self._chunk(row, shared) for row in cursor]

    def _chunk(self, row: Sequence[Any], shared: dict[tuple[object, ...], DocumentMeta]) -> Any:
        (chunk_id, doc_id, path, seq, text, start, end, section) = row[:8]
        key = (doc_id, path, *row[8:15])
        doc = shared.get(key)
        if doc is None:
            title, date, tenant, classification, roles, tags, version = row[8:15]
            doc = shared[key] = DocumentMeta(
                doc_id=doc_id,
                path=path,
                title=title,
                date=date,
                tenant=tenant,
                classification=classification,
                roles=frozenset(json.loads(roles)),
                tags=frozenset(json.loads(tags)),
                version=version,
            )
        vector = None if row[15] is None else np.frombuffer(row[15], dtype=np.float32).copy()
        return IndexedChunk(
            chunk_id=chunk_id,
            doc=doc,
            seq=seq,
            text=text,
            start_line=start,
            end_line=end,
            section=section,
            vector=vector,
        )

    def _last_change(self) -> tuple[int, int]:
        low, high = self._db.execute("SELECT min(seq), max(seq) FROM changes").fetchone()
        return int(low or 0), int(high or 0)

    def _load_all(self) -> None:
        with self._db_lock:
            self._seen = self._last_change()[1]
            chunks = self._rows()
            with self._lock:
                MemoryIndex.clear(self)
                if chunks:
                    MemoryIndex.upsert(self, chunks)
                    self._settle()

    def _catch_up(self) -> bool:
        """Take in the changes other processes committed since :attr:`_seen`; True when any."""
        low, high = self._last_change()
        if high <= self._seen:
            return False
        names = [
            row[0]
            for row in self._db.execute(
                "SELECT doc_id FROM changes WHERE seq > ? ORDER BY seq", (self._seen,)
            )
        ]
        if low > self._seen + 1 or None in names:  # pruned before this process saw them, or a clear
            self._load_all()
            return True
        ids = list(dict.fromkeys(n for n in names if n is not None))
        fresh: list[IndexedChunk] = []
        for lo in range(0, len(ids), 500):
            part = ids[lo : lo + 500]
            fresh += self._rows(f"WHERE doc_id IN ({', '.join('?' * len(part))})", part)
        with self._lock:
            MemoryIndex.delete_documents(self, ids)
            if fresh:
                MemoryIndex.upsert(self, fresh)
        self._seen = high
        return True

    def refresh(self) -> bool:
        """Take in what other processes wrote (see the module doc); cheap when nothing."""
        with self._db_lock:
            if self._data_version() == self._version:
                return False
            try:
                self._db.execute("BEGIN")
                try:
                    changed = self._catch_up()
                finally:
                    self._db.execute("COMMIT")
            except sqlite3.Error as exc:
                raise self._failed("refresh", exc) from exc
            self._version = self._data_version()
            return changed

    # -- writes ------------------------------------------------------------------------------

    def _record(self, doc_ids: Iterable[str | None]) -> None:
        self._db.executemany("INSERT INTO changes (doc_id) VALUES (?)", [(d,) for d in doc_ids])
        low, self._seen = self._last_change()
        if self._seen - low > 2 * _KEEP_CHANGES:
            self._db.execute("DELETE FROM changes WHERE seq <= ?", (self._seen - _KEEP_CHANGES,))

    def _prepare(self, chunks: Sequence[IndexedChunk]) -> list[IndexedChunk]:
        """One chunk per id (the last wins); no vectors in a keyword-only index; the vector
        sizes checked before anything is written."""
        unique = list({c.chunk_id: c for c in chunks}.values())
        if self.dim is None:
            unique = [c if c.vector is None else replace(c, vector=None) for c in unique]
        for chunk in unique:
            size = None if chunk.vector is None else np.asarray(chunk.vector).size
            if size is not None and size != self.dim:
                raise ValueError(
                    f"chunk {chunk.chunk_id} has a vector of {size} dimensions in an index "
                    f"of {self.dim}"
                )
        self._check_vectors(unique)
        return unique

    def _store(self, chunks: Sequence[IndexedChunk]) -> list[str]:
        """Write ``chunks`` (replacing by id); the documents touched, old owners included."""
        ids = [c.chunk_id for c in chunks]
        touched: list[str] = []
        for lo in range(0, len(ids), 500):
            part = ids[lo : lo + 500]
            touched += [
                row[0]
                for row in self._db.execute(
                    f"SELECT DISTINCT doc_id FROM chunks WHERE chunk_id IN ({', '.join('?' * len(part))})",  # noqa: E501, S608
                    part,
                )
            ]
        self._db.executemany(
            f"INSERT OR REPLACE INTO chunks ({_COLUMNS}) VALUES ({', '.join('?' * 16)})",  # noqa: S608
            [_row(c, self.dim) for c in chunks],
        )
        return [*touched, *(c.doc.doc_id for c in chunks)]

    def _delete(self, doc_ids: Sequence[str]) -> None:
        for lo in range(0, len(doc_ids), 500):
            part = doc_ids[lo : lo + 500]
            self._db.execute(
                f"DELETE FROM chunks WHERE doc_id IN ({', '.join('?' * len(part))})",  # noqa: S608
                part,
            )

    def upsert(self, chunks: Sequence[IndexedChunk]) -> None:
        chunks = self._prepare(chunks)
        if not chunks:
            return
        with self._writing():
            touched = self._store(chunks)
            self._record(dict.fromkeys(touched))
            MemoryIndex.upsert(self, chunks)

    def delete_documents(self, doc_ids: Iterable[str]) -> int:
        ids = list(dict.fromkeys(doc_ids))
        if not ids:
            return 0
        with self._writing():
            self._delete(ids)
            self._record(ids)
            return MemoryIndex.delete_documents(self, ids)

    def replace_documents(self, doc_ids: Sequence[str], chunks: Sequence[IndexedChunk]) -> None:
        """One transaction: the old chunks of ``doc_ids`` go, the new ones come; the mirror
        swaps them under its lock (a search sees one or the other, never a gap)."""
        chunks = self._prepare(chunks)
        ids = list(dict.fromkeys(doc_ids))
        with self._writing():
            self._delete(ids)
            touched = self._store(chunks)
            self._record(dict.fromkeys([*ids, *touched]))
            with self._lock:
                MemoryIndex.delete_documents(self, ids)
                MemoryIndex.upsert(self, chunks)

    def clear(self) -> None:
        with self._writing():
            self._db.execute("DELETE FROM chunks")
            self._record([None])
            MemoryIndex.clear(self)

    def close(self) -> None:
        with self._db_lock:
            self._db.close()


def _row(chunk: IndexedChunk, dim: int | None) -> tuple[object, ...]:
    doc = chunk.doc
    vector = None
    if dim is not None:
        if chunk.vector is None:
            raise ValueError(f"chunk {chunk.chunk_id} has no vector for a vector index")
        vector = np.asarray(chunk.vector, dtype=np.float32).reshape(-1).tobytes()
    return (
        chunk.chunk_id,
        doc.doc_id,
        doc.path,
        chunk.seq,
        chunk.text,
        chunk.start_line,
        chunk.end_line,
        chunk.section,
        doc.title,
        doc.date,
        doc.tenant,
        doc.classification,
        json.dumps(sorted(doc.roles)),
        json.dumps(sorted(doc.tags)),
        doc.version,
        vector,
    )
