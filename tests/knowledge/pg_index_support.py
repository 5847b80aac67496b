"""What the PostgreSQL index tests share: each term's kept counts (``$df``) checked against a
recount of the postings."""

from __future__ import annotations

import psycopg
from psycopg import sql

from bastion.knowledge.index.postgres import PostgresIndex


def assert_term_counts_kept(index: PostgresIndex, dsn: str) -> None:
    """``$df`` holds, for each term, the documents and chunks its postings say."""
    n = index.names
    with psycopg.connect(dsn) as conn:
        kept = conn.execute(
            sql.SQL("SELECT term, docs, chunks FROM {} WHERE chunks > 0 ORDER BY term").format(n.df)
        ).fetchall()
        counted = conn.execute(
            sql.SQL(
                "SELECT term, count(DISTINCT doc_id), count(*) FROM {} GROUP BY term ORDER BY term"
            ).format(n.terms)
        ).fetchall()
    assert kept == counted
