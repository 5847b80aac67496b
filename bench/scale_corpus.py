"""At scale: a synthetic corpus of 10k to 100k documents in the embedded index and PostgreSQL.

The corpus is generated, deterministically (``--seed``): a vocabulary of 40,000 made-up words
drawn with a Zipf-Mandelbrot law (so BM25 postings have the long tail of real text: a few
words in most documents, most words in few), each document on one of 500 topics whose words
it uses more often; documents of log-normal length (median ~330 words, 60 to 2,000) cut into
chunks of at most 160 words (about 3 chunks a document); labels spread over four
tenants, three classifications and a few roles. Documents are made in blocks of 1,000, each
from its own seed, so the 10k corpus is the first tenth of the 100k one. Queries (``--queries``,
default 300) are 2 to 6 words taken from random documents.

Vectors come from a fast deterministic embedder, by default a bag-of-words random projection
(each word a fixed random unit vector, a chunk the normalized sum of its words') of dimension
384, the size of all-MiniLM-L6-v2's: the cost of a search grows with the dimension and the
number of chunks, not with the model that made the vectors. ``--embedder hashing`` uses
Bastion's :class:`HashingEmbedder` (384; about 1.4 ms a chunk here), ``--embedder local`` the
packaged MiniLM (realistic vectors, far too slow on a CPU for 100k documents).

For each size N (``--sizes``, default 10000,30000,100000):

* **embedded** (:class:`LanceIndex`): indexing time (batches of 1,000 documents, as a folder
  is indexed), disk size; then, in a fresh process, the time to open the folder, the memory
  the open index holds (resident set after open minus before, and the peak during the open),
  and query latency p50/p99 for bm25, vector and hybrid (z-scores over 100 candidates of each,
  as ``Knowledge.search`` does, through ``knowledge.index.hybrid`` where the tree has it: the
  texts of the fused top k fetched once), k = 10, one query at a time, after a warm-up.
* **PostgreSQL** (:class:`PostgresIndex` on a pgserver PostgreSQL started in a temporary
  folder, ``maintenance_work_mem`` 1 GB so the HNSW graph and the postings' B-trees are built
  in memory, ``max_wal_size`` 4 GB so a bulk load does not checkpoint every gigabyte of WAL):
  load time (one bulk upsert; then ``VACUUM ANALYZE`` outside the time, as autovacuum would),
  disk size of the tables and indexes, the same latencies.

With ``--baseline REV`` the embedded index's folder is also opened, in its own fresh process,
by revision ``REV``'s ``src`` (``git archive``), just before the working tree's: both rows
come from the same folder and queries, and the hits of every query and mode are compared
(chunk ids, scores, texts, line ranges: ``hits identical`` in the notes).

Run: ``.venv/bin/python bench/scale_corpus.py`` (``--sizes 10000`` for one size,
``--no-postgres``, ``--no-embedded``, ``--baseline HEAD``). Results go to
``bench/results/scale_corpus-*``.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from _report import save_report  # noqa: E402
from _scifact import p50_p99_ms  # noqa: E402
from bastion.knowledge.eval import describe_machine  # noqa: E402
from bastion.knowledge.index import fusion  # noqa: E402
from bastion.knowledge.index.models import DocumentMeta, IndexedChunk, IndexHit  # noqa: E402

DIM = 384
K = 10
CANDIDATES = 100  # as Knowledge.search's hybrid mode
BLOCK = 1000
VOCAB = 40_000
TOPICS = 500
TOPIC_WORDS = 60
CHUNK_WORDS = 160
TENANTS = ("acme", "globex", "initech", "umbrella")
CLASSES = ("public", "internal", "confidential")
ROLES = ("analyst", "engineer", "legal", "hr")

# -- the corpus ------------------------------------------------------------------------------


def vocabulary(seed: int) -> list[str]:
    """``VOCAB`` distinct made-up words of one to four syllables, in rank order: the shortest
    first, as the most frequent words of a language are short."""
    rng = np.random.default_rng([seed, 0])
    onsets = [*"bdfgklmnprstvz", "br", "st", "tr", "pl", "kr", "sh", "th", "ch"]
    vowels = ["a", "e", "i", "o", "u", "ai", "ou", "ea"]
    codas = ["", "", "", "n", "r", "s", "l", "m", "x"]
    words: dict[str, None] = {}
    while len(words) < VOCAB:
        n = int(rng.integers(1, 5))
        parts = [
            onsets[rng.integers(len(onsets))] + vowels[rng.integers(len(vowels))] for _ in range(n)
        ]
        words.setdefault("".join(parts) + codas[rng.integers(len(codas))])
    return sorted(words, key=len)


@dataclass(frozen=True, slots=True)
class Corpus:
    """Documents as word ids, their labels, and the vocabulary."""

    words: list[str]
    docs: list[tuple[DocumentMeta, list[np.ndarray]]]
    """Per document: its metadata and its chunks (arrays of word ids)."""


def _zipf(n: int) -> np.ndarray:
    ranks = np.arange(1, n + 1, dtype=np.float64)
    weights = 1.0 / (ranks + 2.7) ** 1.0  # Zipf-Mandelbrot, as fitted to English text
    return np.cumsum(weights / weights.sum())


def generate(n_docs: int, seed: int) -> Corpus:
    """The first ``n_docs`` documents of the corpus of ``seed`` (block by block)."""
    words = vocabulary(seed)
    cdf = _zipf(VOCAB)
    topic_rng = np.random.default_rng([seed, 1])
    # topic words come from the middle of the distribution (the informative ones)
    topics = topic_rng.integers(200, VOCAB, size=(TOPICS, TOPIC_WORDS))
    docs: list[tuple[DocumentMeta, list[np.ndarray]]] = []
    for block in range(0, n_docs, BLOCK):
        rng = np.random.default_rng([seed, 2, block])
        for i in range(block, min(block + BLOCK, n_docs)):
            length = int(np.clip(rng.lognormal(np.log(330), 0.6), 60, 2000))
            ids = np.searchsorted(cdf, rng.random(length))
            topic = topics[rng.integers(TOPICS)]
            on_topic = rng.random(length) < 0.2
            ids[on_topic] = topic[rng.integers(TOPIC_WORDS, size=int(on_topic.sum()))]
            tenant = TENANTS[i % len(TENANTS)]
            roles = frozenset(r for r in ROLES if rng.random() < 0.3)
            meta = DocumentMeta(
                doc_id=f"d{i:07d}",
                path=f"/{tenant}/docs/{i // 1000:04d}/d{i:07d}.md",
                title=" ".join(words[w] for w in ids[:4]).capitalize(),
                date=f"20{10 + i % 16:02d}-{1 + i % 12:02d}-{1 + i % 28:02d}",
                tenant=tenant,
                classification=CLASSES[int(rng.integers(len(CLASSES)))],
                roles=roles,
                tags=frozenset({f"topic{int(rng.integers(20))}"}),
                version=f"v{i}",
            )
            chunks = [ids[lo : lo + CHUNK_WORDS] for lo in range(0, length, CHUNK_WORDS)]
            docs.append((meta, chunks))
    return Corpus(words, docs)


def queries(corpus: Corpus, count: int, seed: int) -> list[str]:
    """``count`` queries of 2 to 6 words, each taken from a random document."""
    rng = np.random.default_rng([seed, 3, len(corpus.docs)])
    out = []
    for _ in range(count):
        _, chunks = corpus.docs[int(rng.integers(len(corpus.docs)))]
        ids = np.concatenate(chunks)
        picked = rng.choice(ids, size=int(rng.integers(2, 7)), replace=False)
        out.append(" ".join(corpus.words[w] for w in picked))
    return out


def chunk_text(corpus: Corpus, ids: np.ndarray) -> str:
    """Words in sentences of 8 to 20 (a full stop every so often, a capital after it)."""
    words = [corpus.words[w] for w in ids.tolist()]
    step = 8 + int(ids[0]) % 13
    for j in range(0, len(words), step):
        words[j] = words[j].capitalize()
        end = min(j + step, len(words)) - 1
        words[end] += "."
    return " ".join(words)


# -- embedders -------------------------------------------------------------------------------


class Projection:
    """Bag-of-words random projection: each word a fixed random unit vector (seeded), a text
    the L2-normalized sum of its words' vectors. Fast and deterministic; texts sharing words
    are close."""

    name = "bench/bow-projection-384"

    def __init__(self, words: Sequence[str], seed: int, dim: int = DIM) -> None:
        rng = np.random.default_rng([seed, 4])
        table = rng.standard_normal((len(words), dim)).astype(np.float32)
        self.table = table / np.linalg.norm(table, axis=1, keepdims=True)
        self.index = {w: i for i, w in enumerate(words)}
        self.dim = dim

    def ids(self, ids: np.ndarray) -> np.ndarray:
        v = self.table[ids].sum(axis=0)
        return v / max(float(np.linalg.norm(v)), 1e-9)

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        out = np.zeros((len(texts), self.dim), np.float32)
        for row, text in enumerate(texts):
            known = [
                self.index[w] for w in text.lower().replace(".", "").split() if w in self.index
            ]
            if known:
                out[row] = self.ids(np.array(known))
        return out


def make_embedder(kind: str, corpus: Corpus, seed: int) -> tuple[str, Callable[..., np.ndarray]]:
    """(name, encode(texts, ids)) for ``--embedder``."""
    if kind == "projection":
        proj = Projection(corpus.words, seed)
        return (
            proj.name,
            lambda texts, ids=None: (
                np.stack([proj.ids(i) for i in ids]) if ids is not None else proj.encode(texts)
            ),
        )
    if kind == "hashing":
        from bastion.knowledge.embedders.hashing import HashingEmbedder

        hashing = HashingEmbedder(DIM)
        return hashing.name, lambda texts, ids=None: hashing.encode(texts)
    from bastion.knowledge.embedders.local import LocalEmbedder

    local = LocalEmbedder()
    return local.name, lambda texts, ids=None: asyncio.run(local.embed(texts))


def batches(
    corpus: Corpus, encode: Callable[..., np.ndarray], start: int = 0
) -> Iterator[list[IndexedChunk]]:
    """The chunks of ``BLOCK`` documents at a time, with their vectors."""
    for lo in range(start, len(corpus.docs), BLOCK):
        metas, texts, ids = [], [], []
        for meta, chunks in corpus.docs[lo : lo + BLOCK]:
            for seq, chunk in enumerate(chunks):
                metas.append((meta, seq))
                texts.append(chunk_text(corpus, chunk))
                ids.append(chunk)
        vectors = encode(texts, ids)
        out = []
        for (meta, seq), text, vec in zip(metas, texts, vectors, strict=True):
            lines = text.count(".") + 1
            out.append(
                IndexedChunk(
                    chunk_id=f"{meta.doc_id}#{seq}",
                    doc=meta,
                    seq=seq,
                    text=text,
                    start_line=1 + seq * lines,
                    end_line=(seq + 1) * lines,
                    section=meta.title or "",
                    vector=np.asarray(vec, np.float32),
                )
            )
        yield out


# -- measuring -------------------------------------------------------------------------------


def rss_mb() -> float:
    pages = int(Path("/proc/self/statm").read_text().split()[1])
    return pages * os.sysconf("SC_PAGE_SIZE") / 2**20


def peak_mb() -> float:
    """This process's peak resident set (``VmHWM``: ``ru_maxrss`` survives ``exec`` on Linux,
    so a child started from the parent, which holds the corpus, reported the parent's)."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def disk_mb(folder: Path) -> float:
    return sum(p.stat().st_size for p in folder.rglob("*") if p.is_file()) / 2**20


