"""PostgreSQL BM25 with and without pruning, on one loaded table, in one process.

The synthetic corpus of ``bench/scale_corpus.py`` (``--n`` documents, seed 15) is loaded once
into a keyword-only :class:`PostgresIndex` on a pgserver PostgreSQL (the settings of
``scale_corpus.start_postgres``; ``VACUUM ANALYZE`` after the load), then its queries (k = 10,
``--queries``) are timed ``--rounds`` times each way, alternating: unpruned (one statement over
every posting of the query's terms) and pruned (MaxScore over ``$df``, as searches run by
default). The hits of both must be identical (chunk ids in order, scores to the last bit).
Reported: p50/p99 of each way (median over the rounds) and the queries pruning slowed most.

Run: ``.venv/bin/python bench/pg_prune.py`` (``--n``, ``--queries``, ``--rounds``). Results go
to ``bench/results/pg_prune-*``.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np
import psycopg
from psycopg import sql

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
import scale_corpus as sc  # noqa: E402
from _report import save_report  # noqa: E402
from bastion.knowledge.eval import describe_machine  # noqa: E402
from bastion.knowledge.index import _pg_prune  # noqa: E402
from bastion.knowledge.index.postgres import PostgresIndex  # noqa: E402

UNPRUNED = 10**15  # no query holds this many postings: every search unpruned


def _no_vectors(texts: Any, ids: Any = None) -> np.ndarray:
    return np.zeros((len(texts), 1), np.float32)


def _timed(index: PostgresIndex, texts: list[str], prune_from: int) -> tuple[list[float], Any]:
    _pg_prune.PRUNE_FROM = prune_from
    took, hits = [], []
    for text in texts:
        t0 = time.perf_counter()
        found = index.search_keyword(text, sc.K)
        took.append((time.perf_counter() - t0) * 1000)
        hits.append([(h.chunk.chunk_id, h.score) for h in found])
    return took, hits


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=30000)
    parser.add_argument("--queries", type=int, default=100)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    started, load_start = time.perf_counter(), os.getloadavg()[0]
    default = _pg_prune.PRUNE_FROM
    corpus = sc.generate(args.n, 15)
    texts = sc.queries(corpus, args.queries, 15)
    work = Path(tempfile.mkdtemp(prefix="bastion-pgprune-"))
    server = sc.start_postgres(work)
    try:
        index = PostgresIndex(server.get_uri(), table="scale", dim=None)
        chunks = [c for batch in sc.batches(corpus, _no_vectors) for c in batch]
        t0 = time.perf_counter()
        index.upsert(chunks)
        load = time.perf_counter() - t0
        del chunks
        with psycopg.connect(server.get_uri(), autocommit=True) as conn:
            for table in (index.names.chunks, index.names.terms, index.names.docs, index.names.df):
                conn.execute(sql.SQL("VACUUM (ANALYZE) {}").format(table))
        _timed(index, texts[:10], UNPRUNED)  # warm-up
        ways: dict[str, list[list[float]]] = {"unpruned": [], "pruned": []}
        same = True
        for _ in range(args.rounds):
            whole, want = _timed(index, texts, UNPRUNED)
            pruned, got = _timed(index, texts, default)
            ways["unpruned"].append(whole)
            ways["pruned"].append(pruned)
            same &= got == want
        index.close()
    finally:
        server.cleanup()
        shutil.rmtree(work, ignore_errors=True)
    per_query = {w: [statistics.median(r[i] for r in runs) for i in range(len(texts))]
                 for w, runs in ways.items()}  # fmt: skip
    lines = [
        f"PostgreSQL BM25, unpruned against pruned, one table of {args.n:,} synthetic documents "
        f"(seed 15, keyword-only, load {load:.0f} s), {args.queries} queries, k = {sc.K}, "
        f"{args.rounds} alternating rounds (per query the median); machine: {describe_machine()}",
        "",
        "| way | p50 ms | p90 ms | p99 ms | mean ms |",
        "|---|---:|---:|---:|---:|",
    ]
    for way, took in per_query.items():
        p50, p90, p99 = np.percentile(took, [50, 90, 99])
        lines.append(f"| {way} | {p50:.1f} | {p90:.1f} | {p99:.1f} | {np.mean(took):.1f} |")
    slower = sorted(
        range(len(texts)), key=lambda i: per_query["unpruned"][i] - per_query["pruned"][i]
    )
    lines += ["", f"hits {'identical' if same else 'DIFFERENT'} (ids in order, scores exact)"]
    lines.append("queries pruning slowed most (pruned / unpruned ms):")
    for i in slower[:5]:
        lines.append(
            f"- {texts[i]!r}: {per_query['pruned'][i]:.1f} / {per_query['unpruned'][i]:.1f}"
        )
    lines.append(
        f"wall time {time.perf_counter() - started:.0f} s; load average (1 min) at the start "
        f"{load_start:.1f}, at the end {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs"
    )
    text = "\n".join(lines)
    print(text)
    save_report("pg_prune", text, {"texts": texts, "per_query": per_query, "load_s": load})


if __name__ == "__main__":
    main()
