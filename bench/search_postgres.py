"""SciFact: the PostgreSQL index next to the embedded one, same chunks, same run, same machine.

Both indexes receive the very same chunks (and vectors): the corpus goes through Bastion's
ingest pipeline once (parse, chunk, and embed through the embedding cache that
``bench/search_scifact.py`` fills, ``bench/results/cache``), then into a
:class:`~bastion.knowledge.index.memory.MemoryIndex` and into
:class:`~bastion.knowledge.index.postgres.PostgresIndex` tables on a PostgreSQL started with
pgserver in a temporary folder (stopped and removed at the end).

Reported per index and mode (bm25, PostgreSQL's ``ts_rank_cd``, vector, hybrid = weighted
fusion, alpha 0.5, of the best 100 of each, as ``Knowledge.search`` does):

* quality: nDCG@10, Recall@10/100, MRR@10 (``bastion.knowledge.eval``), documents ranked by
  their best chunk;
* latency p50 / p99 (ms) of the index calls alone, one query at a time, k = 100 (query
  analysis included; query embedding excluded: every query is embedded before timing);
* load time of the same chunks into each index;
* BM25 agreement: queries whose top 10 are the same in both indexes, largest score gap;
* ACL-filtered search (a role held by half the corpus) against unfiltered, on both indexes,
  with a count of hits the role may not read and of searches that returned fewer than k.

Run: ``.venv/bin/python bench/search_postgres.py`` (``--limit N`` for the first N documents,
``--no-dense`` for the keyword part only). Results go to ``bench/results/search_postgres-*``.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import shutil
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from _report import save_report  # noqa: E402
from _scifact import CORPUS_FILE, DEFAULT_DIR, doc_scores, p50_p99_ms  # noqa: E402
from bastion.knowledge.engine import FileToIndex, Knowledge  # noqa: E402
from bastion.knowledge.eval import describe_machine, evaluate, load_dataset  # noqa: E402
from bastion.knowledge.index import fusion  # noqa: E402
from bastion.knowledge.index.memory import MemoryIndex  # noqa: E402
from bastion.knowledge.index.models import IndexedChunk, IndexFilter, IndexHit  # noqa: E402
from bastion.knowledge.index.port import Index  # noqa: E402
from bastion.knowledge.index.postgres import PostgresIndex  # noqa: E402

RESULTS = HERE / "results"
K = 100

Search = Callable[[str, np.ndarray | None], list[IndexHit]]


def run_queries(search: Search, queries: dict[str, str], vectors: dict[str, np.ndarray] | None):
    """Time ``search`` on every query (after one warm-up call); return rankings, latencies and
    the raw hits."""
    first = next(iter(queries))
    search(queries[first], None if vectors is None else vectors[first])
    rankings, lat, raw = {}, [], {}
    for qid, text in queries.items():
        vec = None if vectors is None else vectors[qid]
        t0 = time.perf_counter()
        hits = search(text, vec)
        lat.append(time.perf_counter() - t0)
        rankings[qid] = doc_scores(((h.chunk.doc.path, h.score) for h in hits), K)
        raw[qid] = hits
    return rankings, lat, raw


def row(name: str, mode: str, rankings, qrels, lat, extra: str = "") -> str:
    ev = evaluate(rankings, qrels)
    p50, p99 = p50_p99_ms(lat)
    return (
        f"| {name} | {mode} | {ev.ndcg_at_10:.4f} | {ev.recall_at_10:.4f} | "
        f"{ev.recall_at_100:.4f} | {ev.mrr_at_10:.4f} | {p50:.2f} | {p99:.2f} | {extra} |"
    )


async def chunk_corpus(corpus: dict[str, tuple[str, str]]) -> tuple[list[IndexedChunk], float]:
    """The corpus through Bastion's ingest pipeline (as a workspace indexes its files)."""
    files = []
    for doc_id, (title, text) in corpus.items():
        body = f"# {title}\n\n{text}\n" if title else f"{text}\n"
        files.append(FileToIndex(f"/scifact/{doc_id}.md", body.encode("utf-8")))
    memory = MemoryIndex()
    kb = Knowledge(memory, embedder=None)
    t0 = time.perf_counter()
    results = await kb.index_files(files)
    took = time.perf_counter() - t0
    bad = [r for r in results if not isinstance(r, int)]
    assert not bad, bad[:3]
    chunks = [c for doc_id in sorted(memory.documents()) for c in memory.chunks_of(doc_id)]
    return chunks, took


