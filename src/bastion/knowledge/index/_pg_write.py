"""Writes of the PostgreSQL index: chunks prepared before the transaction, deleted with their
postings, copied in (binary ``COPY``), and the collection statistics kept exact: the chunk
count and total length from what a write removes and adds, the lengths of the documents it
touches summed again from their chunks, the document count from how many of those were
there before and are after, and each term's counts (``$df``) from the postings a write
removes and adds, a document counted when it gains its first posting of the term and
uncounted when it loses its last. Writers of one index hold its registry row, so no two
writes count at once.

Each chunk gets a fresh ``rid`` from the table's sequence on every write, so the highest
``rid`` of a document is its latest write (what :meth:`Index.documents` reports).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace
from typing import Any

import numpy as np
import psycopg
from psycopg import sql

from bastion.knowledge.index._pg_query import meta_key
from bastion.knowledge.index._pg_schema import TableNames, drop_terms_indexes, terms_indexes
from bastion.knowledge.index.analysis import Analyzer
from bastion.knowledge.index.models import IndexedChunk, source_of
from bastion.knowledge.index.passages import own_texts

__all__ = [
    "BULK",
    "Removed",
    "Row",
    "bump",
    "delete_rows",
    "insert_rows",
    "prepare_rows",
    "refresh_documents",
]

BULK = 1000
"""A batch of this many vectors, and at least as many as stay in the table, rebuilds the
HNSW graph instead of inserting into it."""

_COLUMNS = (
    ("rid", "int8"),
    ("chunk_id", "text"),
    ("doc_id", "text"),
    ("path", "text"),
    ("source", "text"),
    ("seq", "int4"),
    ("text", "text"),
    ("start_line", "int4"),
    ("end_line", "int4"),
    ("section", "text"),
    ("title", "text"),
    ("date", "text"),
    ("tenant", "text"),
    ("classification", "text"),
    ("roles", "text[]"),
    ("tags", "text[]"),
    ("version", "text"),
    ("meta_key", "text"),
    ("length", "int4"),
)


@dataclass(frozen=True, slots=True)
class Row:
    """A chunk ready to be written: checked and analyzed before any transaction opens."""

    chunk: IndexedChunk
    terms: Counter[str]
    length: int
    meta_key: str


def prepare_rows(
    chunks: Sequence[IndexedChunk], *, dim: int | None, analyzer: Analyzer
) -> list[Row]:
    """One row per chunk id (the last wins); raises ``ValueError`` for a vector of another
    size or a NUL character (PostgreSQL text holds none), before anything is written. A
    keyword-only index (``dim=None``) keeps no vectors."""
    rows = []
    unique = list({c.chunk_id: c for c in chunks}.values())
    for given, text in zip(unique, own_texts(unique), strict=True):
        chunk = given
        if dim is None and given.vector is not None:
            chunk = replace(given, vector=None)
        elif chunk.vector is not None:
            size = np.asarray(chunk.vector).size
            if size != dim:
                raise ValueError(
                    f"chunk {chunk.chunk_id} has a vector of {size} dimensions in an index of {dim}"
                )
        _refuse_nul(chunk)
        terms = Counter(analyzer.analyze(text))  # what the chunk adds to its document
        rows.append(Row(chunk, terms, sum(terms.values()), meta_key(chunk.doc)))
    return rows


def _refuse_nul(chunk: IndexedChunk) -> None:
    doc = chunk.doc
    fields = [chunk.chunk_id, chunk.text, chunk.section, doc.doc_id, doc.path, doc.title or ""]
    fields += [doc.date or "", doc.tenant or "", doc.classification, doc.version or ""]
    fields += [*doc.roles, *doc.tags]
    if any("\x00" in f for f in fields):
        raise ValueError(f"chunk {chunk.chunk_id!r} holds a NUL character; PostgreSQL stores none")


@dataclass(frozen=True, slots=True)
class Removed:
    """What :func:`delete_rows` took out."""

    chunks: int = 0
    length: int = 0
    doc_ids: frozenset[str] = frozenset()
    """The documents the removed chunks belonged to."""

    def __add__(self, other: Removed) -> Removed:
        return Removed(
            self.chunks + other.chunks, self.length + other.length, self.doc_ids | other.doc_ids
        )


def delete_rows(
    cur: psycopg.Cursor[Any], names: TableNames, column: str, values: list[str]
) -> Removed:
    """Delete the chunks whose ``column`` is in ``values``, and their postings; take what
    they held off the terms' counts (a document off a term's when none of its other chunks
    holds the term: the statement sees the rows as they were before it, the deleted ones
    left out by ``rid``)."""
    if not values:
        return Removed()
    cur.execute(
        sql.SQL(
            """WITH gone AS (
                DELETE FROM {chunks} WHERE {column} = ANY(%s::text[])
                RETURNING rid, doc_id, length
            ), postings AS (
                DELETE FROM {terms} WHERE rid IN (SELECT rid FROM gone) RETURNING term, doc_id
            ), pairs AS (
                SELECT term, doc_id, count(*) AS n FROM postings GROUP BY term, doc_id
            ), lost AS (
                SELECT x.term, sum(x.n) AS chunks,
                       count(*) FILTER (WHERE NOT EXISTS (
                           SELECT 1 FROM {chunks} c JOIN {terms} p ON p.rid = c.rid
                           WHERE c.doc_id = x.doc_id AND p.term = x.term
                               AND c.rid NOT IN (SELECT rid FROM gone))) AS docs
                FROM pairs x GROUP BY x.term
            ), counted AS (
                UPDATE {df} f SET docs = f.docs - l.docs, chunks = f.chunks - l.chunks
                FROM lost l WHERE f.term = l.term
            )
            SELECT count(*), coalesce(sum(length), 0),
                   coalesce(array_agg(DISTINCT doc_id), '{{}}')
            FROM gone"""
        ).format(
            chunks=names.chunks, terms=names.terms, df=names.df, column=sql.Identifier(column)
        ),
        [values],
    )
    row = cur.fetchone()
    assert row is not None
    return Removed(int(row[0]), int(row[1]), frozenset(row[2]))


def refresh_documents(
    cur: psycopg.Cursor[Any], names: TableNames, doc_ids: Iterable[str], *, bulk: bool = False
) -> int:
    """Sum the lengths of documents ``doc_ids`` again from their chunks (after a write changed
    them), drop the ones with no chunk left; return the change in the number of documents.
    ``bulk`` (after a bulk load) refreshes the planner's statistics of the table."""
    ids = sorted(set(doc_ids))
    if not ids:
        return 0
    cur.execute(
        sql.SQL(
            """WITH now AS (
                SELECT c.doc_id, sum(c.length) AS length FROM {chunks} c
                WHERE c.doc_id = ANY(%(ids)s::text[]) GROUP BY c.doc_id
            ), before AS (
                SELECT count(*) AS n FROM {docs} d WHERE d.doc_id = ANY(%(ids)s::text[])
            ), gone AS (
                DELETE FROM {docs} d WHERE d.doc_id = ANY(%(ids)s::text[])
                    AND NOT EXISTS (SELECT 1 FROM now WHERE now.doc_id = d.doc_id)
            ), put AS (
                INSERT INTO {docs} (doc_id, length) SELECT doc_id, length FROM now
                ON CONFLICT (doc_id) DO UPDATE SET length = excluded.length
            )
            SELECT (SELECT count(*) FROM now) - (SELECT n FROM before)"""
        ).format(chunks=names.chunks, docs=names.docs),
        {"ids": ids},
    )
    row = cur.fetchone()
    assert row is not None
    if bulk:
        cur.execute(sql.SQL("ANALYZE {}").format(names.docs))
    return int(row[0])


