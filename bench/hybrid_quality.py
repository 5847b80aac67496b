"""Hybrid quality on SciFact: fusion of the keyword and the vector lists, chosen on train.

One run, the packaged int8 MiniLM (``embedder="local"``) over the real pipeline's chunks
(``Knowledge.open``: LanceDB tables, the embedding cache in ``bench/results/cache``), the
document-ranking BM25. Each query's two candidate lists (200 chunks each, as ``Knowledge.search``
takes 100) are fused by every option below; a document scores its best fused chunk. The
options are scored on the 809 train queries (where the default is chosen) and reported on the
300 test queries.

Run: ``.venv/bin/python bench/hybrid_quality.py`` (the first run embeds every chunk: minutes
on a 2-core machine; later runs read the cache). ``--write-fixture`` also writes the test
queries' vector candidates (document, chunk number, score) to
``tests/knowledge/fixtures/scifact_vector_test.json.gz``, which
``tests/knowledge/test_scifact_hybrid_figure.py`` fuses with the engine's own keyword lists to
pin the test figure without a model: run it again whenever chunking or the model changes.
"""

from __future__ import annotations

import asyncio
import gzip
import json
import re
import shutil
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from _scifact import CORPUS_FILE, DEFAULT_DIR, doc_scores  # noqa: E402
from bastion.knowledge.engine import FileToIndex, Knowledge  # noqa: E402
from bastion.knowledge.eval import describe_machine, evaluate, load_dataset  # noqa: E402
from bastion.knowledge.index import fusion  # noqa: E402
from bastion.knowledge.index.models import IndexHit  # noqa: E402

Fuse = Callable[[Sequence[IndexHit], Sequence[IndexHit]], list[IndexHit]]
DEPTH = 100


async def candidates(kb: Knowledge, queries: dict[str, str]) -> dict[str, tuple[list, list]]:
    assert kb.embedder is not None
    ids = list(queries)
    vectors = await kb.embedder.embed([queries[q] for q in ids])
    return {
        qid: (
            kb.index.search_keyword(queries[qid], DEPTH),
            kb.index.search_vector(vec, DEPTH),
        )
        for qid, vec in zip(ids, vectors, strict=True)
    }


def ranked(cands: dict[str, tuple[list, list]], fuse: Fuse) -> dict[str, dict[str, float]]:
    return {
        qid: doc_scores([(h.chunk.doc.path, h.score) for h in fuse(kw, vec)])
        for qid, (kw, vec) in cands.items()
    }


def options() -> dict[str, Fuse]:
    out: dict[str, Fuse] = {
        "bm25 only": lambda kw, vec: list(kw),
        "vector only": lambda kw, vec: list(vec),
        "rrf (c=60)": fusion.rrf,
    }
    for alpha in (0.3, 0.4, 0.5, 0.6, 0.7):
        out[f"weighted alpha={alpha}"] = lambda kw, vec, a=alpha: fusion.weighted(kw, vec, alpha=a)
    out["z-scores summed, each chunk its own keyword score (the former default)"] = chunk_zscore
    for weight in (0.8, 1.2):
        out[f"z-scores, keyword per document, vector weight {weight}"] = lambda kw, vec, w=weight: (
            scaled(fusion.zscore, kw, vec, w)
        )
    out["z-scores, keyword per document, over the first 50 of each list"] = lambda kw, vec: (
        fusion.zscore(kw[:50], vec[:50])
    )
    out["z-scores summed, keyword evidence per document (fusion.zscore, the default)"] = (
        fusion.zscore
    )
    return out


def scaled(fuse: Fuse, kw: Sequence[IndexHit], vec: Sequence[IndexHit], weight: float) -> list:
    """``fuse`` with the vector list's standard scores weighed by ``weight``: the z-scores of
    a list are those of its scores times any positive number, so scaling the list does not do
    it; the vector hits are fused alone and with the keyword list, and the difference
    weighed."""
    both = {h.chunk.chunk_id: h for h in fuse(kw, vec)}
    alone = {h.chunk.chunk_id: h.score for h in fuse([], vec)}
    low = min(alone.values(), default=0.0)
    out = [
        IndexHit(h.chunk, h.score + (weight - 1.0) * alone.get(key, low)) for key, h in both.items()
    ]
    return sorted(out, key=lambda h: -h.score)