async def embed(chunks: list[IndexedChunk], queries: dict[str, str], cache: Path):
    from bastion.knowledge.embedders.cache import CachedEmbedder, EmbeddingCache
    from bastion.knowledge.embedders.local import LocalEmbedder

    model = CachedEmbedder(LocalEmbedder(), EmbeddingCache(cache / "embeddings.sqlite"))
    t0 = time.perf_counter()
    vectors = await model.embed([c.text for c in chunks])
    qvecs = await model.embed(list(queries.values()))
    took = time.perf_counter() - t0
    with_vectors = [replace(c, vector=v) for c, v in zip(chunks, vectors, strict=True)]
    return with_vectors, dict(zip(queries, qvecs, strict=True)), model, took


def load(index: Index, chunks: list[IndexedChunk], dsn: str | None = None) -> float:
    """Load time of one bulk upsert; for a PostgreSQL index then ``VACUUM``, as autovacuum
    does soon after a bulk load (it sets the visibility map that index-only scans of the
    postings need), outside the time."""
    t0 = time.perf_counter()
    index.upsert(chunks)
    took = time.perf_counter() - t0
    if dsn is not None and isinstance(index, PostgresIndex):
        import psycopg
        from psycopg import sql

        with psycopg.connect(dsn, autocommit=True) as conn:
            conn.execute(sql.SQL("VACUUM (ANALYZE) {}").format(index.names.chunks))
            conn.execute(sql.SQL("VACUUM (ANALYZE) {}").format(index.names.terms))
    return took


def bm25_agreement(a: dict[str, list[IndexHit]], b: dict[str, list[IndexHit]]) -> str:
    same, gap = 0, 0.0
    for qid, hits in a.items():
        top_a = [h.chunk.chunk_id for h in hits[:10]]
        top_b = [h.chunk.chunk_id for h in b[qid][:10]]
        same += top_a == top_b
        scores_b = {h.chunk.chunk_id: h.score for h in b[qid]}
        for h in hits[:10]:
            if h.chunk.chunk_id in scores_b:
                gap = max(gap, abs(h.score - scores_b[h.chunk.chunk_id]) / max(h.score, 1e-9))
    return (
        f"BM25 agreement, PostgreSQL vs MemoryIndex: identical top 10 on {same}/{len(a)} "
        f"queries; largest relative score difference in a top 10: {gap:.2e}"
    )