def embedded_hybrid(index: Any) -> Callable[[str, np.ndarray], list[IndexHit]]:
    """The embedded index's hybrid search as ``Knowledge.search`` runs it: through
    ``knowledge.index.hybrid`` (the fused top k's texts fetched once) where the tree has it,
    else each candidate list fetched, then fused (a tree before it)."""
    try:
        from bastion.knowledge.index.hybrid import hybrid
    except ImportError:
        return lambda t, v: fusion.zscore(
            index.search_keyword(t, CANDIDATES), index.search_vector(v, CANDIDATES)
        )[:K]
    return lambda t, v: hybrid(index, t, v, k=K, depth=CANDIDATES, fuse=fusion.zscore)


def hybrid_ab(index: Any, texts: list[str], vecs: np.ndarray) -> dict[str, Any] | None:
    """The hybrid search two ways on the same open index, alternating query by query (both
    meet the same load): each candidate list fetched, then fused (as before
    ``knowledge.index.hybrid``), and the fused top k fetched once (as now). p50/p99 in ms,
    texts fetched per query, and whether both gave the same hits. ``None`` for a tree
    without it."""
    try:
        from bastion.knowledge.index.hybrid import hybrid
    except ImportError:
        return None
    fetched = [0]
    fetch = index.fetch_texts

    def counting(chunks: Any, refs: Any) -> Any:
        fetched[0] += len(chunks)
        return fetch(chunks, refs)

    index.fetch_texts = counting  # counts what each way reads (the instance only)
    ways: dict[str, Callable[[str, np.ndarray], list[IndexHit]]] = {
        "both lists fetched": lambda t, v: fusion.zscore(
            index.search_keyword(t, CANDIDATES), index.search_vector(v, CANDIDATES)
        )[:K],
        "fused top k fetched": lambda t, v: hybrid(
            index, t, v, k=K, depth=CANDIDATES, fuse=fusion.zscore
        ),
    }
    lat: dict[str, list[float]] = {name: [] for name in ways}
    reads: dict[str, int] = dict.fromkeys(ways, 0)
    same = True
    for t, v in zip(texts, vecs, strict=True):
        got = []
        for name, call in ways.items():
            fetched[0] = 0
            t0 = time.perf_counter()
            got.append([(h.chunk.chunk_id, h.score, h.chunk.text) for h in call(t, v)])
            lat[name].append(time.perf_counter() - t0)
            reads[name] += fetched[0]
        same = same and got[0] == got[1]
    del index.fetch_texts
    return {
        name: {"p50_p99_ms": p50_p99_ms(lat[name]), "texts_per_query": reads[name] / len(texts)}
        for name in ways
    } | {"same_hits": same}


