"""The PostgreSQL index's layout format 3: the counts BM25 needs kept by the writes, not
recounted by each search. The registry row's chunk count, document count and total length,
the ``$docs`` table of document lengths and the document of every posting stay equal to what
the chunks say after every kind of write, with two writers in two connections at once; the
unfiltered BM25 ranks as the embedded index does, reading neither a chunk per posting nor the
chunks of a matching document; a filtered search still counts only the chunks it admits; an
index of the previous format is refused with the way to rebuild it."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from typing import Any

import numpy as np
import psycopg
import pytest
from index_contract import DIM, chunk, ids, meta
from pg_index_support import assert_term_counts_kept
from psycopg import sql

from bastion.core.errors import ConfigurationError
from bastion.knowledge.index import _pg_query as q
from bastion.knowledge.index.memory import MemoryIndex
from bastion.knowledge.index.models import IndexedChunk, IndexFilter
from bastion.knowledge.index.port import Index
from bastion.knowledge.index.postgres import PostgresIndex

EMBEDDER = "test-embedder"
WORDS = [f"w{i}" for i in range(12)] + ["shared", "rare"]


@pytest.fixture
def opened() -> Iterator[list[PostgresIndex]]:
    found: list[PostgresIndex] = []
    yield found
    for index in found:
        index.close()


def _open(opened: list[PostgresIndex], dsn: str, table: str = "chunks") -> PostgresIndex:
    index = PostgresIndex(dsn, table=table, dim=DIM, embedder=EMBEDDER)
    opened.append(index)
    return index


def _assert_counts_exact(dsn: str, index: PostgresIndex) -> None:
    """The kept statistics equal those counted from the chunks themselves."""
    n = index.names
    with psycopg.connect(dsn) as conn:
        kept = conn.execute(
            sql.SQL("SELECT chunks, docs, total_len FROM {} WHERE name = %s").format(n.registry),
            [index.table],
        ).fetchone()
        counted = conn.execute(
            sql.SQL(
                "SELECT count(*), count(DISTINCT doc_id), coalesce(sum(length), 0) FROM {}"
            ).format(n.chunks)
        ).fetchone()
        assert kept == counted
        lengths = dict(
            conn.execute(
                sql.SQL("SELECT doc_id, sum(length) FROM {} GROUP BY doc_id").format(n.chunks)
            ).fetchall()
        )
        assert dict(conn.execute(sql.SQL("SELECT doc_id, length FROM {}").format(n.docs))) == (
            lengths
        )
        astray = conn.execute(
            sql.SQL(
                "SELECT count(*) FROM {} p LEFT JOIN {} c ON c.rid = p.rid "
                "WHERE c.doc_id IS DISTINCT FROM p.doc_id"
            ).format(n.terms, n.chunks)
        ).fetchone()
        assert astray == (0,)  # every posting names its chunk's document, no orphan posting
    assert set(index.documents()) == set(lengths)
    assert_term_counts_kept(index, dsn)  # each term's documents and chunks, kept by the writes


def _same_scores(pg: Index, memory: Index, flt: IndexFilter | None = None) -> None:
    for text in ["w1", "w2 w3 w3", "shared", "rare w0 w11", "shared rare w5"]:
        want = {h.chunk.chunk_id: h.score for h in memory.search_keyword(text, 1000, flt)}
        got = {h.chunk.chunk_id: h.score for h in pg.search_keyword(text, 1000, flt)}
        assert got == pytest.approx(want, rel=1e-5)


def _text(rng: np.random.Generator) -> str:
    return " ".join(rng.choice(WORDS, size=int(rng.integers(1, 25))))


def test_counts_follow_every_kind_of_write(pg_dsn: str, opened: list[PostgresIndex]) -> None:
    pg, memory = _open(opened, pg_dsn), MemoryIndex()
    rng = np.random.default_rng(5)
    docs = {f"d{i}": meta(f"d{i}") for i in range(6)}
    first = [chunk(f"c{i}", docs[f"d{i % 6}"], _text(rng), seq=i // 6) for i in range(18)]
    writes: list[tuple[str, Any]] = [
        ("upsert", first),
        # a chunk id moves to another document: both documents change, d0 keeps two chunks
        ("upsert", [chunk("c0", docs["d5"], "rare rare shared", seq=9)]),
        # a document loses chunks, another is replaced by nothing (it is gone)
        ("replace", (["d1"], [chunk("c1", docs["d1"], "w1 w1 shared")])),
        ("replace", (["d2"], [])),
        # a replacement that takes a chunk id from another document
        ("replace", (["d3"], [chunk("c4", docs["d3"], "w4 rare", seq=0)])),
        ("delete", ["d4", "nowhere"]),
        ("upsert", [chunk("n0", meta("new"), "shared w0")]),
        ("delete", ["d0", "d1", "d3", "d5"]),
    ]
    for kind, args in writes:
        for index in (pg, memory):
            if kind == "upsert":
                index.upsert(args)
            elif kind == "replace":
                index.replace_documents(*args)
            else:
                index.delete_documents(args)
        _assert_counts_exact(pg_dsn, pg)
        assert set(pg.documents()) == set(memory.documents())
        assert pg.count() == memory.count()
        _same_scores(pg, memory)
    assert set(pg.documents()) == {"new"}
    pg.clear()
    _assert_counts_exact(pg_dsn, pg)
    assert pg.search_keyword("shared", 5) == []


def test_two_writers_in_two_connections_keep_the_counts(
    pg_dsn: str, opened: list[PostgresIndex]
) -> None:
    """Two instances (each its own connections) write the same documents at once: upserts,
    replacements, removals. The counts end exact, and the index ranks as one written alone."""
    writers = [_open(opened, pg_dsn), _open(opened, pg_dsn)]
    failures: list[BaseException] = []
    start = threading.Barrier(len(writers))

    def write(index: PostgresIndex, seed: int) -> None:
        rng = np.random.default_rng(seed)
        try:
            start.wait()
            for step in range(40):
                doc = meta(f"d{int(rng.integers(0, 8))}")
                made = [
                    chunk(f"{doc.doc_id}-{j}", doc, _text(rng), seq=j)
                    for j in range(int(rng.integers(1, 4)))
                ]
                kind = step % 4
                if kind == 0:
                    index.upsert(made)
                elif kind == 1:
                    index.replace_documents([doc.doc_id], made)
                elif kind == 2:
                    index.delete_documents([doc.doc_id, f"d{int(rng.integers(0, 8))}"])
                else:  # a chunk id of one document written into another
                    index.upsert([chunk("d0-0", doc, _text(rng))])
        except BaseException as exc:  # reported by the test, in its own thread
            failures.append(exc)

    threads = [threading.Thread(target=write, args=(w, i)) for i, w in enumerate(writers)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert failures == []
    _assert_counts_exact(pg_dsn, writers[0])
    memory = MemoryIndex()  # the same chunks written once, by one writer
    every = [c for d in writers[0].documents() for c in writers[0].chunks_of(d)]
    assert every
    memory.upsert(every)
    _same_scores(writers[1], memory)


def test_filtered_statistics_count_only_the_admitted_chunks(
    pg_dsn: str, opened: list[PostgresIndex]
) -> None:
    """A filter admitting some documents, and only some chunks of one (by section): scores
    and shared statistics are those of an index holding only what the filter admits."""
    rng = np.random.default_rng(8)
    chunks: list[IndexedChunk] = []
    for i in range(12):
        doc = meta(f"d{i}", tenant="acme" if i % 3 else "globex")
        for j in range(3):
            section = "Public" if j < 2 else "Hidden"
            chunks.append(chunk(f"d{i}-{j}", doc, _text(rng), seq=j, section=section))
    pg = _open(opened, pg_dsn)
    pg.upsert(chunks)
    filters = [
        IndexFilter(tenant="acme"),
        IndexFilter(section="Public"),  # part of every document: its length is its part's
        IndexFilter(access=lambda m: m.doc_id in {"d1", "d2", "d7"}, access_key="three"),
    ]
    for flt in filters:
        admitted = MemoryIndex()
        admitted.upsert([c for c in chunks if flt.admits(c.doc) and flt.admits_section(c.section)])
        _same_scores(pg, admitted, flt)
        for text in ["shared", "rare w0 w11"]:
            assert pg.keyword_statistics(text, flt) == admitted.keyword_statistics(text)
    everything = MemoryIndex()
    everything.upsert(chunks)
    _same_scores(pg, everything)
    assert pg.keyword_statistics("shared rare", None) == everything.keyword_statistics(
        "shared rare"
    )


def test_the_unfiltered_plan_reads_no_chunk_per_posting(
    pg_dsn: str, opened: list[PostgresIndex]
) -> None:
    """The unfiltered BM25 statement reads the postings, the document lengths and the registry
    row, and the chunks table once: for the k rows it returns."""
    pg = _open(opened, pg_dsn)
    rng = np.random.default_rng(2)
    pg.upsert([chunk(f"c{i}", meta(f"d{i // 3}"), _text(rng), seq=i % 3) for i in range(60)])
    params = {"name": pg.table, "terms": ["shared", "w1"], "k1": 1.5, "b": 0.75, "k": 5}
    with psycopg.connect(pg_dsn) as conn:
        statement = sql.SQL("EXPLAIN (FORMAT JSON) {}").format(q.bm25_query(pg.names, q.Where()))
        plan = conn.execute(statement, params).fetchone()
    assert plan is not None
    scanned: list[str] = []

    def walk(node: dict[str, Any]) -> None:
        if "Relation Name" in node:
            scanned.append(node["Relation Name"])
        for child in node.get("Plans", []):
            walk(child)

    walk(plan[0][0]["Plan"] if isinstance(plan[0], list) else json.loads(plan[0])[0]["Plan"])
    assert sorted(scanned) == sorted(["bastion$indexes", "chunks$terms", "chunks$docs", "chunks"])


def test_an_index_of_the_previous_format_is_refused(
    pg_dsn: str, opened: list[PostgresIndex]
) -> None:
    """A format-2 index (its registry without the document count) is refused with the way to
    rebuild it; other indexes of the database open, and the registry gains its column."""
    _open(opened, pg_dsn).upsert([chunk("c", meta("d"))])
    with psycopg.connect(pg_dsn) as conn:
        conn.execute('ALTER TABLE "bastion$indexes" DROP COLUMN docs')
        conn.execute('UPDATE "bastion$indexes" SET format = 2')
    with pytest.raises(ConfigurationError, match="format: 2 != 4") as err:
        _open(opened, pg_dsn)
    assert "rebuild" in str(err.value)
    other = _open(opened, pg_dsn, table="other")
    other.upsert([chunk("o", meta("o"), "other words")])
    _assert_counts_exact(pg_dsn, other)
    assert PostgresIndex.drop(pg_dsn)
    again = _open(opened, pg_dsn)
    again.upsert([chunk("c", meta("d"), "rebuilt words")])
    assert ids(again.search_keyword("rebuilt", 5)) == ["c"]
    _assert_counts_exact(pg_dsn, again)


def test_the_k_best_are_the_first_k_of_the_full_ranking_ties_included(
    pg_dsn: str, opened: list[PostgresIndex]
) -> None:
    """Only the chunks of the best documents are scored; with documents scoring alike (ties
    broken by write order) every k still gets the first k hits of the whole ranking."""
    pg, memory = _open(opened, pg_dsn), MemoryIndex()
    chunks = []
    for i in range(6):  # six documents alike, then two that differ
        chunks += [
            chunk(f"t{i}-0", meta(f"t{i}"), "alpha beta", seq=0),
            chunk(f"t{i}-1", meta(f"t{i}"), "alpha", seq=1),
        ]
    chunks += [chunk("u-0", meta("u"), "alpha alpha beta"), chunk("v-0", meta("v"), "beta")]
    for index in (pg, memory):
        index.upsert(chunks)
    for text in ["alpha", "alpha beta", "beta"]:
        whole = pg.search_keyword(text, 100)
        want = {h.chunk.chunk_id: h.score for h in memory.search_keyword(text, 100)}
        assert {h.chunk.chunk_id: h.score for h in whole} == pytest.approx(want, rel=1e-5)
        for k in range(1, len(whole) + 1):
            assert ids(pg.search_keyword(text, k)) == ids(whole[:k])
            flt = IndexFilter(tenant="none")  # the filtered statement cuts alike
            assert (
                ids(pg.search_keyword(text, k, flt)) == ids(pg.search_keyword(text, 100, flt))[:k]
            )
