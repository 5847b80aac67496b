"""A bulk load of the PostgreSQL index drops the postings' two B-tree indexes and builds them
after its ``COPY``, in the write's transaction: it ranks exactly as row-by-row writes do, the
indexes are there after it, a load that fails or whose process is killed mid-``COPY`` leaves the
index as it was (indexes included, so no later write can duplicate a posting), and an open
builds again an index dropped by hand."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
from collections.abc import Iterator

import numpy as np
import psycopg
import pytest
from index_contract import DIM, chunk, meta, random_unit
from psycopg import sql

from bastion.core.errors import StoreError
from bastion.knowledge.index._pg_write import BULK
from bastion.knowledge.index.analysis import Analyzer
from bastion.knowledge.index.models import IndexedChunk
from bastion.knowledge.index.postgres import PostgresIndex

EMBEDDER = "test-embedder"
QUERIES = ["w1", "w2 w3", "shared", "rare w0 w11", "shared rare w5 w7", "w4 w4 w9"]


class _PoisonAnalyzer(Analyzer):
    """Emits a NUL term (which PostgreSQL text refuses) for a chunk saying ``poison``: the
    postings' ``COPY`` fails halfway, after the indexes were dropped."""

    def analyze(self, text: str) -> list[str]:
        terms = super().analyze(text)
        return [*terms, "bad\x00term"] if "poison" in text else terms


@pytest.fixture
def opened() -> Iterator[list[PostgresIndex]]:
    found: list[PostgresIndex] = []
    yield found
    for index in found:
        index.close()


def _open(
    opened: list[PostgresIndex], dsn: str, table: str, analyzer: Analyzer | None = None
) -> PostgresIndex:
    index = PostgresIndex(dsn, table=table, dim=DIM, embedder=EMBEDDER, analyzer=analyzer)
    opened.append(index)
    return index


def _corpus(n: int, prefix: str = "c") -> list[IndexedChunk]:
    """``n`` chunks over ``n // 3`` documents: frequent words, a rare one, repeated texts."""
    rng = np.random.default_rng(7)
    words = [f"w{i}" for i in range(12)]
    out = []
    for i in range(n):
        picked = list(rng.choice(words, size=int(rng.integers(3, 12))))
        if i % 5 == 0:
            picked.append("shared")
        if i % 97 == 0:
            picked.append("rare")
        text = " ".join(picked) if i % 50 else "w1 w2 shared"  # exact ties
        doc = meta(f"{prefix}d{i // 3}")
        out.append(chunk(f"{prefix}{i}", doc, text, seq=i % 3, vector=random_unit(f"{i}")))
    return out


def _ranked(index: PostgresIndex) -> list[list[tuple[str, float]]]:
    return [[(h.chunk.chunk_id, h.score) for h in index.search_keyword(q, 25)] for q in QUERIES]


def _same(a: list[list[tuple[str, float]]], b: list[list[tuple[str, float]]]) -> bool:
    """The same chunks in the same order, the scores equal but for the last bits (SQL's sums
    add the same terms in the order the rows come, which differs between layouts on disk)."""
    return [[c for c, _ in hits] for hits in a] == [[c for c, _ in hits] for hits in b] and all(
        x == pytest.approx(y, rel=1e-12)
        for p, q in zip(a, b, strict=True)
        for (_, x), (_, y) in zip(p, q, strict=True)
    )


def _terms_indexes(dsn: str, index: PostgresIndex) -> dict[str, str]:
    """The postings table's indexes: name (without the table's) -> definition, the primary
    key marked as a constraint."""
    terms = index.names.terms.as_string()
    with psycopg.connect(dsn) as conn:
        rows = conn.execute(
            """SELECT i.indexrelid::regclass::text, pg_get_indexdef(i.indexrelid),
                      EXISTS (SELECT 1 FROM pg_constraint k
                              WHERE k.conindid = i.indexrelid AND k.contype = 'p')
               FROM pg_index i WHERE i.indrelid = to_regclass(%s)""",
            [terms],
        ).fetchall()
    table = index.names.physical
    return {
        str(name).strip('"').replace(table, "T"): str(definition)
        .replace(terms, "T$terms")
        .replace(table, "T")
        + (" [primary key]" if primary else "")
        for name, definition, primary in rows
    }


EXPECTED_INDEXES = {
    "T$terms_pk": 'CREATE UNIQUE INDEX "T$terms_pk" ON public.T$terms USING btree (rid, term)'
    " [primary key]",
    "T$terms_term": 'CREATE INDEX "T$terms_term" ON public.T$terms USING btree (term) '
    "INCLUDE (rid, doc_id, tf, length)",
}


def _postings(dsn: str, index: PostgresIndex) -> int:
    with psycopg.connect(dsn) as conn:
        row = conn.execute(sql.SQL("SELECT count(*) FROM {}").format(index.names.terms)).fetchone()
    assert row is not None
    return int(row[0])


def test_a_bulk_load_ranks_as_row_by_row_writes_and_keeps_its_indexes(
    pg_dsn: str, opened: list[PostgresIndex]
) -> None:
    chunks = _corpus(BULK + 200)
    bulk = _open(opened, pg_dsn, "bulk")
    bulk.upsert(chunks)  # one bulk load: indexes dropped, built after the COPY
    rows = _open(opened, pg_dsn, "rows")
    for start in range(0, len(chunks), 100):  # each batch below BULK: indexes kept up
        rows.upsert(chunks[start : start + 100])
    assert _terms_indexes(pg_dsn, bulk) == EXPECTED_INDEXES
    assert _terms_indexes(pg_dsn, rows) == EXPECTED_INDEXES
    assert _postings(pg_dsn, bulk) == _postings(pg_dsn, rows)
    assert _same(_ranked(bulk), _ranked(rows))  # same chunks, same order, same scores
    assert all(_ranked(bulk))
    # a second bulk load over the first (replacing every chunk) builds them again
    bulk.upsert(chunks)
    assert _terms_indexes(pg_dsn, bulk) == EXPECTED_INDEXES
    assert _same(_ranked(bulk), _ranked(rows))
    assert bulk.count() == rows.count() == len(chunks)


