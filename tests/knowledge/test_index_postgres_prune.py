"""Exact top-k BM25 with pruning (MaxScore over the terms' counts the writes keep in
``$df``): on a corpus of frequent, middling and rare words, with documents scoring alike, the
pruned search gives the unpruned query's hits (the same chunks in the same order, the same
scores) for every k, after writes that change the counts too; and it reads fewer postings
than the unpruned query does."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import numpy as np
import psycopg
import pytest
from index_contract import DIM, chunk, meta
from pg_index_support import assert_term_counts_kept
from psycopg import sql

from bastion.knowledge.index import _pg_prune
from bastion.knowledge.index import _pg_query as q
from bastion.knowledge.index._pg_write import BULK
from bastion.knowledge.index.memory import MemoryIndex
from bastion.knowledge.index.models import IndexedChunk, IndexHit
from bastion.knowledge.index.postgres import PostgresIndex

QUERIES = [
    "common rare1",
    "common often w3 rare2",
    "often w0 w1",
    "w7 w19 common",
    "rare1 rare2",
    "common often",
    "w2 w2 w5 w11 w23 often common rare3",
    "w29 unseen",
]


@pytest.fixture
def index(pg_dsn: str) -> Iterator[PostgresIndex]:
    found = PostgresIndex(pg_dsn, table="pruned", dim=DIM, embedder="test-embedder")
    yield found
    found.close()


def _corpus(docs: int, seed: int, prefix: str = "d") -> list[IndexedChunk]:
    """``common`` in nearly every chunk, ``often`` in half, ``w0``..``w29`` by a Zipf law,
    ``rare1``..``rare3`` in a few documents; every fifth document a copy of another (ties)."""
    rng = np.random.default_rng(seed)
    weights = 1 / np.arange(1, 31)
    weights /= weights.sum()
    texts: list[list[str]] = []
    for i in range(docs):
        if i % 5 == 4:
            texts.append(texts[i - 3])  # a copy: the same score
            continue
        parts = []
        for _ in range(int(rng.integers(1, 4))):
            words = [f"w{w}" for w in rng.choice(30, size=int(rng.integers(3, 15)), p=weights)]
            if rng.random() < 0.95:
                words.append("common")
            if rng.random() < 0.5:
                words += ["often"] * int(rng.integers(1, 3))
            for rare, p in (("rare1", 0.02), ("rare2", 0.05), ("rare3", 0.01)):
                if rng.random() < p:
                    words.append(rare)
            parts.append(" ".join(words))
        texts.append(parts)
    return [
        chunk(f"{prefix}{i}-{j}", meta(f"{prefix}{i}"), text, seq=j)
        for i, parts in enumerate(texts)
        for j, text in enumerate(parts)
    ]


def _hits(found: list[IndexHit]) -> list[tuple[str, float]]:
    return [(h.chunk.chunk_id, h.score) for h in found]


def _compare(index: PostgresIndex, monkeypatch: pytest.MonkeyPatch) -> int:
    """Pruned against unpruned for every query and several k; the number of hits compared."""
    compared = 0
    for text in QUERIES:
        for k in (1, 2, 3, 5, 10, 25, 200):
            monkeypatch.setattr(_pg_prune, "PRUNE_FROM", 10**12)
            whole = _hits(index.search_keyword(text, k))
            monkeypatch.setattr(_pg_prune, "PRUNE_FROM", 0)
            monkeypatch.setattr(_pg_prune, "PROBE_COST", 0)  # prune whenever it can
            pruned = _hits(index.search_keyword(text, k))
            assert pruned == whole, (text, k)  # same chunks, same order, same float scores
            compared += len(whole)
    return compared


def test_pruned_bm25_gives_the_unpruned_hits_ties_included(
    index: PostgresIndex, monkeypatch: pytest.MonkeyPatch
) -> None:
    index.upsert(_corpus(400, 1))
    assert _compare(index, monkeypatch) > 500
    top = index.search_keyword("common often", 10)
    assert len({round(h.score, 12) for h in top}) < len(top)  # the copies tie
    memory = MemoryIndex()
    memory.upsert(_corpus(400, 1))
    for text in QUERIES:  # and both rank as the embedded index does
        want = {h.chunk.chunk_id: h.score for h in memory.search_keyword(text, 1000)}
        got = {h.chunk.chunk_id: h.score for h in index.search_keyword(text, 1000)}
        assert got == pytest.approx(want, rel=1e-5)


def test_pruned_bm25_follows_the_counts_through_writes(
    index: PostgresIndex, pg_dsn: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    index.upsert(_corpus(300, 2))
    index.upsert(_corpus(40, 3, prefix="e")[:50])  # a small write beside the bulk load
    index.delete_documents([f"d{i}" for i in range(0, 300, 7)])
    replaced = _corpus(20, 4, prefix="d")  # documents d0..d19 written again, other words
    index.replace_documents([f"d{i}" for i in range(20)], replaced)
    index.upsert([chunk("d21-0", meta("e1"), "rare1 rare1 common")])  # a chunk changes document
    assert _compare(index, monkeypatch) > 300
    assert_term_counts_kept(index, pg_dsn)
    more = [  # a bulk load whose chunks join documents that keep their chunks
        chunk(f"x{i}", meta(f"d{i % 290}"), f"rare3 w{i % 30} often", seq=10 + i // 290)
        for i in range(BULK)
    ]
    index.upsert(more)
    assert _compare(index, monkeypatch) > 300
    assert_term_counts_kept(index, pg_dsn)


def test_pruning_reads_fewer_postings(
    index: PostgresIndex, pg_dsn: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Run in one transaction of a connection of the test's own, whose statistics of what the
    posting index returned are read before and after."""
    index.upsert(_corpus(600, 5))
    term_index = index.names.index("terms_term").as_string()
    params = {"name": index.table, "terms": ["common", "often", "rare1"], "k": 10}
    params |= {"k1": 1.5, "b": 0.75}
    read: dict[str, Any] = {}
    with psycopg.connect(pg_dsn) as conn, conn.cursor(binary=True) as cur:
        cur.execute("SET plan_cache_mode = force_custom_plan")

        def returned() -> int:
            cur.execute("SELECT pg_stat_get_xact_tuples_returned(to_regclass(%s))", [term_index])
            row = cur.fetchone()
            assert row is not None
            return int(row[0])

        start = returned()
        cur.execute(q.bm25_query(index.names, q.Where()), params)
        whole = cur.fetchall()
        read["whole"] = returned() - start
        start = returned()
        monkeypatch.setattr(_pg_prune, "PRUNE_FROM", 0)
        monkeypatch.setattr(_pg_prune, "PROBE_COST", 0)
        pruned = _pg_prune.search(cur, index.names, params)
        read["pruned"] = returned() - start
    assert [(r[0], r[-1]) for r in pruned] == [(r[0], r[-1]) for r in whole]
    assert read["pruned"] * 5 < read["whole"], read  # rare1's postings, not common's