def insert_rows(
    cur: psycopg.Cursor[Any], names: TableNames, rows: list[Row], *, dim: int | None, present: int
) -> bool:
    """Copy ``rows`` in, next to ``present`` chunks that stay; True for a bulk load. A batch of
    ``BULK`` chunks or more, and no smaller than what stays, is a bulk load: the HNSW index is
    dropped and built again over every row, an order of magnitude faster than inserting into the
    graph row by row (``docs/benchmarks.md``, "Figures out of the code"), and so are the postings'
    two B-tree indexes (one sorted build each, where the ``COPY`` kept them up row by row in random
    term order: at 100,000 documents that was most of the load). All in the write's transaction: a
    load that fails or dies leaves the table as it was, indexes included. Searches wait for
    the builds: the transaction holds the tables. Any bulk load, with vectors or not,
    refreshes the planner's statistics (of ``$docs`` in :func:`refresh_documents`)."""
    bulk = len(rows) >= max(BULK, present)
    rebuild = _drop_hnsw(cur, names) if dim is not None and bulk else None
    if bulk:
        drop_terms_indexes(cur, names)
    cur.execute(
        "SELECT nextval(%s::regclass) FROM generate_series(1, %s)",
        [names.rows.as_string(), len(rows)],
    )
    rids = [int(r[0]) for r in cur.fetchall()]
    columns = [name for name, _ in _COLUMNS]
    types = [kind for _, kind in _COLUMNS]
    if dim is not None:
        columns.append("embedding")
        types.append("vector")
    statement = sql.SQL("COPY {} ({}) FROM STDIN (FORMAT BINARY)").format(
        names.chunks, sql.SQL(", ").join(map(sql.Identifier, columns))
    )
    with cur.copy(statement) as copy:
        copy.set_types(types)
        for rid, row in zip(rids, rows, strict=True):
            c, doc = row.chunk, row.chunk.doc
            values: list[Any] = [
                rid, c.chunk_id, doc.doc_id, doc.path, source_of(doc.path), c.seq, c.text,
                c.start_line, c.end_line,
                c.section, doc.title, doc.date, doc.tenant, doc.classification, sorted(doc.roles),
                sorted(doc.tags), doc.version, row.meta_key, row.length,
            ]  # fmt: skip
            if dim is not None:
                vector = c.vector
                values.append(
                    None if vector is None else np.asarray(vector, dtype=np.float32).reshape(-1)
                )
            copy.write_row(values)
    statement = sql.SQL(
        "COPY {} (term, rid, doc_id, tf, length) FROM STDIN (FORMAT BINARY)"
    ).format(names.terms)
    with cur.copy(statement) as copy:
        copy.set_types(["text", "int8", "text", "int4", "int4"])
        for rid, row in zip(rids, rows, strict=True):
            doc_id = row.chunk.doc.doc_id
            for term, tf in row.terms.items():
                copy.write_row((term, rid, doc_id, tf, row.length))
    if bulk:
        for statement in terms_indexes(names):
            cur.execute(statement)
    _count_terms(cur, names, rows, rids[0] if present else None)  # after: it probes the keys
    if rebuild is not None:
        cur.execute(sql.SQL(rebuild))  # the catalog's own statement
    if bulk:
        # fresh statistics now, not when autovacuum comes by: the planner needs them to use
        # the posting index rather than scan every posting
        cur.execute(sql.SQL("ANALYZE {}, {}").format(names.chunks, names.terms))
        return True
    return False


