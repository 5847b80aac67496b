"""SQL of the PostgreSQL index, as pure functions: an :class:`IndexFilter` as a ``WHERE``
clause, the three ranked queries (exact BM25, ``ts_rank_cd``, vector), and rows to records.

Every value travels as a bound parameter; names are :class:`psycopg.sql.Identifier`.

BM25 is Lucene's formula, ranking documents as :mod:`bastion.knowledge.index.bm25` does in
memory, evaluated in one statement over the ``terms`` table: one row per (chunk, analyzed
term) with the term frequency and the chunk's length, each chunk holding only what it adds to
its document. N, df and the average lengths (of chunks and of documents) are those of the
chunks the filter admits, as in memory: a score never depends on chunks the asker may not see
(or one's own document's score would tell how many hidden ones hold a word). Unfiltered, the
counts come from the registry row and the documents' lengths from the ``$docs`` table;
filtered, from a pass over the admitted chunks' ``(rid, doc_id, length)``.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from psycopg import sql

from bastion.knowledge.index._pg_schema import TableNames
from bastion.knowledge.index.models import DocumentMeta, IndexedChunk, IndexFilter

__all__ = [
    "CHUNK_COLUMNS",
    "DOC_COLUMNS",
    "Where",
    "bm25_query",
    "chunk_from_row",
    "columns",
    "fts_query",
    "meta_from_row",
    "meta_key",
    "vector_query",
    "where",
]

DOC_COLUMNS = (
    "doc_id",
    "path",
    "title",
    "date",
    "tenant",
    "classification",
    "roles",
    "tags",
    "version",
)
"""The document-level columns, in :func:`meta_from_row` order."""

CHUNK_COLUMNS = (
    "rid",
    "chunk_id",
    "seq",
    "text",
    "start_line",
    "end_line",
    "section",
    *DOC_COLUMNS,
)
"""The columns of a chunk, in :func:`chunk_from_row` order (without its vector)."""

_C = "C"  # byte-order collation: ISO dates compare as Python compares them


def columns(names: Sequence[str], alias: str = "c") -> sql.Composed:
    return sql.SQL(", ").join(sql.Identifier(alias, n) for n in names)


def meta_key(doc: DocumentMeta) -> str:
    """A digest of every label of a document: the unit an access check is cached by."""
    payload = json.dumps(
        [
            doc.doc_id,
            doc.path,
            doc.title,
            doc.date,
            doc.tenant,
            doc.classification,
            sorted(doc.roles),
            sorted(doc.tags),
            doc.version,
        ],
        ensure_ascii=False,
        separators=(",", ":"),
    )
    return hashlib.blake2b(payload.encode("utf-8", "surrogatepass"), digest_size=16).hexdigest()


def meta_from_row(row: Sequence[Any]) -> DocumentMeta:
    doc_id, path, title, date, tenant, classification, roles, tags, version = row
    return DocumentMeta(
        doc_id=doc_id,
        path=path,
        title=title,
        date=date,
        tenant=tenant,
        classification=classification,
        roles=frozenset(roles),
        tags=frozenset(tags),
        version=version,
    )


def chunk_from_row(row: Sequence[Any], vector: Any = None) -> IndexedChunk:
    """A row of :data:`CHUNK_COLUMNS` (``rid`` first) as a chunk; ``vector`` is pgvector's
    ``Vector`` or ``None``."""
    _, chunk_id, seq, text, start_line, end_line, section = row[:7]
    return IndexedChunk(
        chunk_id=chunk_id,
        doc=meta_from_row(row[7:16]),
        seq=seq,
        text=text,
        start_line=start_line,
        end_line=end_line,
        section=section,
        vector=None if vector is None else np.asarray(vector.to_numpy(), dtype=np.float32),
    )


@dataclass(slots=True)
class Where:
    """Conditions on the chunks (alias ``c``) and their parameters."""

    conditions: list[sql.Composable] = field(default_factory=list)
    params: dict[str, Any] = field(default_factory=dict)
    empty: bool = False
    """True when the filter admits nothing (no query needs to run)."""

    def add(self, condition: str, **params: Any) -> None:
        self.conditions.append(sql.SQL(condition))
        self.params.update(params)

    def clause(self, *extra: str) -> sql.Composable:
        parts: list[sql.Composable] = [sql.SQL(e) for e in extra]
        parts += self.conditions
        return sql.SQL(" AND ").join(parts) if parts else sql.SQL("TRUE")


def where(flt: IndexFilter | None, *, section: bool = True) -> Where:
    """Every condition of ``flt`` but its ``access`` callable, as SQL over the chunks (``c``).
    ``section=False`` leaves the chunk-level section condition out (for document queries)."""
    out = Where()
    if flt is None:
        return out
    prefix = flt.path_prefix
    if prefix is not None and prefix not in ("", "/"):
        base = prefix.rstrip("/")
        out.add(
            "(c.path = %(f_path)s OR starts_with(c.path, %(f_under)s))",
            f_path=base,
            f_under=base + "/",
        )
    if flt.doc_ids is not None:
        out.empty |= not flt.doc_ids
        out.add("c.doc_id = ANY(%(f_docs)s::text[])", f_docs=sorted(flt.doc_ids))
    if flt.tenant is not None:
        out.add("(c.tenant IS NULL OR c.tenant = %(f_tenant)s)", f_tenant=flt.tenant)
    if flt.classifications is not None:
        out.empty |= not flt.classifications
        out.add(
            "c.classification = ANY(%(f_classes)s::text[])", f_classes=sorted(flt.classifications)
        )
    if flt.roles is not None:
        out.add(
            "(cardinality(c.roles) = 0 OR c.roles && %(f_roles)s::text[])",
            f_roles=sorted(flt.roles),
        )
    if flt.tags:
        out.add("c.tags @> %(f_tags)s::text[]", f_tags=sorted(flt.tags))
    if flt.sources is not None:
        out.empty |= not flt.sources
        out.add("c.source = ANY(%(f_sources)s::text[])", f_sources=sorted(flt.sources))
    if flt.date_from is not None or flt.date_to is not None:
        out.add("c.date IS NOT NULL")
        if flt.date_from is not None:
            out.add(
                f'left(c.date, %(f_from_n)s) COLLATE "{_C}" >= %(f_from)s COLLATE "{_C}"',
                f_from_n=len(flt.date_from),
                f_from=flt.date_from,
            )
        if flt.date_to is not None:
            out.add(
                f'left(c.date, %(f_to_n)s) COLLATE "{_C}" <= %(f_to)s COLLATE "{_C}"',
                f_to_n=len(flt.date_to),
                f_to=flt.date_to,
            )
    if section and flt.section is not None:
        out.add("starts_with(lower(c.section), lower(%(f_section)s))", f_section=flt.section)
    return out


def bm25_query(names: TableNames, flt: Where, *, shared: bool = False) -> sql.Composed:
    """Documents first, as the embedded index ranks (:meth:`BM25.ranked`): a document's
    frequencies and length summed over its chunks (each holding only what it adds), N, df
    and avgdl over the documents the filter admits; each matching chunk scores its
    document's BM25 times its own chunk-level BM25 over its document's best chunk's.

    A chunk never outscores its document, whose best chunk carries exactly its score, so the
    ``k`` best chunks belong to the documents scoring at least the ``k``-th best document's
    score: only those documents' chunks are scored (with a margin of 1e-9 of that score, far
    above the rounding of the division, so that ties and rounding keep every hit it ranks).

    Unfiltered, the counts come from the registry row, the documents' lengths from the
    ``$docs`` table (one probe per matching document) and the postings carry their document:
    nothing is read but the query terms' postings. Filtered, every count is taken over the
    chunks the filter admits, and so is each document's length.

    Parameters: ``name``, ``terms`` (distinct analyzed query terms), ``k1``, ``b``, ``k``, the
    filter's, and with ``shared`` the counts of a wider collection: ``n``, ``avgdl``, ``dfs``
    (per term, aligned with ``terms``) of its documents, ``entries``, ``entry_avgdl`` and
    ``entry_dfs`` of its chunks. Rows: :data:`CHUNK_COLUMNS`, the score."""
    if flt.conditions:
        base = sql.SQL(
            """visible AS (
                SELECT c.rid, c.length, c.doc_id FROM {chunks} c WHERE {cond}
            ), lengths AS (
                SELECT doc_id, sum(length)::float8 AS length FROM visible GROUP BY doc_id
            ), counts AS (
                SELECT count(*)::float8 AS chunks,
                       (SELECT count(*) FROM lengths)::float8 AS docs,
                       coalesce(sum(length), 0)::float8 AS total
                FROM visible
            ), matched AS (
                SELECT p.rid, p.doc_id, p.term, p.tf, p.length
                FROM {terms} p JOIN visible v ON v.rid = p.rid
                WHERE p.term = ANY(%(terms)s::text[])
            )"""
        ).format(chunks=names.chunks, terms=names.terms, cond=flt.clause())
        lengths: sql.Composable = sql.Identifier("lengths")
    else:
        base = sql.SQL(
            """counts AS (
                SELECT chunks::float8 AS chunks, docs::float8 AS docs, total_len::float8 AS total
                FROM {registry} WHERE name = %(name)s
            ), matched AS (
                SELECT p.rid, p.doc_id, p.term, p.tf, p.length
                FROM {terms} p WHERE p.term = ANY(%(terms)s::text[])
            )"""
        ).format(terms=names.terms, registry=names.registry)
        lengths = names.docs
    if shared:
        stats = sql.SQL(
            """cstats AS (SELECT %(entries)s::float8 AS n, %(entry_avgdl)s::float8 AS avgdl),
            dstats AS (SELECT %(n)s::float8 AS n, %(avgdl)s::float8 AS avgdl),
            given AS (
                SELECT * FROM unnest(%(terms)s::text[], %(dfs)s::int8[], %(entry_dfs)s::int8[])
                    AS g(term, df, entry_df)
            ), postings AS (
                SELECT m.*, greatest(count(*) OVER (PARTITION BY m.term), g.entry_df) AS df
                FROM matched m JOIN given g ON g.term = m.term
            ), doc_terms AS (
                SELECT doc_id, term, sum(tf)::float8 AS tf FROM postings GROUP BY doc_id, term
            ), doc_df AS (
                SELECT g.term, greatest(g.df, coalesce(l.df, 0))::float8 AS df
                FROM given g
                LEFT JOIN (SELECT term, count(*) AS df FROM doc_terms GROUP BY term) l
                    ON l.term = g.term
            )"""
        )
    else:
        stats = sql.SQL(
            """cstats AS (
                SELECT chunks AS n, greatest(total / greatest(chunks, 1), 1e-9) AS avgdl
                FROM counts
            ), dstats AS (
                SELECT docs AS n, greatest(total / greatest(docs, 1), 1e-9) AS avgdl FROM counts
            ), postings AS (
                SELECT m.*, count(*) OVER (PARTITION BY m.term) AS df FROM matched m
            ), doc_terms AS (
                SELECT doc_id, term, sum(tf)::float8 AS tf FROM postings GROUP BY doc_id, term
            ), doc_df AS (
                SELECT term, count(*)::float8 AS df FROM doc_terms GROUP BY term
            )"""
        )
    return sql.SQL(
        """WITH {base}, {stats}, doc_scores AS ({doc_scores}), best_docs AS (
            SELECT d.doc_id, d.score FROM doc_scores d
            WHERE d.score >= coalesce(
                (SELECT score - abs(score) * 1e-9 FROM doc_scores
                 ORDER BY score DESC OFFSET %(k)s - 1 LIMIT 1),
                '-Infinity'::float8)
        ), {best_chunks}"""
    ).format(
        base=base,
        stats=stats,
        doc_scores=doc_scores(lengths, sql.Identifier("doc_df")),
        best_chunks=best_chunks(names),
    )


def weight(df: str, tf: str, length: str) -> sql.SQL:
    """What a term adds to a score (Lucene's BM25), over the statistics row ``s`` (``n``,
    ``avgdl``) and the parameters ``k1`` and ``b``: one expression for every query, so the
    same counts give the same float."""
    return sql.SQL(
        f"ln(1 + (s.n - {df} + 0.5) / ({df} + 0.5)) * {tf} * (%(k1)s + 1) "
        f"/ ({tf} + %(k1)s * (1 - %(b)s + %(b)s * {length} / s.avgdl))"
    )


def doc_scores(lengths: sql.Composable, dfs: sql.Composable) -> sql.Composed:
    """The documents' scores from ``doc_terms (doc_id, term, tf)``, ``dfs (term, df)``, the
    documents' ``lengths (doc_id, length)`` and ``dstats``. Each sum adds its terms in term
    order: the float does not depend on the order the rows come in."""
    return sql.SQL(
        """SELECT t.doc_id, sum({weight} ORDER BY t.term) AS score
        FROM doc_terms t JOIN {dfs} f ON f.term = t.term
            JOIN {lengths} d ON d.doc_id = t.doc_id CROSS JOIN dstats s
        GROUP BY t.doc_id"""
    ).format(weight=weight("f.df", "t.tf", "d.length"), dfs=dfs, lengths=lengths)


def best_chunks(names: TableNames) -> sql.Composed:
    """The end of a BM25 query: the ``k`` best chunks of ``best_docs (doc_id, score)``, each
    its document's score times its own over its document's best chunk's, from ``postings
    (rid, doc_id, term, tf, length, df)`` (``df``: the term's chunk count) and ``cstats``."""
    return sql.SQL(
        """chunk_scores AS (
            SELECT x.rid, x.doc_id, sum({weight} ORDER BY x.term) AS score
            FROM postings x JOIN best_docs b ON b.doc_id = x.doc_id CROSS JOIN cstats s
            GROUP BY x.rid, x.doc_id
        ), top AS (
            SELECT c.rid,
                   d.score * c.score / max(c.score) OVER (PARTITION BY c.doc_id) AS score
            FROM chunk_scores c JOIN best_docs d ON d.doc_id = c.doc_id
            ORDER BY score DESC, c.rid
            LIMIT %(k)s
        )
        SELECT {cols}, top.score FROM top JOIN {chunks} r ON r.rid = top.rid
        ORDER BY top.score DESC, top.rid"""
    ).format(
        weight=weight("x.df", "x.tf", "x.length"),
        chunks=names.chunks,
        cols=columns(CHUNK_COLUMNS, "r"),
    )


def bm25_statistics_query(names: TableNames, flt: Where) -> sql.Composed:
    """The document-level counts of :func:`bm25_query` over what the filter admits (from the
    registry row and the terms' counts kept in ``$df`` when it admits everything). Parameters:
    ``terms``, ``name`` and the filter's. One row: documents, their total length, chunks, then
    one ``(term, df, chunk df)`` triple per term that some admitted chunk holds."""
    per_term = sql.SQL(
        """(SELECT coalesce(array_agg(ARRAY[term, df::text, entry_df::text]), '{{}}')
            FROM (SELECT p.term, count(DISTINCT p.doc_id) AS df, count(*) AS entry_df
                  FROM {terms} p {join}
                  WHERE p.term = ANY(%(terms)s::text[]) GROUP BY p.term) t)"""
    )
    if not flt.conditions:
        return sql.SQL(
            """SELECT r.docs, r.total_len::float8, r.chunks,
                (SELECT coalesce(array_agg(ARRAY[term, docs::text, chunks::text]), '{{}}')
                 FROM {df} WHERE term = ANY(%(terms)s::text[]) AND chunks > 0)
            FROM {registry} r WHERE r.name = %(name)s"""
        ).format(registry=names.registry, df=names.df)
    return sql.SQL(
        """WITH visible AS (
            SELECT c.rid, c.doc_id, c.length FROM {chunks} c WHERE {cond}
        )
        SELECT (SELECT count(DISTINCT doc_id) FROM visible),
               (SELECT coalesce(sum(length), 0)::float8 FROM visible),
               (SELECT count(*) FROM visible),
               {per_term}"""
    ).format(
        chunks=names.chunks,
        cond=flt.clause(),
        per_term=per_term.format(
            terms=names.terms, join=sql.SQL("JOIN visible v ON v.rid = p.rid")
        ),
    )


def fts_query(names: TableNames, flt: Where) -> sql.Composed:
    """PostgreSQL's own full-text ranking: the query's lexemes OR-ed (as BM25 does), ranked by
    ``ts_rank_cd``. Parameters: ``query``, ``k`` and the filter's."""
    return sql.SQL(
        """WITH q AS (
            SELECT replace(plainto_tsquery('english', %(query)s)::text, ' & ', ' | ')::tsquery
                AS q
        )
        SELECT {cols}, ts_rank_cd(c.keywords, q.q) AS score
        FROM {chunks} c CROSS JOIN q
        WHERE c.keywords @@ q.q AND {cond}
        ORDER BY score DESC, c.rid
        LIMIT %(k)s"""
    ).format(chunks=names.chunks, cols=columns(CHUNK_COLUMNS), cond=flt.clause())


def vector_query(names: TableNames, flt: Where, *, exact: bool) -> sql.Composed:
    """Nearest chunks by inner product. ``exact=False`` orders by the HNSW index's own
    operator (approximate; with a filter it may return fewer than ``k`` rows); ``exact=True``
    orders by an expression no index serves, so every admitted vector is compared.
    Parameters: ``vector``, ``k`` and the filter's. Rows: :data:`CHUNK_COLUMNS`, the score."""
    order = (
        sql.SQL("(c.embedding <#> %(vector)s) + 0, c.rid")
        if exact
        else sql.SQL("c.embedding <#> %(vector)s")
    )
    return sql.SQL(
        """WITH top AS (
            SELECT c.rid, -(c.embedding <#> %(vector)s) AS score
            FROM {chunks} c
            WHERE {cond}
            ORDER BY {order}
            LIMIT %(k)s
        )
        SELECT {cols}, top.score FROM top JOIN {chunks} r ON r.rid = top.rid"""
    ).format(
        cols=columns(CHUNK_COLUMNS, "r"),
        chunks=names.chunks,
        cond=flt.clause("c.embedding IS NOT NULL"),
        order=order,
    )