def chunk_zscore(keyword: Sequence[IndexHit], vector: Sequence[IndexHit]) -> list[IndexHit]:
    """The former ``fusion.zscore``: every hit its own standard score in each list (keyword
    statistics over chunks, a chunk missing from a list that list's lowest)."""
    chunks: dict[str, IndexHit] = {}
    lists: list[tuple[dict[str, float], float]] = []
    for hits in (keyword, vector):
        if not hits:
            continue
        values = [h.score for h in hits]
        mean = sum(values) / len(values)
        spread = (sum((v - mean) ** 2 for v in values) / len(values)) ** 0.5 or 1.0
        standard = {h.chunk.chunk_id: (h.score - mean) / spread for h in hits}
        lists.append((standard, min(standard.values())))
        for hit in hits:
            chunks.setdefault(hit.chunk.chunk_id, hit)
    scores = {key: sum(found.get(key, low) for found, low in lists) for key in chunks}
    order = sorted(scores, key=lambda key: -scores[key])
    return [IndexHit(chunks[key].chunk, scores[key]) for key in order]


FIXTURE = HERE.parent / "tests" / "knowledge" / "fixtures" / "scifact_vector_test.json.gz"


def write_fixture(test_c: dict[str, tuple[list, list]]) -> None:
    """The vector candidates of the test queries as ``[doc id, chunk seq, score]`` rows (the
    score a 32-bit float, written in its shortest form: ``np.float32`` reads it back exactly)."""
    rows = {
        qid: [
            [m.group(1), h.chunk.seq, float(str(np.float32(h.score)))]
            for h in vec
            if (m := match(h))
        ]
        for qid, (_, vec) in test_c.items()
    }
    body = {"model": "packaged all-MiniLM-L6-v2, int8", "depth": DEPTH, "queries": rows}
    FIXTURE.write_bytes(gzip.compress(json.dumps(body, separators=(",", ":")).encode(), mtime=0))


def match(hit: IndexHit) -> re.Match[str] | None:
    return CORPUS_FILE.search(hit.chunk.doc.path)


async def main() -> None:
    test = load_dataset(DEFAULT_DIR, split="test")
    train = load_dataset(DEFAULT_DIR, split="train")
    cache = HERE / "results" / "cache"
    cache.mkdir(parents=True, exist_ok=True)
    warm = (cache / "embeddings.sqlite").exists()
    folder = Path(tempfile.mkdtemp(prefix="bastion-hybrid-"))
    try:
        kb = Knowledge.open(folder, embedder="local", embedding_cache=cache / "embeddings.sqlite")
        files = [
            FileToIndex(f"/scifact/{d.doc_id}.md", f"# {d.title}\n\n{d.text}\n".encode())
            for d in test.iter_corpus()
        ]
        t0 = time.perf_counter()
        for lo in range(0, len(files), 500):
            await kb.index_files(files[lo : lo + 500])
        took = time.perf_counter() - t0
        train_c = await candidates(kb, dict(train.queries))
        test_c = await candidates(kb, dict(test.queries))
        if "--write-fixture" in sys.argv:
            write_fixture(test_c)
        lines = [
            f"SciFact hybrid: {kb.index.count()} chunks, indexed in {took:.0f} s "
            f"({'warm' if warm else 'cold'} embedding cache); {len(train_c)} train / "
            f"{len(test_c)} test queries; machine: {describe_machine()}",
            "",
            "| fusion | train nDCG@10 | test nDCG@10 | test R@100 |",
            "|---|---:|---:|---:|",
        ]
        for name, fuse in options().items():
            tr = evaluate(ranked(train_c, fuse), train.qrels)
            te = evaluate(ranked(test_c, fuse), test.qrels)
            lines.append(
                f"| {name} | {tr.ndcg_at_10:.4f} | {te.ndcg_at_10:.4f} | {te.recall_at_100:.4f} |"
            )
            print(lines[-1], flush=True)
        kb.close()
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    text = "\n".join(lines)
    print()
    print(text)
    out = HERE / "results" / f"hybrid_quality-{time.strftime('%Y%m%d-%H%M%S')}.md"
    out.write_text(text + "\n")


if __name__ == "__main__":
    asyncio.run(main())