def _count_terms(
    cur: psycopg.Cursor[Any], names: TableNames, rows: list[Row], first: int | None
) -> None:
    """Add the postings of ``rows``, just copied in (``rid`` from ``first`` on), to the terms'
    counts: a chunk per posting, a document per term it did not hold before this write.
    Counted here from ``rows``; only the documents that keep chunks of earlier writes (``rid``
    below ``first``) are looked up, for the terms they held already (none when ``first`` is
    ``None``: no chunk stayed)."""
    chunks: Counter[str] = Counter()
    held: dict[str, set[str]] = {}
    for row in rows:
        chunks.update(row.terms.keys())
        held.setdefault(row.chunk.doc.doc_id, set()).update(row.terms.keys())
    older: list[str] = []
    if first is not None:
        cur.execute(
            sql.SQL(
                "SELECT DISTINCT doc_id FROM {} WHERE doc_id = ANY(%s::text[]) AND rid < %s"
            ).format(names.chunks),
            [list(held), first],
        )
        older = [str(r[0]) for r in cur.fetchall()]
    docs: Counter[str] = Counter()
    for held_terms in held.values():
        docs.update(held_terms)
    if older:
        pairs = [(t, d) for d in older for t in held[d]]
        cur.execute(
            sql.SQL(
                """SELECT g.term FROM unnest(%s::text[], %s::text[]) AS g(term, doc_id)
                WHERE EXISTS (
                    SELECT 1 FROM {chunks} c JOIN {terms} p ON p.rid = c.rid
                    WHERE c.doc_id = g.doc_id AND p.term = g.term AND c.rid < %s)"""
            ).format(chunks=names.chunks, terms=names.terms),
            [[t for t, _ in pairs], [d for _, d in pairs], first],
        )
        docs.subtract(str(r[0]) for r in cur.fetchall())
    terms = list(chunks)
    cur.execute(
        sql.SQL(
            """INSERT INTO {df} AS f (term, docs, chunks)
            SELECT * FROM unnest(%s::text[], %s::int8[], %s::int8[])
            ON CONFLICT (term) DO UPDATE
                SET docs = f.docs + excluded.docs, chunks = f.chunks + excluded.chunks"""
        ).format(df=names.df),
        [terms, [docs[t] for t in terms], [chunks[t] for t in terms]],
    )


def _drop_hnsw(cur: psycopg.Cursor[Any], names: TableNames) -> str | None:
    """Drop the HNSW index; return its definition as the catalog states it (so the build
    keeps the graph parameters the table was created with)."""
    hnsw = names.index("hnsw")
    cur.execute("SELECT pg_get_indexdef(to_regclass(%s))", [hnsw.as_string()])
    row = cur.fetchone()
    if row is None or row[0] is None:
        return None
    cur.execute(sql.SQL("DROP INDEX {}").format(hnsw))
    return str(row[0])


def bump(cur: psycopg.Cursor[Any], names: TableNames, chunks: int, length: int, docs: int) -> None:
    """Apply a write to the statistics and advance the generation (which invalidates the
    cached answers of access checks)."""
    cur.execute(
        sql.SQL(
            "UPDATE {} SET chunks = chunks + %s, total_len = total_len + %s, docs = docs + %s, "
            "generation = generation + 1 WHERE name = %s"
        ).format(names.registry),
        [chunks, length, docs, names.table],
    )