def latencies(
    keyword: Callable[[str, int], list[IndexHit]],
    vector: Callable[[np.ndarray, int], list[IndexHit]],
    texts: list[str],
    vecs: np.ndarray,
    fused: Callable[[str, np.ndarray], list[IndexHit]] | None = None,
) -> dict[str, tuple[float, float]]:
    """p50/p99 (ms) per mode, k = 10, after one warm-up pass over 20 queries."""
    modes: dict[str, Callable[[str, np.ndarray], list[IndexHit]]] = {
        "bm25": lambda t, v: keyword(t, K),
        "vector": lambda t, v: vector(v, K),
        "hybrid": fused
        or (lambda t, v: fusion.zscore(keyword(t, CANDIDATES), vector(v, CANDIDATES))[:K]),
    }
    out = {}
    for mode, call in modes.items():
        for t, v in zip(texts[:20], vecs[:20], strict=True):
            call(t, v)
        lat = []
        for t, v in zip(texts, vecs, strict=True):
            t0 = time.perf_counter()
            call(t, v)
            lat.append(time.perf_counter() - t0)
        out[mode] = p50_p99_ms(lat)
    return out


def child_open(folder: Path, embedder: str, hits_out: Path | None = None) -> None:
    """In a fresh process: open the embedded index, measure its memory, time the queries;
    print one JSON line. With ``hits_out``, write there every query's hits per mode."""
    import gc

    import lancedb  # noqa: F401 (imported before the baseline: its own memory is not the index's)

    from bastion.knowledge.index.lance import LanceIndex

    texts = json.loads((folder / "queries.json").read_text())
    vecs = np.load(folder / "queries.npy")
    gc.collect()
    before = rss_mb()
    t0 = time.perf_counter()
    index = LanceIndex(folder / "index", dim=DIM, embedder=embedder)
    opened = time.perf_counter() - t0
    gc.collect()
    after = rss_mb()
    peak = peak_mb()
    lat = latencies(index.search_keyword, index.search_vector, texts, vecs, embedded_hybrid(index))
    ab = hybrid_ab(index, texts, vecs) if not index.keeps_texts else None
    if hits_out is not None:
        hits_out.write_text(json.dumps(all_hits(index, texts, vecs)))
    print(
        json.dumps(
            {
                "open_s": opened,
                "rss_before_mb": before,
                "rss_after_mb": after,
                "peak_mb": peak,
                "chunks": index.count(),
                "latency": lat,
                "rss_after_queries_mb": rss_mb(),
                "hybrid_ab": ab,
            }
        )
    )
    index.close()


