"""The PostgreSQL index's tables: the table name checked, the names derived from it, the tables
created once and recorded with how they were built.

One database holds any number of indexes (one per table name, e.g. a table per tenant and
source). A table name is lower-case letters, digits and ``_``; every name the index derives
from it (its terms table, sequence, indexes) adds a ``$`` and a suffix, a character no table
name may contain, so two indexes can never claim the same name. Names over PostgreSQL's 63
bytes keep a prefix, a ``$`` and a hash of the full name. Every name reaches SQL through
:class:`psycopg.sql.Identifier`, never through string formatting.

The registry table ``bastion$indexes`` has a row per index: its format, vector size, embedder
and analyzer (an index opened with other settings is refused), and the collection statistics
BM25 needs (chunks, documents, total length) with a generation number bumped by every write.
Writers lock their index's row first, so the writes of one index are serialized (in every
process) and the statistics stay exact.

Besides its chunks, an index keeps the BM25 postings (``$terms``: a row per chunk and analyzed
term, with the chunk's document and length, so a posting needs no join to its chunk), each
document's length (``$docs``: what its chunks add, refreshed for the documents a write touches,
in the write's transaction) and each term's counts (``$df``: how many documents and how many
chunks hold it, changed by every write in its transaction), which bound what a term can add
to a score without reading its postings.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass
from typing import Any

import psycopg
from psycopg import sql

from bastion.core.errors import ConfigurationError
from bastion.knowledge.embedders.base import same_space

__all__ = [
    "FORMAT",
    "REGISTRY",
    "TableNames",
    "check_table_name",
    "create_or_check",
    "drop_tables",
    "drop_terms_indexes",
    "lock_schema",
    "terms_indexes",
]

FORMAT = 4
"""Layout version of the tables; an index of another format must be rebuilt (2: the terms
of a chunk are what it adds to its document, overlaps counted once; 3: the document count in
the registry, ``doc_id`` in the postings, the ``$docs`` table of document lengths; 4: the
``$df`` table of each term's document and chunk counts), but for format 3, which an open
brings to 4 (:func:`_upgrade_from_3`)."""

REGISTRY = "bastion$indexes"
_TABLE = re.compile(r"[a-z_][a-z0-9_]*\Z")
_MAX_NAME = 63
"""PostgreSQL's limit on a name, in bytes."""
_MAX_TABLE = 255
"""Longer index names than PostgreSQL's limit are accepted (``PartitionedIndex`` makes some):
the table itself is then named by a prefix and a hash."""
_PLAIN_DIM = 1024
"""Vectors up to this size are stored inline (a row must fit a page; longer text is toasted)."""
_SCHEMA_LOCK = 0x62617374696F6E31
"""Advisory lock key ("bastion1") held while any Bastion index creates or drops its tables."""


def check_table_name(table: str) -> str:
    """``table`` when it is a valid index table name; :class:`ConfigurationError` otherwise."""
    if not isinstance(table, str) or not _TABLE.match(table) or len(table) > _MAX_TABLE:
        raise ConfigurationError(
            f"invalid index table name {table!r}: use 1 to {_MAX_TABLE} lower-case letters, "
            "digits and '_', starting with a letter or '_'"
        )
    if table.startswith("pg_"):
        raise ConfigurationError(f"invalid index table name {table!r}: 'pg_' names are reserved")
    return table


def _derived(table: str, suffix: str) -> str:
    name = f"{table}${suffix}"
    if len(name) <= _MAX_NAME:
        return name
    digest = hashlib.sha256(table.encode()).hexdigest()[:10]
    keep = _MAX_NAME - len(suffix) - len(digest) - 2
    return f"{table[:keep]}${digest}${suffix}"


@dataclass(frozen=True, slots=True)
class TableNames:
    """Every name one index uses, derived from its table name."""

    table: str
    """The index's name, as given (the registry's key)."""

    def __post_init__(self) -> None:
        check_table_name(self.table)

    @property
    def physical(self) -> str:
        """The chunks table's name in the database (the index's name when it fits)."""
        if len(self.table) <= _MAX_NAME:
            return self.table
        digest = hashlib.sha256(self.table.encode()).hexdigest()[:10]
        return f"{self.table[: _MAX_NAME - 11]}${digest}"

    @property
    def chunks(self) -> sql.Identifier:
        return sql.Identifier(self.physical)

    @property
    def terms(self) -> sql.Identifier:
        return sql.Identifier(_derived(self.physical, "terms"))

    @property
    def docs(self) -> sql.Identifier:
        """The table of document lengths."""
        return sql.Identifier(_derived(self.physical, "docs"))

    @property
    def df(self) -> sql.Identifier:
        """The table of each term's document and chunk counts."""
        return sql.Identifier(_derived(self.physical, "df"))

    @property
    def rows(self) -> sql.Identifier:
        """The sequence numbering rows in write order (the latest write has the highest)."""
        return sql.Identifier(_derived(self.physical, "rows"))

    def index(self, suffix: str) -> sql.Identifier:
        return sql.Identifier(_derived(self.physical, suffix))

    @property
    def registry(self) -> sql.Identifier:
        return sql.Identifier(REGISTRY)


def _ddl(
    names: TableNames, dim: int | None, hnsw_m: int, ef_construction: int
) -> list[sql.Composed]:
    t, i = names.chunks, names.index
    vector = sql.SQL(", embedding vector({})").format(sql.Literal(dim)) if dim else sql.SQL("")
    statements = [
        sql.SQL("CREATE SEQUENCE {}").format(names.rows),
        sql.SQL(
            """CREATE TABLE {t} (
                rid bigint NOT NULL DEFAULT nextval({seq}),
                chunk_id text NOT NULL,
                doc_id text NOT NULL,
                path text NOT NULL,
                source text NOT NULL,
                seq integer NOT NULL,
                text text NOT NULL,
                start_line integer NOT NULL,
                end_line integer NOT NULL,
                section text NOT NULL,
                title text,
                date text,
                tenant text,
                classification text NOT NULL,
                roles text[] NOT NULL,
                tags text[] NOT NULL,
                version text,
                meta_key text NOT NULL,
                length integer NOT NULL,
                keywords tsvector GENERATED ALWAYS AS
                    (to_tsvector('english'::regconfig, section || E'\\n' || text)) STORED
                {vector},
                CONSTRAINT {pk} PRIMARY KEY (chunk_id),
                CONSTRAINT {row_key} UNIQUE (rid)
            )"""
        ).format(
            t=t,
            seq=sql.Literal(names.rows.as_string()),
            vector=vector,
            pk=i("pk"),
            row_key=i("row"),
        ),
        sql.SQL("CREATE INDEX {} ON {} (doc_id, seq)").format(i("doc"), t),
        sql.SQL("CREATE INDEX {} ON {} (path text_pattern_ops)").format(i("path"), t),
        sql.SQL("CREATE INDEX {} ON {} (tenant)").format(i("tenant"), t),
        sql.SQL("CREATE INDEX {} ON {} USING gin (roles, tags)").format(i("labels"), t),
        sql.SQL("CREATE INDEX {} ON {} USING gin (keywords)").format(i("keywords"), t),
        sql.SQL(
            """CREATE TABLE {} (
                term text NOT NULL,
                rid bigint NOT NULL,
                doc_id text NOT NULL,
                tf integer NOT NULL,
                length integer NOT NULL
            )"""
        ).format(names.terms),
        *terms_indexes(names),
        sql.SQL(
            """CREATE TABLE {docs} (
                doc_id text NOT NULL,
                length bigint NOT NULL,
                CONSTRAINT {pk} PRIMARY KEY (doc_id) INCLUDE (length)
            )"""
        ).format(docs=names.docs, pk=i("docs_pk")),
        *_df_ddl(names),
    ]
    if dim and dim <= _PLAIN_DIM:
        # Vectors inline in the row, not in TOAST (pgvector's default): an exact scan (the
        # fallback of a filtered search) reads them several times faster (docs/benchmarks.md)
        statements.append(
            sql.SQL("ALTER TABLE {} ALTER COLUMN embedding SET STORAGE PLAIN").format(t)
        )
    if dim:
        statements.append(
            sql.SQL(
                "CREATE INDEX {} ON {} USING hnsw (embedding vector_ip_ops) "
                "WITH (m = {}, ef_construction = {})"
            ).format(i("hnsw"), t, sql.Literal(hnsw_m), sql.Literal(ef_construction))
        )
    return statements


def _df_ddl(names: TableNames) -> list[sql.Composed]:
    return [
        sql.SQL(
            """CREATE TABLE {df} (
                term text NOT NULL,
                docs bigint NOT NULL,
                chunks bigint NOT NULL,
                CONSTRAINT {pk} PRIMARY KEY (term) INCLUDE (docs, chunks)
            )"""
        ).format(df=names.df, pk=names.index("df_pk"))
    ]


def _upgrade_from_3(cur: psycopg.Cursor[Any], names: TableNames) -> None:
    """Bring a format-3 index to format 4: its ``$df`` table counted once from the postings."""
    for statement in _df_ddl(names):
        cur.execute(statement)
    cur.execute(
        sql.SQL(
            "INSERT INTO {} (term, docs, chunks) "
            "SELECT term, count(DISTINCT doc_id), count(*) FROM {} GROUP BY term"
        ).format(names.df, names.terms)
    )
    cur.execute(
        sql.SQL("UPDATE {} SET format = %s WHERE name = %s").format(names.registry),
        [FORMAT, names.table],
    )


def terms_indexes(names: TableNames) -> list[sql.Composed]:
    """The postings' two B-tree indexes: the primary key ``(rid, term)`` (a chunk's postings,
    for deletes; no posting twice) and the covering ``(term) INCLUDE (...)`` the BM25 query
    reads. Built with the table, and again after a bulk load (:func:`drop_terms_indexes`)."""
    return [
        sql.SQL("ALTER TABLE {} ADD CONSTRAINT {} PRIMARY KEY (rid, term)").format(
            names.terms, names.index("terms_pk")
        ),
        sql.SQL("CREATE INDEX {} ON {} (term) INCLUDE (rid, doc_id, tf, length)").format(
            names.index("terms_term"), names.terms
        ),
    ]


def drop_terms_indexes(cur: psycopg.Cursor[Any], names: TableNames) -> None:
    """Drop the postings' indexes for a bulk load, which builds them again after its ``COPY``
    (:func:`terms_indexes`) in the same transaction: PostgreSQL's DDL is transactional, so a
    load that fails or dies rolls the drop back with the rows, and no committed state ever
    lacks the primary key."""
    cur.execute(
        sql.SQL("ALTER TABLE {} DROP CONSTRAINT IF EXISTS {}").format(
            names.terms, names.index("terms_pk")
        )
    )
    cur.execute(sql.SQL("DROP INDEX IF EXISTS {}").format(names.index("terms_term")))


def _missing_terms_indexes(cur: psycopg.Cursor[Any], names: TableNames) -> list[sql.Composed]:
    """The statements of :func:`terms_indexes` whose index is not there (dropped by hand):
    opening the index builds them again, before any write could add a duplicate posting."""
    wanted = zip(
        (names.index("terms_pk"), names.index("terms_term")), terms_indexes(names), strict=True
    )
    return [statement for index, statement in wanted if not _exists(cur, index)]


def _exists(cur: psycopg.Cursor[Any], name: sql.Identifier) -> bool:
    cur.execute("SELECT to_regclass(%s) IS NOT NULL", [name.as_string()])
    row = cur.fetchone()
    return bool(row and row[0])


def _ensure_pgvector(cur: psycopg.Cursor[Any]) -> None:
    try:
        cur.execute("CREATE EXTENSION IF NOT EXISTS vector")
    except psycopg.Error as exc:
        raise ConfigurationError(
            "pgvector is not available in this database (CREATE EXTENSION vector failed: "
            f"{type(exc).__name__}); install it, or open a keyword-only index (dim=None)"
        ) from exc
    cur.execute("SELECT extversion FROM pg_extension WHERE extname = 'vector'")
    row = cur.fetchone()
    version = tuple(int(p) for p in re.findall(r"\d+", str(row[0] if row else "0"))[:2])
    if version < (0, 5):
        raise ConfigurationError(
            f"pgvector {row[0] if row else '?'} has no HNSW index; upgrade it to 0.5 or later"
        )


def create_or_check(
    conn: psycopg.Connection[Any],
    names: TableNames,
    wanted: dict[str, Any],
    *,
    hnsw_m: int,
    ef_construction: int,
) -> None:
    """Create the index's tables if missing, or check that they were built as ``wanted``
    (``format``, ``dim``, ``embedder``, ``analyzer``); one transaction, under the schema lock."""
    dim = wanted["dim"]
    with conn.transaction(), conn.cursor() as cur:
        cur.execute("SELECT pg_advisory_xact_lock(%s)", [_SCHEMA_LOCK])
        if dim:
            _ensure_pgvector(cur)
        cur.execute(
            sql.SQL(
                """CREATE TABLE IF NOT EXISTS {} (
                    name text PRIMARY KEY,
                    format integer NOT NULL,
                    dim integer,
                    embedder text,
                    analyzer text NOT NULL,
                    chunks bigint NOT NULL DEFAULT 0,
                    docs bigint NOT NULL DEFAULT 0,
                    total_len bigint NOT NULL DEFAULT 0,
                    generation bigint NOT NULL DEFAULT 0
                )"""
            ).format(names.registry)
        )
        _add_docs_column(cur, names)
        cur.execute(
            sql.SQL("SELECT format, dim, embedder, analyzer FROM {} WHERE name = %s").format(
                names.registry
            ),
            [names.table],
        )
        row = cur.fetchone()
        if row is not None:
            found = dict(zip(("format", "dim", "embedder", "analyzer"), row, strict=True))
            upgrade = found["format"] == 3 and _exists(cur, names.chunks)
            if upgrade:
                found["format"] = FORMAT
            built_with, embedder = found["embedder"], wanted["embedder"]
            if same_space(built_with, embedder):
                wanted = {**wanted, "embedder": built_with}  # another number format: one space
            if found != wanted:
                diff = ", ".join(
                    f"{k}: {found[k]!r} != {v!r}" for k, v in wanted.items() if found[k] != v
                )
                raise ConfigurationError(
                    f"the index in table {names.table!r} was built differently ({diff}); "
                    "rebuild it (PostgresIndex.drop, then index the files again) or use "
                    "another table"
                )
            if _exists(cur, names.chunks):
                for statement in _missing_terms_indexes(cur, names):
                    cur.execute(statement)  # a duplicate posting would fail here, loudly
                if upgrade:
                    _upgrade_from_3(cur, names)
                return
            drop_tables(cur, names)  # the table was dropped by hand: start afresh
        elif _exists(cur, names.chunks):
            raise ConfigurationError(
                f"table {names.table!r} exists and is not a Bastion index; use another table name"
            )
        for statement in _ddl(names, dim, hnsw_m, ef_construction):
            cur.execute(statement)
        cur.execute(
            sql.SQL(
                "INSERT INTO {} (name, format, dim, embedder, analyzer) VALUES (%s, %s, %s, %s, %s)"
            ).format(names.registry),
            [names.table, wanted["format"], dim, wanted["embedder"], wanted["analyzer"]],
        )


def _add_docs_column(cur: psycopg.Cursor[Any], names: TableNames) -> None:
    """A registry made before format 3 gains its ``docs`` column (its format-2 rows keep being
    refused until rebuilt). Checked first: ``ALTER TABLE`` would wait for every writer of every
    index in the database, even with ``IF NOT EXISTS``."""
    cur.execute(
        "SELECT 1 FROM pg_attribute WHERE attrelid = to_regclass(%s) AND attname = 'docs' "
        "AND NOT attisdropped",
        [names.registry.as_string()],
    )
    if cur.fetchone() is None:
        cur.execute(
            sql.SQL("ALTER TABLE {} ADD COLUMN docs bigint NOT NULL DEFAULT 0").format(
                names.registry
            )
        )


def drop_tables(cur: psycopg.Cursor[Any], names: TableNames) -> bool:
    """Drop the index's tables and its registry row (if the registry exists); True when the
    index was there."""
    existed = _exists(cur, names.chunks)
    cur.execute(
        sql.SQL("DROP TABLE IF EXISTS {}, {}, {}, {}").format(
            names.chunks, names.terms, names.docs, names.df
        )
    )
    cur.execute(sql.SQL("DROP SEQUENCE IF EXISTS {}").format(names.rows))
    if _exists(cur, names.registry):
        cur.execute(sql.SQL("DELETE FROM {} WHERE name = %s").format(names.registry), [names.table])
    return existed


def lock_schema(cur: psycopg.Cursor[Any]) -> None:
    cur.execute("SELECT pg_advisory_xact_lock(%s)", [_SCHEMA_LOCK])