def acl_rows(
    memory: Index, pg: Index, queries, vectors, qrels, out: list[str], notes: list[str]
) -> str:
    """Half the corpus readable by role "a": filtered against unfiltered, both indexes."""
    flt = IndexFilter(roles=frozenset({"a"}))
    filtered_bm25: list[dict[str, list[IndexHit]]] = []
    for name, index in (("MemoryIndex", memory), ("PostgresIndex", pg)):
        for mode, call in (
            ("bm25", lambda t, v, f, ix=index: ix.search_keyword(t, K, f)),
            ("vector", lambda t, v, f, ix=index: ix.search_vector(v, K, f)),
        ):
            _, plain, _ = run_queries(lambda t, v, c=call: c(t, v, None), queries, vectors)
            _, lat, raw = run_queries(lambda t, v, c=call: c(t, v, flt), queries, vectors)
            if mode == "bm25":
                filtered_bm25.append(raw)
            leaks = sum(1 for hits in raw.values() for h in hits if h.chunk.doc.roles != {"a"})
            short = sum(1 for hits in raw.values() if len(hits) < K)
            p_plain, f_lat = p50_p99_ms(plain)[0], p50_p99_ms(lat)[0]
            notes.append(
                f"| {name} | {mode} | {p_plain:.2f} | {f_lat:.2f} | {f_lat / p_plain:.2f}x "
                f"| {leaks} | {short} |"
            )
    return bm25_agreement(*filtered_bm25).replace("BM25 agreement", "BM25 agreement (filtered)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=DEFAULT_DIR)
    parser.add_argument("--limit", type=int, default=0, help="only the first N documents")
    parser.add_argument("--no-dense", action="store_true", help="keyword part only")
    parser.add_argument("--cache", type=Path, default=RESULTS / "cache")
    args = parser.parse_args()

    import pgserver

    started = time.perf_counter()
    load_start = os.getloadavg()[0]
    test = load_dataset(args.data, split="test")
    corpus = {d.doc_id: (d.title, d.text) for d in test.iter_corpus()}
    if args.limit:
        corpus = dict(list(corpus.items())[: args.limit])
    queries, qrels = dict(test.queries), test.qrels
    chunks, chunk_time = asyncio.run(chunk_corpus(corpus))
    out = [
        f"SciFact: {len(corpus)} documents ({len(chunks)} chunks), {len(queries)} test queries"
        f"{' (--limit)' if args.limit else ''}; machine: {describe_machine()}",
        "",
        "| index | mode | nDCG@10 | R@10 | R@100 | MRR@10 | p50 ms | p99 ms | load |",
        "|---|---|---:|---:|---:|---:|---:|---:|---|",
    ]
    notes: list[str] = [f"\nparse + chunk (once, shared): {chunk_time:.1f} s"]

    folder = Path(tempfile.mkdtemp(prefix="bastion-pg-bench-"))
    server = pgserver.get_server(folder / "pg", cleanup_mode="stop")
    try:
        dsn = server.get_uri()
        version = server.psql("SHOW server_version;").split("\n")[2].strip()
        notes.append(f"PostgreSQL {version} (pgserver, default settings), pgvector 0.6")

        # -- keywords first ----------------------------------------------------------------
        memory = MemoryIndex()
        mem_load = load(memory, chunks)
        pg_kw = PostgresIndex(dsn, table="scifact_kw", dim=None)
        pg_load = load(pg_kw, chunks, dsn)
        pg_fts = PostgresIndex(dsn, table="scifact_kw", dim=None, keyword_scoring="ts_rank_cd")
        r_mem, lat, raw_mem = run_queries(lambda t, v: memory.search_keyword(t, K), queries, None)
        out.append(row("MemoryIndex", "bm25", r_mem, qrels, lat, f"{mem_load:.1f} s"))
        r_pg, lat, raw_pg = run_queries(lambda t, v: pg_kw.search_keyword(t, K), queries, None)
        out.append(
            row("PostgresIndex", "bm25 (terms table, SQL)", r_pg, qrels, lat, f"{pg_load:.1f} s")
        )
        r_fts, lat, _ = run_queries(lambda t, v: pg_fts.search_keyword(t, K), queries, None)
        out.append(
            row("PostgresIndex", "ts_rank_cd (english FTS)", r_fts, qrels, lat, "same table")
        )
        notes.append(bm25_agreement(raw_mem, raw_pg))
        pg_fts.close()
        pg_kw.close()
        print("\n".join(out), flush=True)

        if not args.no_dense:
            dense, qvecs, _, embed_time = asyncio.run(embed(chunks, queries, args.cache))
            notes.append(f"embedding through the cache: {embed_time:.1f} s")
            memory = MemoryIndex()
            mem_load = load(memory, dense)
            pg = PostgresIndex(dsn, table="scifact", dim=dense[0].vector.size, embedder="bench")
            pg_load = load(pg, dense, dsn)
            for name, index, took in (
                ("MemoryIndex", memory, mem_load),
                ("PostgresIndex", pg, pg_load),
            ):
                rk, lat, _ = run_queries(
                    lambda t, v, ix=index: ix.search_vector(v, K), queries, qvecs
                )
                mode = "vector (exact)" if index is memory else "vector (HNSW m16 ef100)"
                out.append(row(name, mode, rk, qrels, lat, f"{took:.1f} s (with vectors)"))
                rk, lat, _ = run_queries(
                    lambda t, v, ix=index: fusion.weighted(
                        ix.search_keyword(t, K), ix.search_vector(v, K), alpha=0.5
                    )[:K],
                    queries,
                    qvecs,
                )
                out.append(row(name, "hybrid (weighted 0.5)", rk, qrels, lat))
            pg.close()

            # -- an ACL filter: role "a" reads half the corpus ------------------------------
            labelled = []
            for c in dense:  # by the SciFact id: odd ids for role a, even ones for role b
                m = CORPUS_FILE.search(c.doc.path)
                role = "a" if m and int(m.group(1)) % 2 else "b"
                labelled.append(replace(c, doc=replace(c.doc, roles=frozenset({role}))))
            memory_acl = MemoryIndex()
            load(memory_acl, labelled)
            pg_acl = PostgresIndex(
                dsn, table="scifact_acl", dim=dense[0].vector.size, embedder="bench"
            )
            load(pg_acl, labelled, dsn)
            notes += [
                "\nACL filter (role a reads half the corpus), k=100, p50 ms:",
                "",
                "| index | mode | unfiltered | filtered | ratio | unreadable hits | fewer than k |",
                "|---|---|---:|---:|---:|---:|---:|",
            ]
            agreement = acl_rows(memory_acl, pg_acl, queries, qvecs, qrels, out, notes)
            notes.append("\n" + agreement)
            pg_acl.close()
    finally:
        server.cleanup()
        shutil.rmtree(folder, ignore_errors=True)

    notes.append(
        f"\nwall time {time.perf_counter() - started:.0f} s; load average (1 min) at the start "
        f"{load_start:.1f}, at the end {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs"
    )
    text = "\n".join(out + notes)
    print(text)
    save_report("search_postgres", text, {"table": out, "notes": notes})


if __name__ == "__main__":
    main()