def all_hits(index: Any, texts: list[str], vecs: np.ndarray) -> dict[str, list[list[Any]]]:
    """Per mode, each query's hits as [chunk id, score, text, start line, end line]."""
    fused = embedded_hybrid(index)

    def rows(hits: list[IndexHit]) -> list[Any]:
        return [
            [h.chunk.chunk_id, h.score, h.chunk.text, h.chunk.start_line, h.chunk.end_line]
            for h in hits
        ]

    return {
        "bm25": [rows(index.search_keyword(t, K)) for t in texts],
        "vector": [rows(index.search_vector(v, K)) for v in vecs],
        "hybrid": [rows(fused(t, v)) for t, v in zip(texts, vecs, strict=True)],
    }


def open_child(work: Path, name: str, src: Path | None, label: str) -> dict[str, Any]:
    """:func:`child_open` in a fresh process, with ``src`` first on the path when given."""
    env = dict(os.environ)
    if src is not None:
        env["PYTHONPATH"] = str(src)
    args = ["--child-open", str(work), "--embedder-name", name]
    args += ["--hits-out", str(work / f"hits-{label}.json")]
    done = subprocess.run(
        [sys.executable, __file__, *args], capture_output=True, text=True, check=False, env=env
    )
    if done.returncode != 0:
        raise SystemExit(f"{label} open failed:\n{done.stderr[-3000:]}")
    return dict(json.loads(done.stdout.strip().splitlines()[-1]))


