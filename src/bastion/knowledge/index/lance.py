"""The embedded default index: LanceDB in a local folder, searched through an in-memory mirror.

LanceDB holds the chunks, their labels and vectors on disk (columnar, versioned, safe against
a crash mid-write); every upsert and delete goes to it first. Searches run on the
:class:`MemoryIndex` mirror loaded at open: on SciFact LanceDB's own full-text and flat vector
searches were an order of magnitude slower than the in-memory BM25 and dot product, for no
better ranking (``docs/benchmarks.md``, "Figures out of the code"; ``docs/decisions/``).

The mirror keeps no chunk texts (a third of what it held at 100,000 documents): a slot keeps
the hash of its text and the row id LanceDB gave its row, and a search fetches the texts of
the hits it returns from the table, with one ``take`` by row id; rows whose id the mirror does
not know (written by this process since the open) or that moved (a compaction rewrites rows)
are found by ``chunk_id`` instead, through a B-tree index on it, and their row ids learned. A
text whose hash differs from the scored one (another process replaced the chunk since this
mirror took it in) or that is gone leaves its hit out of the results: the text shown is always
the text that was scored, under the labels it was scored with.

Several processes may share a folder. Writes take an ``flock`` on ``bastion-writes.lock`` in
the folder (the kernel releases it when a process dies, even by ``kill -9``) and bump the
write counter kept in that file; :meth:`LanceIndex.refresh` reads the counter (one ``pread``)
and, when another process moved it, brings the mirror in step with the table by comparing
each document's version, labels and chunk ids and loading only the documents that differ.
The workspace refreshes before every search, so a write that returned in one process is
found by the next search in any other.

Each write is one LanceDB commit (a document's replacement is one merge that also deletes its
old chunks), so a process killed inside a write leaves the document whole at its old version
or its new one. A writer killed after its commit but before it bumped the counter is still
noticed by the next writer, which finds the table at a version its mirror never saw. Every
:data:`_COMPACT_EVERY` writes (by any process) the writer holding the lock compacts the table
and drops old versions. ``tests/knowledge/test_lance_writers.py`` and
``bench/lance_writers.py`` (4 processes x 1,000 writes) check all of this.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import threading
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import replace
from datetime import timedelta
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa  # type: ignore[import-untyped]  # no py.typed marker
import pyarrow.compute as pc  # type: ignore[import-untyped]

from bastion.core.errors import ConfigurationError, StoreError
from bastion.knowledge.embedders.base import same_space
from bastion.knowledge.index.analysis import Analyzer
from bastion.knowledge.index.hybrid import deferred
from bastion.knowledge.index.lance_rows import from_arrow, malloc_trim, schema, slices
from bastion.knowledge.index.memory import MemoryIndex, TextRef
from bastion.knowledge.index.models import IndexedChunk

__all__ = ["LanceIndex"]

_TABLE = "chunks"
_META = "bastion-index.json"
_LOCK = "bastion-writes.lock"
_SYNC_COLUMNS = ["chunk_id", "doc_id", "version", "tenant", "classification", "roles", "tags"]
_BATCH = 500
_TEXT = ["chunk_id", "text"]
"""What a fetch of texts reads (with the row id)."""
_KEEP_TEXTS = 50_000
"""Chunks up to which an opened index keeps their texts in its mirror (by default): below,
a search returns its hits' texts from memory; above, it fetches them from the table (a few
milliseconds more a search) and the mirror stays small (``docs/benchmarks.md``, "At scale")."""
_LOAD = 20_000
"""Rows read and converted to chunks at a time when an index opens (whole documents: a
slice ends at a document's last chunk)."""
_REINDEX = 20_000
"""Rows a process writes before it builds the ``chunk_id`` index again (rows the index does
not hold are scanned by each fetch of texts; a rebuild is cheap next to that)."""
_TRIM_EVERY = 64
"""Fetches of texts between two returns of the C heap's free pages to the system: a fetch allocates
in LanceDB's threads, whose freed memory glibc keeps and never reuses for anything else;
``malloc_trim`` is cheap next to a fetch (``docs/benchmarks.md``, "Figures out of the code")."""
_FORMAT = 1
_COMPACT_EVERY = 100
"""Writes (by all processes, counted in the lock file) between two compactions."""
_KEEP = timedelta(minutes=1)
"""Old table versions younger than this survive a compaction (a process may be reading one)."""


class LanceIndex(MemoryIndex):
    """A persistent index in ``folder`` (created if missing).

    ``dim`` is the embedder's vector size (``None`` for a keyword-only index); ``embedder`` its
    name. Opening a folder built with another embedder or analyzer raises
    :class:`ConfigurationError`: rebuild it (``bastion index --rebuild``).

    ``keep_texts``: whether the in-memory mirror holds the chunks' texts (``True``) or only
    their hashes, a search fetching its hits' texts from the table (``False``). ``None``
    (default) decides when the index opens: kept for a table of up to :data:`_KEEP_TEXTS`
    chunks. The choice holds until the index is opened again: a process that grows a small
    index past that size keeps its texts until then.
    """

    kind = "lancedb"

    def __init__(
        self,
        folder: str | os.PathLike[str],
        *,
        dim: int | None,
        embedder: str | None = None,
        analyzer: Analyzer | None = None,
        keep_texts: bool | None = None,
    ) -> None:
        super().__init__(analyzer=analyzer)
        import lancedb

        self.keeps_texts = bool(keep_texts)

        self.folder = Path(folder)
        self.dim = dim
        self._write_lock = threading.RLock()
        try:
            self.folder.mkdir(parents=True, exist_ok=True)
            self._lock_fd = os.open(
                self.folder / _LOCK, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644
            )
        except OSError as exc:
            raise StoreError(
                f"cannot open the index in {self.folder.name} ({exc.strerror}); check the "
                "folder's disk and permissions"
            ) from exc
        self._seen = -1
        """The write counter this mirror is in step with."""
        self._version = -1
        """The table version this mirror is in step with (a writer killed after its commit
        never bumped the counter: the version still tells)."""
        self._indexed = False
        """The table has its index on ``chunk_id`` (the texts of hits are fetched through it)."""
        self._unindexed = 0
        """Rows this process wrote since it last built that index."""
        self._fetches = 0
        """Fetches of texts so far (see :data:`_TRIM_EVERY`)."""
        try:
            with self._flocked():
                self._check_meta(embedder)
                self._db = lancedb.connect(str(self.folder))
                self._seen = self._counter()
                if _TABLE in self._db.list_tables().tables:
                    self._table = self._db.open_table(_TABLE)
                    if keep_texts is None:
                        self.keeps_texts = self._table.count_rows() <= _KEEP_TEXTS
                    self._load()
                else:
                    self.keeps_texts = keep_texts is not False
                    self._table = self._db.create_table(_TABLE, schema=schema(dim))
                    self._version = self._table.version
        except OSError as exc:
            os.close(self._lock_fd)
            raise StoreError(
                f"cannot open the index in {self.folder.name} ({exc.strerror}); check the "
                "folder's disk and permissions"
            ) from exc
        except BaseException:
            os.close(self._lock_fd)
            raise
        if not self.keeps_texts and not self._indexed and self.count():
            with self._writing():  # a folder written before the index existed: made once
                pass

    def _check_meta(self, embedder: str | None) -> None:
        path = self.folder / _META
        wanted = {
            "format": _FORMAT,
            "dim": self.dim,
            "embedder": embedder,
            "analyzer": self._analyzer.name,
        }
        if path.exists():
            found = json.loads(path.read_text(encoding="utf-8"))
            built_with = found.get("embedder")
            if same_space(built_with, embedder):
                wanted["embedder"] = built_with  # the model in another number format: one space
            if found != wanted:
                diff = ", ".join(
                    f"{k}: {found.get(k)!r} != {v!r}"
                    for k, v in wanted.items()
                    if found.get(k) != v
                )
                raise ConfigurationError(
                    f"the index in {self.folder.name} was built differently ({diff}); "
                    "rebuild it with `bastion index --rebuild` or use another folder"
                )
            return
        tmp = path.with_suffix(".tmp")
        tmp.write_text(json.dumps(wanted), encoding="utf-8")
        tmp.replace(path)

    def _load(self) -> None:
        """The table into the mirror, in document order, whole documents :data:`_LOAD` rows
        at a time: the keys first (ids and row ids), then each slice's rows by row id. The
        table is never read whole (a ``to_arrow()`` of it held every text and vector at once,
        and LanceDB kept much of it after); vectors go straight from Arrow's buffer, and
        nothing large is made in Arrow's own memory pool (which keeps what it frees)."""
        malloc_trim()  # glibc's mmap threshold pinned before the load's arrays are made
        self._version = self._table.version
        keys = self._table.search().select(["doc_id", "seq"]).with_row_id(True).limit(None)
        keys = keys.to_arrow()
        order = pc.sort_indices(keys, sort_keys=[("doc_id", "ascending"), ("seq", "ascending")])
        rowids = keys.column("_rowid").take(order).to_numpy()
        doc_ids = keys.column("doc_id").take(order)
        del keys
        shared: dict[object, Any] = {}
        columns = schema(self.dim).names  # the table's own columns, the vector's with them
        for lo, hi in slices(doc_ids, _LOAD):
            part = self._table.take_row_ids(rowids[lo:hi].tolist()).select(columns)
            part = part.with_row_id().to_arrow()
            got = part.column("_rowid").to_numpy()
            if len(got) != hi - lo:
                raise StoreError(
                    f"the index in {self.folder.name} changed while it was read; open it again"
                )
            sorter = np.argsort(got)  # LanceDB answers in row id order: back to document order
            back = sorter[np.searchsorted(got, rowids[lo:hi], sorter=sorter)]
            chunks = from_arrow(part.drop_columns(["_rowid"]), shared, back)
            if lo == 0:
                self._reserve(len(rowids), chunks)  # the vector matrix made once, to size
            self._put(chunks, rowids[lo:hi].astype(np.int64).tolist())
        self._settle()
        self._indexed = any(i.columns == ["chunk_id"] for i in self._table.list_indices())
        _give_back()  # the pages of what the slices freed (~60 MB at 100k)

    # -- sharing the folder between processes ------------------------------------------------

    @contextlib.contextmanager
    def _flocked(self) -> Iterator[None]:
        """This process's writers one at a time (thread lock), and one process at a time
        (``flock``, released by the kernel if the process dies)."""
        with self._write_lock:
            fcntl.flock(self._lock_fd, fcntl.LOCK_EX)
            try:
                yield
            finally:
                fcntl.flock(self._lock_fd, fcntl.LOCK_UN)

    def _counter(self) -> int:
        """The folder's write counter (a torn or empty read counts as -2: it only costs a
        refresh)."""
        raw = os.pread(self._lock_fd, 32, 0)
        try:
            return int(raw.strip() or b"0")
        except ValueError:
            return -2

    @contextlib.contextmanager
    def _writing(self) -> Iterator[None]:
        """One write to the table: under the lock, against the table's latest version, and
        counted (whatever happened to it) so that other processes refresh."""
        with self._flocked():
            before = self._counter()
            self._latest()
            in_step = before == self._seen and self._table.version == self._version
            done = False
            try:
                yield
                done = True
                if (max(before, 0) + 1) % _COMPACT_EVERY == 0:
                    self._compact_table()
                if not self.keeps_texts and (not self._indexed or self._unindexed >= _REINDEX):
                    self._index_ids()
            finally:
                after = max(before, 0) + 1
                try:
                    os.pwrite(self._lock_fd, f"{after:020d}\n".encode(), 0)
                except OSError as exc:  # other processes would not notice: say so
                    raise self._failed("write", exc) from exc
                if in_step and done:  # the mirror took the same change: still in step
                    self._seen = after
                    self._version = self._table.version

    def _index_ids(self) -> None:
        """The B-tree index on ``chunk_id`` that fetching the texts of hits goes through,
        made once (by the first write of a process that finds none). Rows written after it
        are searched without it until the next compaction folds them in. Best effort: the
        fetch is right without it, only slower. Only a mirror that fetches texts builds and
        keeps it up: one that keeps them would make its open a write (which every other
        process then notices) for an index it never reads."""
        from lancedb.index import BTree

        with contextlib.suppress(Exception):
            have = any(i.columns == ["chunk_id"] for i in self._table.list_indices())
            if not have or self._unindexed >= _REINDEX:
                if self._table.count_rows() == 0:
                    return
                self._table.create_index("chunk_id", config=BTree(), replace=True)
            self._indexed = True
            self._unindexed = 0

    def _with_texts(
        self, chunks: Sequence[IndexedChunk], refs: Sequence[TextRef]
    ) -> list[IndexedChunk | None]:
        """:meth:`fetch_texts`, unless a hybrid search defers the fetch to its fused hits
        (:func:`~bastion.knowledge.index.hybrid.deferring`): then the chunks as they are, and
        where their texts are told to it."""
        later = deferred()
        if later is None:
            return self.fetch_texts(chunks, refs)
        later.hold(self, chunks, refs)
        return list(chunks)

    def fetch_texts(
        self, chunks: Sequence[IndexedChunk], refs: Sequence[TextRef]
    ) -> list[IndexedChunk | None]:
        """The chunks with their texts from the table: by row id where the mirror knows it
        (one ``take``), else, or when the row moved (a compaction, a rewrite), by
        ``chunk_id`` (a query through the B-tree index), learning the row id. A text that is
        gone or whose hash is not the one indexed (the chunk was written again since the
        mirror took it in) gives ``None``."""
        self._fetches += 1  # a lost count under threads only moves the next trim
        if self._fetches % _TRIM_EVERY == 0:
            _give_back()
        texts: dict[int, str] = {}
        located = [ref for ref in refs if ref.location >= 0]
        if located:
            rowids = [r.location for r in located]
            found = self._read(lambda t: t.take_row_ids(rowids).select(_TEXT).with_row_id())
            at = dict(
                zip(found.column("_rowid").to_pylist(), found["text"].to_pylist(), strict=True)
            )
            for ref in located:
                text = at.get(ref.location)
                if text is not None and hash(text) == ref.digest:
                    texts[ref.slot] = text
        missing = [
            (chunk, ref) for chunk, ref in zip(chunks, refs, strict=True) if ref.slot not in texts
        ]
        if missing:
            by_id: dict[str, list[tuple[str, int]]] = {}
            ids = list(dict.fromkeys(chunk.chunk_id for chunk, _ in missing))
            for lo in range(0, len(ids), _BATCH):
                where = _is_in("chunk_id", ids[lo : lo + _BATCH])
                found = self._read(
                    lambda t, w=where: t.search().where(w).select(_TEXT).with_row_id(True)
                )
                for chunk_id, text, rowid in zip(
                    found["chunk_id"].to_pylist(),
                    found["text"].to_pylist(),
                    found["_rowid"].to_pylist(),
                    strict=True,
                ):
                    by_id.setdefault(chunk_id, []).append((text, rowid))
            for chunk, ref in missing:
                for text, rowid in by_id.get(chunk.chunk_id, ()):
                    if hash(text) == ref.digest:
                        texts[ref.slot] = text
                        self._learn(ref, rowid)
                        break
        return [
            None if (text := texts.get(ref.slot)) is None else replace(chunk, text=text)
            for chunk, ref in zip(chunks, refs, strict=True)
        ]

    def _read(self, query: Any) -> pa.Table:
        """``query(table).to_arrow()``; once more against the table's latest version if the
        one this process read was removed (a compaction by another process)."""
        for attempt in (1, 2):
            try:
                found: pa.Table = query(self._table).to_arrow()
                return found
            except Exception as exc:  # LanceDB raises plain exceptions
                if attempt == 2:
                    raise self._failed("search", exc) from exc
                self._latest()
        raise AssertionError("unreachable")

    def _latest(self) -> None:
        try:
            self._table.checkout_latest()  # type: ignore[no-untyped-call]
        except Exception:  # noqa: BLE001 (LanceDB's plain errors) dropped and made again elsewhere
            self._table = self._db.open_table(_TABLE)

    def refresh(self) -> bool:
        """Bring the mirror in step with what other processes wrote (see the module doc)."""
        if self._counter() == self._seen:
            return False
        with self._write_lock:
            counter = self._counter()  # read before looking: a later write is seen next time
            if counter == self._seen:
                return False
            try:
                version, changed = self._synced()
            except Exception:  # noqa: BLE001 a compaction may have removed the version read
                try:
                    version, changed = self._synced()
                except Exception as exc:  # LanceDB raises plain exceptions
                    raise self._failed("refresh", exc) from exc
            self._seen = counter
            self._version = version
            return changed

    def _synced(self) -> tuple[int, bool]:
        """The table's latest version, and whether the mirror changed to match it."""
        self._latest()
        version: int = self._table.version
        return version, self._sync()

    def _sync(self) -> bool:
        """Load the documents whose rows differ from the mirror's; drop those that went."""
        rows = self._table.search().select(_SYNC_COLUMNS).limit(None).to_arrow().to_pylist()
        stored: dict[str, tuple[object, ...]] = {}
        chunk_ids: dict[str, set[str]] = {}
        for row in rows:
            doc_id = row["doc_id"]
            chunk_ids.setdefault(doc_id, set()).add(row["chunk_id"])
            stored[doc_id] = _doc_key(
                row["version"], row["tenant"], row["classification"], row["roles"], row["tags"]
            )
        with self._lock:
            mine = self.documents()
            differ = [
                doc_id
                for doc_id, key in stored.items()
                if (meta := mine.get(doc_id)) is None
                or _doc_key(meta.version, meta.tenant, meta.classification, meta.roles, meta.tags)
                != key
                or self._chunk_ids(doc_id) != chunk_ids[doc_id]
            ]
            gone = [doc_id for doc_id in mine if doc_id not in stored]
        fresh: list[tuple[IndexedChunk, int]] = []
        for lo in range(0, len(differ), _BATCH):
            where = _is_in("doc_id", differ[lo : lo + _BATCH])
            found = self._table.search().where(where).with_row_id(True).limit(None).to_arrow()
            rowids = found.column("_rowid").to_pylist()
            fresh += zip(from_arrow(found.drop_columns(["_rowid"])), rowids, strict=True)
        fresh.sort(key=lambda pair: (pair[0].doc.doc_id, pair[0].seq))
        if not differ and not gone:
            return False
        with self._lock:
            MemoryIndex.delete_documents(self, [*differ, *gone])
            self._put([c for c, _ in fresh], [r for _, r in fresh])
        return True

    # -- writes ------------------------------------------------------------------------------

    def upsert(self, chunks: Sequence[IndexedChunk]) -> None:
        chunks = self._prepare(chunks)
        if not chunks:
            return
        table = self._arrow(chunks)
        with self._writing():
            self._merge_rows(table)
            self._unindexed += len(chunks)
            super().upsert(chunks)

    def delete_documents(self, doc_ids: Iterable[str]) -> int:
        ids = list(dict.fromkeys(doc_ids))
        if not ids:
            return 0
        with self._writing():
            self._delete_rows(_is_in("doc_id", ids))
            return super().delete_documents(ids)

    def replace_documents(self, doc_ids: Sequence[str], chunks: Sequence[IndexedChunk]) -> None:
        """One LanceDB commit: a merge of the new chunks that also deletes the stored chunks of
        ``doc_ids`` it did not match (a process killed mid-write leaves the old version or the
        new one, never old chunks next to new ones); the mirror then swaps old for new under
        its lock, so a search sees one or the other, never a gap. What went is asked of the
        table, not of the mirror: another process may have written these documents since."""
        chunks = self._prepare(chunks)
        table = self._arrow(chunks) if chunks else None  # refuses bad chunks before any write
        ids = list(dict.fromkeys(doc_ids))
        with self._writing():
            if table is not None:
                self._merge_rows(table, _is_in("doc_id", ids) if ids else None)
                self._unindexed += len(chunks)
            elif ids:
                self._delete_rows(_is_in("doc_id", ids))
            with self._lock:
                MemoryIndex.delete_documents(self, ids)
                MemoryIndex.upsert(self, chunks)

    def _prepare(self, chunks: Sequence[IndexedChunk]) -> list[IndexedChunk]:
        """One chunk per id, the last one winning as in the mirror (LanceDB's merge would
        insert both rows of a new id, and refuses a batch matching a stored row twice); no
        vectors in a keyword-only index, which stores none (so it searches alike after a
        reopen)."""
        unique = list({c.chunk_id: c for c in chunks}.values())
        if self.dim is None:
            unique = [c if c.vector is None else replace(c, vector=None) for c in unique]
        return unique

    def _arrow(self, chunks: Sequence[IndexedChunk]) -> pa.Table:
        return pa.Table.from_pylist([self._row(c) for c in chunks], schema=schema(self.dim))

    def _merge_rows(self, table: pa.Table, replacing: str | None = None) -> None:
        """Insert or update ``table``'s rows by chunk id; with ``replacing`` (a filter), also
        delete the stored rows it selects that no new row matched. One commit either way."""
        try:
            merge = (
                self._table.merge_insert("chunk_id")
                .when_matched_update_all()
                .when_not_matched_insert_all()
            )
            if replacing is not None:
                merge = merge.when_not_matched_by_source_delete(replacing)
            merge.execute(table)
        except Exception as exc:  # LanceDB raises plain exceptions
            raise self._failed("write", exc) from exc

    def _delete_rows(self, where: str) -> None:
        try:
            self._table.delete(where)
        except Exception as exc:  # LanceDB raises plain exceptions
            raise self._failed("delete", exc) from exc

    def _failed(self, action: str, exc: Exception) -> StoreError:
        """LanceDB's error as one line naming the index folder and the error's type only (its
        text may quote the rows or the filter)."""
        return StoreError(
            f"index {action} failed in {self.folder.name} ({type(exc).__name__}); retry, or "
            "rebuild the index if it keeps failing"
        )

    def clear(self) -> None:
        with self._writing():
            self._db.drop_table(_TABLE)
            self._table = self._db.create_table(_TABLE, schema=schema(self.dim))
            self._indexed = False
            super().clear()

    def close(self) -> None:
        with self._write_lock:
            if self._lock_fd >= 0:
                os.close(self._lock_fd)
                self._lock_fd = -1

    def _compact_table(self) -> None:
        """Every write adds a LanceDB version and a fragment: merge the fragments into few and
        drop the versions older than :data:`_KEEP` (left alone, 4,000 writes kept 4,041
        versions and 88 MB on disk for 1 MB of rows). Under the write lock, so no writer
        races it; a reader that loses the version it was reading reads again
        (:meth:`refresh`). Best effort: a failure leaves the table as it was."""
        with contextlib.suppress(Exception):
            self._table.optimize(cleanup_older_than=_KEEP)  # indexes take in the new rows too
            self._unindexed = 0

    def _row(self, chunk: IndexedChunk) -> dict[str, Any]:
        doc = chunk.doc
        row: dict[str, Any] = {
            "chunk_id": chunk.chunk_id,
            "doc_id": doc.doc_id,
            "path": doc.path,
            "seq": chunk.seq,
            "text": chunk.text,
            "start_line": chunk.start_line,
            "end_line": chunk.end_line,
            "section": chunk.section,
            "title": doc.title,
            "date": doc.date,
            "tenant": doc.tenant,
            "classification": doc.classification,
            "roles": sorted(doc.roles),
            "tags": sorted(doc.tags),
            "version": doc.version,
        }
        if self.dim is not None:
            if chunk.vector is None:
                raise ValueError(f"chunk {chunk.chunk_id} has no vector for a vector index")
            row["vector"] = np.asarray(chunk.vector, dtype=np.float32).tolist()
        return row


def _give_back() -> None:
    """Free memory back to the system: the C heap's free pages (glibc only) and Arrow's
    pool's."""
    trim = malloc_trim()
    if trim is not None:
        trim(0)
    pa.default_memory_pool().release_unused()


def _is_in(column: str, values: Sequence[str]) -> str:
    """``column IN (...)`` with the values quoted SQL style."""
    quoted = ", ".join("'" + v.replace("'", "''") + "'" for v in values)
    return f"{column} IN ({quoted})"


def _doc_key(
    version: str | None,
    tenant: str | None,
    classification: str,
    roles: Iterable[str],
    tags: Iterable[str],
) -> tuple[object, ...]:
    """What tells one indexing of a document from another (same version, same chunks)."""
    return (version, tenant, classification, frozenset(roles), frozenset(tags))
