"""The SciFact hybrid figure the docs report, pinned without a model.

``bench/hybrid_quality.py`` reports nDCG@10 on SciFact's 300 test claims for the engine's
hybrid search: the packaged int8 MiniLM's 100 vector chunks and the document-ranking BM25's
100 keyword chunks, fused by :func:`fusion.zscore`. Embedding the corpus takes minutes, so the
vector candidates of the test claims are stored (document, chunk number, score; written by
``bench/hybrid_quality.py --write-fixture``) and everything else runs here for real: the
corpus is parsed and chunked by the engine, BM25 ranks it, the fusion fuses. A change to
chunking, BM25, its analysis or the fusion moves the figure and fails this test; the stored
vector hits are matched to the chunks the engine makes now by document and chunk number, so
a chunking change that moves chunk boundaries also fails it (then write the fixture again).
"""

from __future__ import annotations

import asyncio
import gzip
import json
import os
from pathlib import Path

import numpy as np
import pytest

from bastion.knowledge.engine import FileToIndex, Knowledge
from bastion.knowledge.eval import BeirDataset, evaluate, load_dataset
from bastion.knowledge.index import fusion
from bastion.knowledge.index.memory import MemoryIndex
from bastion.knowledge.index.models import IndexedChunk, IndexHit
from bastion.knowledge.ingest import stable_doc_id

SCIFACT = Path(
    os.environ.get(
        "BASTION_SCIFACT_DIR",
        Path(__file__).resolve().parents[2].parent / "shared" / "data" / "scifact",
    )
)
pytestmark = pytest.mark.slow  # parses, chunks and indexes 5,183 abstracts

FIXTURE = Path(__file__).parent / "fixtures" / "scifact_vector_test.json.gz"
Lists = dict[str, tuple[list[IndexHit], list[IndexHit]]]


def _path(doc_id: str) -> str:
    return f"/scifact/{doc_id}.md"


@pytest.fixture(scope="module")
def lists() -> tuple[BeirDataset, Lists]:
    """Each test claim's 100 keyword chunks (the engine, now) and 100 vector chunks (stored)."""
    test = load_dataset(SCIFACT, split="test")
    index = MemoryIndex()
    files = [
        FileToIndex(_path(d.doc_id), f"# {d.title}\n\n{d.text}\n".encode())
        for d in test.iter_corpus()
    ]
    asyncio.run(Knowledge(index, embedder=None).index_files(files))
    stored = json.loads(gzip.decompress(FIXTURE.read_bytes()))
    assert stored["depth"] == 100 and set(stored["queries"]) == set(test.queries)
    chunks: dict[str, list[IndexedChunk]] = {}
    out: Lists = {}
    for qid, text in test.queries.items():
        vector = []
        for doc_id, seq, score in stored["queries"][qid]:
            if doc_id not in chunks:
                found = index.chunks_of(stable_doc_id(_path(doc_id)))
                chunks[doc_id] = sorted(found, key=lambda c: c.seq)
            own = chunks[doc_id]
            assert seq < len(own) and own[seq].seq == seq, (doc_id, seq)  # same chunking
            vector.append(IndexHit(own[seq], float(np.float32(score))))  # as scored
        out[qid] = (index.search_keyword(text, 100), vector)
    return test, out


def _ndcg(test: BeirDataset, lists: Lists, pick: int | None) -> float:
    run: dict[str, dict[str, float]] = {}
    for qid, (keyword, vector) in lists.items():
        hits = fusion.zscore(keyword, vector) if pick is None else (keyword, vector)[pick]
        best: dict[str, float] = {}
        for hit in hits:
            doc = Path(hit.chunk.doc.path).stem
            best.setdefault(doc, hit.score)
        run[qid] = dict(list(best.items())[:100])
    return evaluate(run, test.qrels).ndcg_at_10


def test_scifact_test_figures_are_the_reported_ones(lists: tuple[BeirDataset, Lists]) -> None:
    test, found = lists
    keyword, vector, hybrid = (_ndcg(test, found, pick) for pick in (0, 1, None))
    # docs/benchmarks.md: bm25 0.6890, vector 0.6656, hybrid (fusion.zscore) 0.7382
    assert keyword == pytest.approx(0.6890, abs=5e-5)
    assert vector == pytest.approx(0.6656, abs=5e-5)
    assert hybrid == pytest.approx(0.7382, abs=5e-5)
    assert hybrid > max(keyword, vector) + 0.04  # fusion earns its place on held-out claims