def run_embedded(
    corpus: Corpus,
    encode: Callable[..., np.ndarray],
    name: str,
    work: Path,
    baseline: Path | None = None,
) -> dict[str, dict[str, Any]]:
    """The working tree's row, and with ``baseline`` (an exported ``src``) the baseline's,
    opened on the same folder; the hits of both compared."""
    from bastion.knowledge.index.lance import LanceIndex

    folder = work / "index"
    index = LanceIndex(folder, dim=DIM, embedder=name)
    took = 0.0  # the upserts only (not making the chunks and their vectors)
    for batch in batches(corpus, encode):
        t0 = time.perf_counter()
        index.upsert(batch)
        took += time.perf_counter() - t0
    index.close()
    del index
    size = disk_mb(folder)
    out: dict[str, dict[str, Any]] = {}
    if baseline is not None:
        out["embedded, baseline"] = {"index_s": took, "disk_mb": size}
        out["embedded, baseline"].update(open_child(work, name, baseline, "baseline"))
    out["embedded (LanceIndex)"] = {"index_s": took, "disk_mb": size}
    out["embedded (LanceIndex)"].update(open_child(work, name, None, "tree"))
    if baseline is not None:
        before = json.loads((work / "hits-baseline.json").read_text())
        after = json.loads((work / "hits-tree.json").read_text())
        out["embedded (LanceIndex)"]["hits_identical"] = before == after
        out["embedded (LanceIndex)"]["hits_compared"] = sum(
            len(q) for per in before.values() for q in per
        )
    return out