def test_the_counts_of_a_format_3_index_are_made_on_open(pg_dsn: str) -> None:
    first = PostgresIndex(pg_dsn, table="old", dim=DIM, embedder="test-embedder")
    first.upsert(_corpus(50, 6))
    want = _hits(first.search_keyword("common rare2 w3", 10))
    names = first.names
    first.close()
    with psycopg.connect(pg_dsn) as conn:  # as format 3 left it: no $df table
        conn.execute(sql.SQL("DROP TABLE {}").format(names.df))
        conn.execute('UPDATE "bastion$indexes" SET format = 3')
    again = PostgresIndex(pg_dsn, table="old", dim=DIM, embedder="test-embedder")
    try:
        assert _hits(again.search_keyword("common rare2 w3", 10)) == want
        with psycopg.connect(pg_dsn) as conn:
            row = conn.execute('SELECT format FROM "bastion$indexes"').fetchone()
            df = conn.execute(
                sql.SQL("SELECT docs, chunks FROM {} WHERE term = 'common'").format(names.df)
            ).fetchone()
            counted = conn.execute(
                sql.SQL(
                    "SELECT count(DISTINCT doc_id), count(*) FROM {} WHERE term = 'common'"
                ).format(names.terms)
            ).fetchone()
        assert row == (4,)
        assert df == counted
    finally:
        again.close()