def test_a_bulk_load_that_fails_mid_copy_leaves_the_index_as_it_was(
    pg_dsn: str, opened: list[PostgresIndex]
) -> None:
    index = _open(opened, pg_dsn, "poisoned", _PoisonAnalyzer())
    index.upsert(_corpus(30, "old"))
    before, postings = _ranked(index), _postings(pg_dsn, index)
    load = _corpus(BULK + 50)
    load[-1] = chunk("last", meta("last"), "w1 poison", vector=random_unit("last"))
    with pytest.raises(StoreError, match="poisoned"):
        index.upsert(load)  # fails in the postings' COPY, after the indexes were dropped
    assert _terms_indexes(pg_dsn, index) == EXPECTED_INDEXES
    assert index.count() == 30
    assert _postings(pg_dsn, index) == postings
    assert _ranked(index) == before
    index.upsert(load[:-1])  # the next bulk load goes through
    assert index.count() == 30 + BULK + 49
    assert _terms_indexes(pg_dsn, index) == EXPECTED_INDEXES


_LOADER = textwrap.dedent(
    """
    import sys
    sys.path.insert(0, sys.argv[2])
    from index_contract import chunk, meta, random_unit
    from bastion.knowledge.index.postgres import PostgresIndex

    index = PostgresIndex(sys.argv[1], table="killed", dim=8, embedder="test-embedder")
    words = " ".join(f"w{i} x{i} y{i} z{i}" for i in range(60))
    index.upsert([
        chunk(f"k{i}", meta(f"kd{i // 3}"), f"{words} u{i}", vector=random_unit(str(i)))
        for i in range(12000)
    ])
    """
)


def test_a_bulk_load_killed_mid_copy_leaves_the_index_as_it_was(
    pg_dsn: str, opened: list[PostgresIndex]
) -> None:
    index = _open(opened, pg_dsn, "killed")
    index.upsert(_corpus(30, "old"))
    before, postings = _ranked(index), _postings(pg_dsn, index)
    tests = os.path.dirname(os.path.abspath(__file__))
    loader = subprocess.Popen([sys.executable, "-c", _LOADER, pg_dsn, tests])
    try:
        backend = _wait_for_the_postings_copy(pg_dsn, index, loader)
        os.kill(loader.pid, signal.SIGKILL)  # the client dies mid-COPY, indexes dropped
        loader.wait(timeout=30)
        _wait_for_backend_exit(pg_dsn, backend)
    finally:
        if loader.poll() is None:
            loader.kill()
            loader.wait()
    assert _terms_indexes(pg_dsn, index) == EXPECTED_INDEXES
    assert index.count() == 30
    assert _postings(pg_dsn, index) == postings
    assert _ranked(index) == before
    reopened = _open(opened, pg_dsn, "killed")
    reopened.upsert(_corpus(BULK, "new"))
    assert reopened.count() == 30 + BULK
    assert _terms_indexes(pg_dsn, index) == EXPECTED_INDEXES


def _wait_for_the_postings_copy(
    dsn: str, index: PostgresIndex, loader: subprocess.Popen[bytes]
) -> int:
    """The backend pid of the loader once it is copying into the postings table."""
    with psycopg.connect(dsn, autocommit=True) as conn:
        for _ in range(6000):
            row = conn.execute(
                "SELECT pid FROM pg_stat_progress_copy WHERE relid = to_regclass(%s)",
                [index.names.terms.as_string()],
            ).fetchone()
            if row is not None:
                return int(row[0])
            assert loader.poll() is None, "the load ended before its postings' COPY was seen"
            time.sleep(0.01)
    raise AssertionError("the postings' COPY never started")


def _wait_for_backend_exit(dsn: str, pid: int) -> None:
    with psycopg.connect(dsn, autocommit=True) as conn:
        for _ in range(3000):
            if conn.execute("SELECT 1 FROM pg_stat_activity WHERE pid = %s", [pid]).fetchone():
                time.sleep(0.01)
                continue
            return
    raise AssertionError("the killed loader's backend did not end")


def test_an_open_builds_again_the_postings_indexes_dropped_by_hand(
    pg_dsn: str, opened: list[PostgresIndex]
) -> None:
    index = _open(opened, pg_dsn, "repaired")
    index.upsert(_corpus(60))
    before = _ranked(index)
    index.close()
    opened.remove(index)
    n = index.names
    with psycopg.connect(pg_dsn) as conn:
        conn.execute(
            sql.SQL("ALTER TABLE {} DROP CONSTRAINT {}").format(n.terms, n.index("terms_pk"))
        )
        conn.execute(sql.SQL("DROP INDEX {}").format(n.index("terms_term")))
    reopened = _open(opened, pg_dsn, "repaired")
    assert _terms_indexes(pg_dsn, reopened) == EXPECTED_INDEXES
    assert _ranked(reopened) == before
    with psycopg.connect(pg_dsn) as conn, pytest.raises(psycopg.errors.UniqueViolation):
        conn.execute(  # the primary key is back: no posting twice
            sql.SQL("INSERT INTO {} SELECT * FROM {} LIMIT 1").format(n.terms, n.terms)
        )