def run_postgres(
    corpus: Corpus,
    encode: Callable[..., np.ndarray],
    name: str,
    dsn: str,
    texts: list[str],
    vecs: np.ndarray,
) -> dict[str, Any]:
    import psycopg
    from psycopg import sql

    from bastion.knowledge.index.postgres import PostgresIndex

    table = f"scale_{len(corpus.docs)}"
    index = PostgresIndex(dsn, table=table, dim=DIM, embedder=name)
    chunks = [c for batch in batches(corpus, encode) for c in batch]
    t0 = time.perf_counter()
    index.upsert(chunks)  # one bulk load: the HNSW graph built once over every row
    took = time.perf_counter() - t0
    del chunks
    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute(sql.SQL("VACUUM (ANALYZE) {}").format(index.names.chunks))
        conn.execute(sql.SQL("VACUUM (ANALYZE) {}").format(index.names.terms))
        row = conn.execute(
            "SELECT pg_total_relation_size(%s::regclass) + pg_total_relation_size(%s::regclass)",
            [index.names.chunks.as_string(), index.names.terms.as_string()],
        ).fetchone()
    assert row is not None
    lat = latencies(index.search_keyword, index.search_vector, texts, vecs)
    count = index.count()
    index.close()
    return {"index_s": took, "disk_mb": row[0] / 2**20, "chunks": count, "latency": lat}


def start_postgres(folder: Path) -> Any:
    import pgserver

    server = pgserver.get_server(folder / "pg", cleanup_mode="stop")
    server.psql("ALTER SYSTEM SET maintenance_work_mem = '1GB';")
    server.psql("ALTER SYSTEM SET max_wal_size = '4GB';")
    server.psql("SELECT pg_reload_conf();")
    return server


