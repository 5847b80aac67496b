"""PostgreSQL index, before and after a change, in one run: the synthetic corpus of
``bench/scale_corpus.py`` loaded by a baseline revision's ``PostgresIndex`` and by the working
tree's, on one server, then their queries timed in alternating rounds.

For each size N (``--sizes``, default 10000,30000): each side loads the corpus into its own
database of the same pgserver PostgreSQL (one bulk upsert, timed; ``VACUUM ANALYZE`` after,
untimed), in a child process that imports that side's ``src`` (the baseline's exported with
``git archive``); then ``--rounds`` rounds (default 2), each timing the baseline's queries and
then the tree's (p50/p99 of bm25, vector and hybrid, k = 10, as ``scale_corpus.py`` does); a
side's figure is the median over its rounds. The BM25 hits of both sides are compared (chunk
ids in order, scores to 1e-6): the change must not change them. Vector hits come from two HNSW
graphs built apart (pgvector draws each node's level at random), so only their overlap is
reported.

Run: ``.venv/bin/python bench/pg_layout.py --baseline REV`` (``--sizes``, ``--queries``,
``--rounds``). Results go to ``bench/results/pg_layout-*``.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
import scale_corpus as sc  # noqa: E402
from _report import save_report  # noqa: E402
from bastion.knowledge.eval import describe_machine  # noqa: E402
from bastion.knowledge.index import fusion  # noqa: E402

TABLE = "scale"
MODES = ("bm25", "vector", "hybrid")


def _corpus(args: argparse.Namespace) -> tuple[Any, list[str], np.ndarray, str, Any]:
    corpus = sc.generate(args.n, args.seed)
    texts = sc.queries(corpus, args.queries, args.seed)
    name, encode = sc.make_embedder("projection", corpus, args.seed)
    return corpus, texts, np.asarray(encode(texts), np.float32), name, encode


def child_load(args: argparse.Namespace) -> dict[str, Any]:
    import psycopg
    from psycopg import sql

    from bastion.knowledge.index.postgres import PostgresIndex

    corpus, _, _, name, encode = _corpus(args)
    index = PostgresIndex(args.dsn, table=TABLE, dim=sc.DIM, embedder=name)
    chunks = [c for batch in sc.batches(corpus, encode) for c in batch]
    t0 = time.perf_counter()
    index.upsert(chunks)
    took = time.perf_counter() - t0
    tables = [index.names.chunks, index.names.terms]
    if hasattr(index.names, "docs"):  # layout format 3: the documents' lengths
        tables.append(index.names.docs)
    if hasattr(index.names, "df"):  # layout format 4: the terms' counts
        tables.append(index.names.df)
    with psycopg.connect(args.dsn, autocommit=True) as conn:
        for table in tables:
            conn.execute(sql.SQL("VACUUM (ANALYZE) {}").format(table))
        row = conn.execute(
            "SELECT sum(pg_total_relation_size(t::regclass)) FROM unnest(%s::text[]) t",
            [[t.as_string() for t in tables]],
        ).fetchone()
    assert row is not None
    count = index.count()
    index.close()
    return {"index_s": took, "disk_mb": float(row[0]) / 2**20, "chunks": count}


def child_query(args: argparse.Namespace) -> dict[str, Any]:
    from bastion.knowledge.index.postgres import PostgresIndex

    _, texts, vecs, name, _ = _corpus(args)
    index = PostgresIndex(args.dsn, table=TABLE, dim=sc.DIM, embedder=name)
    lat = sc.latencies(index.search_keyword, index.search_vector, texts, vecs)

    def rows(hits: list[Any]) -> list[list[Any]]:
        return [[h.chunk.chunk_id, h.score] for h in hits]

    hits = {
        "bm25": [rows(index.search_keyword(t, sc.K)) for t in texts],
        "vector": [rows(index.search_vector(v, sc.K)) for v in vecs],
        "hybrid": [
            rows(
                fusion.zscore(
                    index.search_keyword(t, sc.CANDIDATES), index.search_vector(v, sc.CANDIDATES)
                )[: sc.K]
            )
            for t, v in zip(texts, vecs, strict=True)
        ],
    }
    index.close()
    return {"latency": lat, "hits": hits}


def _child(mode: str, src: Path | None, dsn: str, n: int, args: argparse.Namespace) -> Any:
    env = dict(os.environ)
    if src is not None:
        env["PYTHONPATH"] = str(src)
    command = [sys.executable, __file__, "--child", mode, "--dsn", dsn, "--n", str(n)]
    command += ["--queries", str(args.queries), "--seed", str(args.seed)]
    done = subprocess.run(command, capture_output=True, text=True, check=False, env=env)
    if done.returncode != 0:
        raise SystemExit(f"{mode} ({src or 'tree'}) failed:\n{done.stderr[-3000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def _same_bm25(a: list[list[list[Any]]], b: list[list[list[Any]]]) -> bool:
    for x, y in zip(a, b, strict=True):
        if [h[0] for h in x] != [h[0] for h in y]:
            return False
        if any(abs(p[1] - q[1]) > 1e-6 * max(abs(p[1]), 1e-12) for p, q in zip(x, y, strict=True)):
            return False
    return True


def _overlap(a: list[list[list[Any]]], b: list[list[list[Any]]]) -> float:
    shared = sum(len({h[0] for h in x} & {h[0] for h in y}) for x, y in zip(a, b, strict=True))
    return shared / max(sum(len(x) for x in a), 1)


def export_src(rev: str, folder: Path) -> Path:
    """``src`` of revision ``rev`` of this repository, in ``folder``."""
    folder.mkdir(parents=True)
    archive = subprocess.run(
        ["git", "-C", str(HERE.parent), "archive", rev, "src"], capture_output=True, check=True
    ).stdout
    subprocess.run(["tar", "-x", "-C", str(folder)], input=archive, check=True)
    return folder / "src"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--baseline", help="the git revision to compare with")
    parser.add_argument("--sizes", default="10000,30000")
    parser.add_argument("--queries", type=int, default=300)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--seed", type=int, default=15)
    parser.add_argument("--child", choices=("load", "query"), help=argparse.SUPPRESS)
    parser.add_argument("--dsn", help=argparse.SUPPRESS)
    parser.add_argument("--n", type=int, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child is not None:
        out = child_load(args) if args.child == "load" else child_query(args)
        print(json.dumps(out))
        return
    if args.baseline is None:
        parser.error("--baseline REV is required")

    started, load_start = time.perf_counter(), os.getloadavg()[0]
    work = Path(tempfile.mkdtemp(prefix="bastion-pglayout-"))
    sides: dict[str, Path | None] = {
        f"baseline {args.baseline}": export_src(args.baseline, work / "baseline"),
        "working tree": None,
    }
    server = sc.start_postgres(work)
    results: dict[int, dict[str, dict[str, Any]]] = {}
    notes: list[str] = []
    try:
        for n in [int(s) for s in args.sizes.split(",")]:
            dsns = {}
            results[n] = {}
            for i, (side, src) in enumerate(sides.items()):
                server.psql(f"CREATE DATABASE side{i}_{n};")
                dsns[side] = server.get_uri().replace("/postgres?", f"/side{i}_{n}?", 1)
                results[n][side] = _child("load", src, dsns[side], n, args)
                print(json.dumps({n: {side: results[n][side]}}), flush=True)
            rounds: dict[str, list[dict[str, Any]]] = {side: [] for side in sides}
            for _ in range(args.rounds):
                for side, src in sides.items():
                    rounds[side].append(_child("query", src, dsns[side], n, args))
                    print(json.dumps({n: {side: rounds[side][-1]["latency"]}}), flush=True)
            for side in sides:
                results[n][side]["latency"] = {
                    m: [statistics.median(r["latency"][m][j] for r in rounds[side]) for j in (0, 1)]
                    for m in MODES
                }
            before, after = (rounds[side][0]["hits"] for side in sides)
            same = _same_bm25(before["bm25"], after["bm25"])
            notes.append(
                f"N={n:,}: BM25 hits {'identical' if same else 'DIFFERENT'} (ids in order, "
                f"scores to 1e-6) over {len(before['bm25'])} queries; vector hits overlap "
                f"{_overlap(before['vector'], after['vector']):.3f}, hybrid "
                f"{_overlap(before['hybrid'], after['hybrid']):.3f} (HNSW graphs built apart)"
            )
            for i in range(len(sides)):
                server.psql(f"DROP DATABASE side{i}_{n};")
    finally:
        server.cleanup()
        shutil.rmtree(work, ignore_errors=True)

    lines = [
        f"PostgreSQL index, baseline {args.baseline} against the working tree; synthetic corpus "
        f"(seed {args.seed}, projection embedder, dim {sc.DIM}), {args.queries} queries, "
        f"k = {sc.K}, median of {args.rounds} alternating rounds; machine: {describe_machine()}",
        "",
        "| N docs | chunks | side | load s | disk MB | bm25 p50/p99 ms | vector p50/p99 ms "
        "| hybrid p50/p99 ms |",
        "|---:|---:|---|---:|---:|---:|---:|---:|",
    ]
    for n, per in results.items():
        for side, r in per.items():
            lat = r["latency"]
            cells = " | ".join(f"{lat[m][0]:.2f} / {lat[m][1]:.2f}" for m in MODES)
            lines.append(
                f"| {n:,} | {r['chunks']:,} | {side} | {r['index_s']:.1f} | {r['disk_mb']:.0f} "
                f"| {cells} |"
            )
        a, b = per.values()
        ratios = ", ".join(f"{m} p50 {a['latency'][m][0] / b['latency'][m][0]:.1f}x" for m in MODES)
        notes.append(f"N={n:,}: baseline / tree: load {a['index_s'] / b['index_s']:.2f}x, {ratios}")
    notes.append(
        f"wall time {time.perf_counter() - started:.0f} s; load average (1 min) at the start "
        f"{load_start:.1f}, at the end {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs"
    )
    text = "\n".join([*lines, "", *notes])
    print(text)
    save_report("pg_layout", text, results)


if __name__ == "__main__":
    main()
