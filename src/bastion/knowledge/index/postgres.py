"""The shared index: chunks, labels, BM25 postings and vectors in PostgreSQL.

Many Bastion processes can share one index (one table of a database): every write is one
transaction, every search one snapshot, and what one process writes the others find at once.

* **Keywords**: an exact BM25 (Lucene's formula, the analyzer of the embedded index) computed in SQL
  over a ``terms`` table of per-chunk term frequencies, with the statistics of the chunks a filter
  admits (as in memory). On SciFact it ranks exactly like the embedded index, where PostgreSQL's
  ``ts_rank_cd`` ranks well below it (``docs/search.md``, ``docs/benchmarks.md``, "Figures out of
  the code"); ``keyword_scoring="ts_rank_cd"`` selects the latter. Unfiltered, a query over many
  postings is pruned exactly (MaxScore over the terms' counts the writes keep,
  :mod:`bastion.knowledge.index._pg_prune`).
* **Vectors**: pgvector, an HNSW index over inner products. An HNSW scan filters *after* the
  graph walk, so a restrictive filter can leave fewer than ``k`` rows; the search then runs
  again as an exact scan of the admitted chunks, and ``k`` results are ``k`` authorized ones.
* **Labels** are columns, so the access filter is a ``WHERE`` clause inside each ranked
  query. The filter's ``access`` callable (the guard's path policy) cannot be SQL: it is
  evaluated in Python once per distinct document labelling, cached per ``access_key`` and
  index generation, and sent as a list of admitted (or refused) labellings.

The index holds only what the files produce, so it can be dropped and rebuilt from them at
any time (:meth:`PostgresIndex.drop`).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager, nullcontext
from enum import StrEnum
from typing import Any

import numpy as np
import numpy.typing as npt
import psycopg
from psycopg import sql
from psycopg_pool import ConnectionPool, PoolTimeout

from bastion.core.errors import ConfigurationError, StoreError, StoreUnavailableError
from bastion.knowledge.index import _pg_query as q
from bastion.knowledge.index._pg_access import AccessCache
from bastion.knowledge.index._pg_prune import search as pruned_search
from bastion.knowledge.index._pg_schema import (
    FORMAT,
    REGISTRY,
    TableNames,
    create_or_check,
    drop_tables,
    lock_schema,
)
from bastion.knowledge.index._pg_write import (
    Removed,
    Row,
    bump,
    delete_rows,
    insert_rows,
    prepare_rows,
    refresh_documents,
)
from bastion.knowledge.index.analysis import Analyzer
from bastion.knowledge.index.bm25 import Statistics
from bastion.knowledge.index.models import DocumentMeta, IndexedChunk, IndexFilter, IndexHit
from bastion.knowledge.index.port import Index

__all__ = ["KeywordScoring", "PostgresIndex"]

_MAX_EF = 1000  # pgvector's bound on hnsw.ef_search
_EXACT_DOC_IDS = 1000  # a doc-id filter this small is searched exactly at once
_OVERFETCH = 4
"""Under a filter the graph walk gathers this many candidates per wanted hit: the smallest factor
that never ran short of ``k`` under a filter admitting half the chunks (``docs/benchmarks.md``,
"Figures out of the code")."""


class KeywordScoring(StrEnum):
    BM25 = "bm25"
    """Exact BM25 over the analyzer's terms (the embedded index's ranking)."""
    TS_RANK_CD = "ts_rank_cd"
    """PostgreSQL full-text search: ``english`` lexemes, cover-density ranking."""


class PostgresIndex(Index):
    """An index in table ``table`` of the database at ``dsn`` (created if missing).

    ``dim`` is the embedder's vector size (``None``: a keyword-only index, which keeps no
    vectors), ``embedder`` its name; opening a table built with another ``dim``, embedder or
    analyzer raises :class:`ConfigurationError`. Several indexes share a database under
    different table names (lower-case letters, digits and ``_``).

    ``pool_size`` connections at most; ``timeout`` seconds to wait for one before raising
    :class:`StoreUnavailableError`. ``ef_search`` is the HNSW candidate list of a search
    (raised to ``k``, four times ``k`` under a filter, when larger); ``hnsw_m`` and
    ``ef_construction`` shape the graph when the table is created.
    """

    kind = "postgres"

    def __init__(
        self,
        dsn: str,
        *,
        table: str = "chunks",
        dim: int | None = None,
        embedder: str | None = None,
        analyzer: Analyzer | None = None,
        k1: float = 1.5,
        b: float = 0.75,
        keyword_scoring: KeywordScoring | str = KeywordScoring.BM25,
        pool_size: int = 8,
        timeout: float = 10.0,
        ef_search: int = 100,
        hnsw_m: int = 16,
        ef_construction: int = 64,
    ) -> None:
        if dim is not None and not 0 < dim <= 16000:
            raise ConfigurationError(f"vector size {dim} is out of range (1 to 16000)")
        try:
            self.keyword_scoring = KeywordScoring(keyword_scoring)
        except ValueError:
            raise ConfigurationError(
                f"unknown keyword scoring {keyword_scoring!r}; choose bm25 or ts_rank_cd"
            ) from None
        self.names = TableNames(table)
        self.table = table
        self.dim = dim
        self._analyzer = analyzer or Analyzer()
        self._k1, self._b = k1, b
        self._ef_search = max(1, min(ef_search, _MAX_EF))
        self._access = AccessCache(self.names)
        wanted = {
            "format": FORMAT,
            "dim": dim,
            "embedder": embedder,
            "analyzer": self._analyzer.name,
        }
        with (
            _translated(self.table),
            psycopg.connect(dsn, connect_timeout=max(1, int(timeout))) as c,
        ):
            create_or_check(c, self.names, wanted, hnsw_m=hnsw_m, ef_construction=ef_construction)
        self._pool: ConnectionPool[psycopg.Connection[Any]] = ConnectionPool(
            dsn,
            min_size=1,
            max_size=max(1, pool_size),
            timeout=timeout,
            kwargs={"autocommit": True},
            configure=self._configure,
            name=f"bastion-index-{table}",
            open=True,
        )

    def _configure(self, conn: psycopg.Connection[Any]) -> None:
        # psycopg prepares a statement run five times; PostgreSQL would then switch to a
        # generic plan, blind to the query's terms and filter values, and the generic plan of
        # the BM25 query scans every posting (docs/benchmarks.md, "Figures out of the code").
        conn.execute("SET plan_cache_mode = force_custom_plan")
        if self.dim is not None:
            from pgvector.psycopg import register_vector

            register_vector(conn)
            conn.execute(sql.SQL("SET hnsw.ef_search = {}").format(sql.Literal(self._ef_search)))

    @classmethod
    def drop(cls, dsn: str, table: str = "chunks") -> bool:
        """Drop the index in ``table`` (to rebuild it, e.g. with another embedder); True when
        there was one. A table that is not a Bastion index is left alone."""
        names = TableNames(table)
        with (
            _translated(table),
            psycopg.connect(dsn) as conn,
            conn.transaction(),
            conn.cursor() as cur,
        ):
            lock_schema(cur)
            cur.execute("SELECT to_regclass(%s) IS NOT NULL", [names.registry.as_string()])
            found = cur.fetchone()
            if not (found and found[0]):
                return False
            cur.execute(sql.SQL("SELECT 1 FROM {} WHERE name = %s").format(names.registry), [table])
            if cur.fetchone() is None:
                return False
            return drop_tables(cur, names)

    @classmethod
    def tables(cls, dsn: str) -> list[str]:
        """The names of the indexes in the database at ``dsn`` (e.g. to reopen every table of
        a :class:`~bastion.knowledge.index.partitioned.PartitionedIndex`)."""
        registry = TableNames("chunks").registry
        with _translated(REGISTRY), psycopg.connect(dsn) as conn:
            found = conn.execute("SELECT to_regclass(%s) IS NOT NULL", [registry.as_string()])
            row = found.fetchone()
            if not (row and row[0]):
                return []
            names = conn.execute(sql.SQL("SELECT name FROM {} ORDER BY name").format(registry))
            return [str(r[0]) for r in names]

    def close(self) -> None:
        self._pool.close()

    # -- plumbing ----------------------------------------------------------------------------

    @contextmanager
    def _read(
        self, *, snapshot: bool = False, scoped: bool = False
    ) -> Iterator[psycopg.Cursor[Any]]:
        """A cursor for reading. Connections are in autocommit, so a lone statement costs one
        round trip; ``scoped`` opens a transaction (for ``SET LOCAL``-style settings), and
        ``snapshot`` a repeatable-read one, whose statements all see the same rows."""
        with _translated(self.table), self._pool.connection() as conn:
            scope = conn.transaction() if snapshot or scoped else nullcontext()
            with scope, conn.cursor(binary=True) as cur:
                if snapshot:
                    cur.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ, READ ONLY")
                yield cur

    @contextmanager
    def _write(self) -> Iterator[tuple[psycopg.Cursor[Any], int]]:
        """A write transaction holding this index's registry row (writers take turns), and
        the number of chunks when it began."""
        with (
            _translated(self.table),
            self._pool.connection() as conn,
            conn.transaction(),
            conn.cursor() as cur,
        ):
            cur.execute(
                sql.SQL("SELECT chunks FROM {} WHERE name = %s FOR UPDATE").format(
                    self.names.registry
                ),
                [self.table],
            )
            row = cur.fetchone()
            if row is None:
                raise StoreError(
                    f"the PostgreSQL index {self.table!r} was dropped; open it again to recreate it"
                )
            yield cur, int(row[0])

    # -- writes ------------------------------------------------------------------------------

    def upsert(self, chunks: Sequence[IndexedChunk]) -> None:
        rows = prepare_rows(chunks, dim=self.dim, analyzer=self._analyzer)
        if not rows:
            return
        with self._write() as (cur, before):
            gone = delete_rows(cur, self.names, "chunk_id", [r.chunk.chunk_id for r in rows])
            self._insert(cur, rows, before, gone)

    def replace_documents(self, doc_ids: Sequence[str], chunks: Sequence[IndexedChunk]) -> None:
        """One transaction: a search sees the old chunks or the new ones, never a gap."""
        rows = prepare_rows(chunks, dim=self.dim, analyzer=self._analyzer)
        ids = list(dict.fromkeys(doc_ids))
        if not rows and not ids:
            return
        with self._write() as (cur, before):
            gone = delete_rows(cur, self.names, "doc_id", ids)
            if rows:
                gone += delete_rows(cur, self.names, "chunk_id", [r.chunk.chunk_id for r in rows])
            self._insert(cur, rows, before, gone)

    def delete_documents(self, doc_ids: Iterable[str]) -> int:
        ids = list(dict.fromkeys(doc_ids))
        if not ids:
            return 0
        with self._write() as (cur, before):
            gone = delete_rows(cur, self.names, "doc_id", ids)
            if gone.chunks:
                self._insert(cur, [], before, gone)
        return gone.chunks

    def _insert(
        self, cur: psycopg.Cursor[Any], rows: list[Row], before: int, gone: Removed
    ) -> None:
        """The rest of a write, after ``gone`` was deleted from the ``before`` chunks: ``rows``
        (if any) copied in, the touched documents' lengths and every count brought up to
        date."""
        bulk = bool(rows) and insert_rows(
            cur, self.names, rows, dim=self.dim, present=before - gone.chunks
        )
        touched = gone.doc_ids | {r.chunk.doc.doc_id for r in rows}
        docs = refresh_documents(cur, self.names, touched, bulk=bulk)
        length = sum(r.length for r in rows) - gone.length
        bump(cur, self.names, len(rows) - gone.chunks, length, docs)

    def clear(self) -> None:
        with self._write() as (cur, _):
            cur.execute(
                sql.SQL("TRUNCATE {}, {}, {}, {}").format(
                    self.names.chunks, self.names.terms, self.names.docs, self.names.df
                )
            )
            cur.execute(
                sql.SQL(
                    "UPDATE {} SET chunks = 0, docs = 0, total_len = 0, "
                    "generation = generation + 1 WHERE name = %s"
                ).format(self.names.registry),
                [self.table],
            )

    # -- reads -------------------------------------------------------------------------------

    def documents(self) -> dict[str, DocumentMeta]:
        with self._read() as cur:
            cur.execute(
                sql.SQL(
                    "SELECT DISTINCT ON (c.doc_id) {} FROM {} c ORDER BY c.doc_id, c.rid DESC"
                ).format(q.columns(q.DOC_COLUMNS), self.names.chunks)
            )
            return {row[0]: q.meta_from_row(row) for row in cur}

    def chunks_of(self, doc_id: str) -> list[IndexedChunk]:
        vector = sql.SQL(", c.embedding") if self.dim is not None else sql.SQL(", NULL")
        with self._read() as cur:
            cur.execute(
                sql.SQL("SELECT {}{} FROM {} c WHERE c.doc_id = %s ORDER BY c.seq, c.rid").format(
                    q.columns(q.CHUNK_COLUMNS), vector, self.names.chunks
                ),
                [doc_id],
            )
            return [q.chunk_from_row(row[:-1], row[-1]) for row in cur]

    def count(self) -> int:
        with self._read() as cur:
            cur.execute(
                sql.SQL("SELECT chunks FROM {} WHERE name = %s").format(self.names.registry),
                [self.table],
            )
            row = cur.fetchone()
            return int(row[0]) if row else 0

    def search_keyword(
        self,
        query: str,
        k: int,
        flt: IndexFilter | None = None,
        *,
        statistics: Statistics | None = None,
    ) -> list[IndexHit]:
        if k <= 0:
            return []
        terms = list(dict.fromkeys(self._analyzer.analyze(query)))
        if not terms:
            return []
        bm25 = self.keyword_scoring is KeywordScoring.BM25
        prunable = bm25 and statistics is None and _unfiltered(flt)
        with self._read(snapshot=prunable or _needs_snapshot(flt)) as cur:
            where = self._where(cur, flt)
            if where.empty:
                return []
            params = {**where.params, "k": k}
            if prunable:
                params |= {"name": self.table, "terms": terms, "k1": self._k1, "b": self._b}
                rows = pruned_search(cur, self.names, params)
                return [IndexHit(q.chunk_from_row(row[:-1]), float(row[-1])) for row in rows]
            if bm25:
                statement = q.bm25_query(self.names, where, shared=statistics is not None)
                params |= {"name": self.table, "terms": terms, "k1": self._k1, "b": self._b}
                if statistics is not None:
                    total, docs, entries = (
                        statistics.length,
                        statistics.documents,
                        statistics.entries,
                    )
                    params |= {
                        "n": docs,
                        "avgdl": max(total / max(docs, 1), 1e-9),
                        "dfs": [statistics.df.get(t, 0) for t in terms],
                        "entries": entries,
                        "entry_avgdl": max(total / max(entries, 1), 1e-9),
                        "entry_dfs": [statistics.entry_df.get(t, 0) for t in terms],
                    }
            else:
                statement = q.fts_query(self.names, where)
                params["query"] = query
            cur.execute(statement, params)
            return [IndexHit(q.chunk_from_row(row[:-1]), float(row[-1])) for row in cur]

    def keyword_statistics(self, query: str, flt: IndexFilter | None = None) -> Statistics | None:
        """Document-level counts over the chunks ``flt`` admits (``None`` with ``ts_rank_cd``
        scoring, which has none to share)."""
        if self.keyword_scoring is not KeywordScoring.BM25:
            return None
        terms = list(dict.fromkeys(self._analyzer.analyze(query)))
        with self._read(snapshot=_needs_snapshot(flt)) as cur:
            where = self._where(cur, flt)
            none = dict.fromkeys(terms, 0)
            if where.empty:
                return Statistics(0, 0.0, none, 0, none)
            cur.execute(
                q.bm25_statistics_query(self.names, where),
                {**where.params, "terms": terms, "name": self.table},
            )
            row = cur.fetchone()
        if row is None:  # no registry row: the index was dropped under this instance
            raise StoreError(
                f"the PostgreSQL index {self.table!r} was dropped; open it again to recreate it"
            )
        df = none | {term: int(count) for term, count, _ in row[3]}
        entry_df = none | {term: int(count) for term, _, count in row[3]}
        return Statistics(int(row[0]), float(row[1]), df, int(row[2]), entry_df)

    def search_vector(
        self, vector: npt.NDArray[np.float32], k: int, flt: IndexFilter | None = None
    ) -> list[IndexHit]:
        if self.dim is None or k <= 0:
            return []
        query = np.asarray(vector, dtype=np.float32).reshape(-1)
        if query.size != self.dim:
            raise ValueError(f"a query vector of {query.size} dimensions in an index of {self.dim}")
        filtered = flt is not None and (flt != IndexFilter() or flt.access is not None)
        exact = k > _MAX_EF or (
            flt is not None and flt.doc_ids is not None and len(flt.doc_ids) <= _EXACT_DOC_IDS
        )
        ef = min(_MAX_EF, max(self._ef_search, _OVERFETCH * k if filtered else k))
        scoped = not exact and ef != self._ef_search
        with self._read(snapshot=_needs_snapshot(flt), scoped=scoped) as cur:
            where = self._where(cur, flt)
            if where.empty:
                return []
            params = {**where.params, "vector": query, "k": k}
            rows: list[Any] = []
            if not exact:
                if scoped:
                    cur.execute("SELECT set_config('hnsw.ef_search', %s, true)", [str(ef)])
                cur.execute(q.vector_query(self.names, where, exact=False), params)
                rows = cur.fetchall()
            if len(rows) < k:  # the graph walk ran short (a filter, dead rows): compare all
                cur.execute(q.vector_query(self.names, where, exact=True), params)
                rows = cur.fetchall()
        hits = [(row[0], IndexHit(q.chunk_from_row(row[:-1]), float(row[-1]))) for row in rows]
        hits.sort(key=lambda pair: (-pair[1].score, pair[0]))
        return [hit for _, hit in hits]

    # -- the filter --------------------------------------------------------------------------

    def _where(self, cur: psycopg.Cursor[Any], flt: IndexFilter | None) -> q.Where:
        """The filter as SQL, its ``access`` callable included (as labellings it admits)."""
        where = q.where(flt)
        if flt is not None and flt.access is not None and not where.empty:
            self._access.restrict(cur, flt, where)
        return where


@contextmanager
def _translated(table: str) -> Iterator[None]:
    """PostgreSQL's errors as Bastion's, one line, naming the index table only (never the
    DSN, which a connection error may quote)."""
    try:
        yield
    except (PoolTimeout, psycopg.OperationalError) as exc:
        raise StoreUnavailableError(
            f"the PostgreSQL index {table!r} is unavailable ({type(exc).__name__}); retry later"
        ) from exc
    except psycopg.Error as exc:
        raise StoreError(
            f"the PostgreSQL index {table!r} failed ({type(exc).__name__}); "
            "retry, or rebuild the index if it keeps failing"
        ) from exc


def _unfiltered(flt: IndexFilter | None) -> bool:
    """True when ``flt`` admits every chunk (its counts are the index's own)."""
    if flt is None:
        return True
    where = q.where(flt)
    return flt.access is None and not where.conditions and not where.empty


def _needs_snapshot(flt: IndexFilter | None) -> bool:
    """A filter with an access check reads the labellings and then searches: both statements
    must see the same rows, or a labelling written in between would pass unchecked."""
    return flt is not None and flt.access is not None