def table(results: dict[int, dict[str, dict[str, Any]]]) -> list[str]:
    out = [
        "| N docs | chunks | index | indexing s | disk MB | open s | memory MB (peak) | "
        "held after queries MB | process RSS MB | "
        "bm25 p50/p99 ms | vector p50/p99 ms | hybrid p50/p99 ms |",
        "|---:|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for n, per in results.items():
        for kind, r in per.items():
            lat = r["latency"]
            memory = (
                f"{r['rss_after_mb'] - r['rss_before_mb']:.0f} ({r['peak_mb']:.0f})"
                if "rss_after_mb" in r
                else "server"
            )
            opened = f"{r['open_s']:.1f}" if "open_s" in r else "—"
            later = (
                f"{r['rss_after_queries_mb'] - r['rss_before_mb']:.0f} | "
                f"{r['rss_after_queries_mb']:.0f}"
                if "rss_after_mb" in r
                else "— | —"
            )
            out.append(
                f"| {n:,} | {r['chunks']:,} | {kind} | {r['index_s']:.1f} | {r['disk_mb']:.0f} "
                f"| {opened} | {memory} | {later} | "
                + " | ".join(
                    f"{lat[m][0]:.2f} / {lat[m][1]:.2f}" for m in ("bm25", "vector", "hybrid")
                )
                + " |"
            )
    return out


def _held(r: dict[str, Any]) -> float:
    return float(r["rss_after_mb"] - r["rss_before_mb"])


def growth(results: dict[int, dict[str, dict[str, Any]]]) -> list[str]:
    sizes = sorted(results)
    if len(sizes) < 2:
        return []
    lo, hi = sizes[0], sizes[-1]
    out = [
        f"\nGrowth {lo:,} -> {hi:,} documents ({hi / lo:.0f}x):",
        "",
        "| index | indexing | memory | bm25 p50 | vector p50 | hybrid p50 |",
        "|---|---:|---:|---:|---:|---:|",
    ]
    for kind in results[hi]:
        a, b = results[lo].get(kind), results[hi][kind]
        if a is None:
            continue
        mem = f"{_held(b) / max(_held(a), 1e-9):.1f}x" if "rss_after_mb" in b else "—"
        cells = [f"{b['index_s'] / a['index_s']:.1f}x", mem]
        cells += [
            f"{b['latency'][m][0] / a['latency'][m][0]:.1f}x" for m in ("bm25", "vector", "hybrid")
        ]
        out.append(f"| {kind} | " + " | ".join(cells) + " |")
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="10000,30000,100000")
    parser.add_argument("--queries", type=int, default=300)
    parser.add_argument("--seed", type=int, default=15)
    parser.add_argument(
        "--embedder", choices=("projection", "hashing", "local"), default="projection"
    )
    parser.add_argument("--no-postgres", action="store_true")
    parser.add_argument("--no-embedded", action="store_true")
    parser.add_argument(
        "--baseline",
        help="also open each embedded folder with this revision (or a folder to import it from)",
    )
    parser.add_argument("--child-open", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--hits-out", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--embedder-name", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child_open is not None:
        child_open(args.child_open, args.embedder_name, args.hits_out)
        return

    started = time.perf_counter()
    load_start = os.getloadavg()[0]
    sizes = [int(s) for s in args.sizes.split(",")]
    work = Path(tempfile.mkdtemp(prefix="bastion-scale-"))
    baseline = None
    if args.baseline is not None:
        from _children import export_src

        given = Path(args.baseline)
        baseline = given if given.is_dir() else export_src(args.baseline, work / "baseline")
    server = None if args.no_postgres else start_postgres(work)
    results: dict[int, dict[str, dict[str, Any]]] = {}
    notes: list[str] = []
    try:
        for n in sizes:
            t0 = time.perf_counter()
            corpus = generate(n, args.seed)
            texts = queries(corpus, args.queries, args.seed)
            name, encode = make_embedder(args.embedder, corpus, args.seed)
            vecs = np.asarray(encode(texts), np.float32)
            notes.append(f"N={n:,}: corpus generated in {time.perf_counter() - t0:.1f} s")
            results[n] = {}
            if not args.no_embedded:
                folder = work / f"lance-{n}"
                folder.mkdir()
                (folder / "queries.json").write_text(json.dumps(texts))
                np.save(folder / "queries.npy", vecs)
                results[n].update(run_embedded(corpus, encode, name, folder, baseline))
                tree = results[n]["embedded (LanceIndex)"]
                if tree.get("hybrid_ab"):
                    ab = tree["hybrid_ab"]
                    notes.append(
                        f"N={n:,}: hybrid, same open index, alternating query by query: "
                        + "; ".join(
                            f"{name} p50/p99 {r['p50_p99_ms'][0]:.2f} / {r['p50_p99_ms'][1]:.2f}"
                            f" ms, {r['texts_per_query']:.0f} texts a query"
                            for name, r in ab.items()
                            if name != "same_hits"
                        )
                        + f"; same hits: {ab['same_hits']}"
                    )
                if "hits_identical" in tree:
                    notes.append(
                        f"N={n:,}: hits of {args.baseline} and the working tree identical "
                        f"(ids, scores, texts, lines; {tree['hits_compared']:,} hits): "
                        f"{tree['hits_identical']}"
                    )
                shutil.rmtree(folder, ignore_errors=True)
                print(json.dumps({n: results[n]}), flush=True)
            if server is not None:
                results[n]["PostgreSQL"] = run_postgres(
                    corpus, encode, name, server.get_uri(), texts, vecs
                )
                print(json.dumps({n: results[n]}), flush=True)
    finally:
        if server is not None:
            server.cleanup()
        shutil.rmtree(work, ignore_errors=True)

    head = [
        f"Synthetic corpus (seed {args.seed}, embedder {args.embedder}, dim {DIM}), "
        f"{args.queries} queries, k = {K}; machine: {describe_machine()}",
        "",
    ]
    notes.append(
        f"wall time {time.perf_counter() - started:.0f} s; load average (1 min) at the start "
        f"{load_start:.1f}, at the end {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs"
    )
    text = "\n".join(head + table(results) + growth(results) + [""] + notes)
    print(text)
    save_report("scale_corpus", text, results)


if __name__ == "__main__":
    main()
