"""BM25 quality on SciFact: how a document is scored from its chunks, train and test, beside bm25s.

Bastion indexes *chunks* (line ranges an agent can cite) while BEIR judges *documents*, so a
document's rank comes from its chunks. This script scores every way of doing that which was
considered, on the 809 train queries (where the choice is made) and the 300 test queries
(where it is reported), in one run, with bm25s (the same stemmer and stop words, whole
documents) as the peer:

* ``whole documents``: Bastion's BM25 over each document as one entry (no chunk hits: the
  reference a chunked index should not lose to);
* ``best chunk, chunk statistics``: each chunk scored alone (N, df, avgdl over chunks), a
  document ranks by its best chunk (the engine before this change);
* ``best chunk, document idf``: the same with N and df counted in documents;
* ``max + l * (sum - max)``: the best chunk plus a share of the others';
* ``0.5 * document + 0.5 * best chunk``: the document's score (below) and its best chunk's;
* ``documents from own parts`` (the engine now, ``BM25.ranked`` through ``MemoryIndex``): a
  document's frequencies and length summed over what each chunk adds to it (overlaps counted
  once), N, df and avgdl over documents; each chunk carries its document's score scaled by its
  own score over the best chunk's.

Run: ``.venv/bin/python bench/bm25_quality.py`` (about a minute; needs ``bm25s`` and
``PyStemmer`` from the ``bench`` extra). Chunks come from the real pipeline
(``Knowledge.index_files``: parse, clean, chunk with the MiniLM token cap).
"""

from __future__ import annotations

import asyncio
import sys
import time
from collections.abc import Callable, Mapping
from dataclasses import replace
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from _scifact import DEFAULT_DIR  # noqa: E402
from bastion.knowledge.engine import FileToIndex, Knowledge  # noqa: E402
from bastion.knowledge.eval import describe_machine, evaluate, load_dataset  # noqa: E402
from bastion.knowledge.index.bm25 import BM25  # noqa: E402
from bastion.knowledge.index.memory import MemoryIndex  # noqa: E402
from bastion.knowledge.index.models import IndexedChunk, searchable_text  # noqa: E402
from bastion.knowledge.index.passages import own_texts  # noqa: E402
from bastion.knowledge.ingest import stable_doc_id  # noqa: E402

Scorer = Callable[[str], dict[str, float]]
"""Query text -> {doc id: score} (the top 100)."""


def _top(scores: np.ndarray, ids: list[str], k: int = 100) -> dict[str, float]:
    nz = np.flatnonzero(scores > 0)
    if len(nz) > k:
        nz = nz[np.argpartition(-scores[nz], k - 1)[:k]]
    return {ids[i]: float(scores[i]) for i in nz}


def _per_doc(chunk_scores: np.ndarray, owner: np.ndarray, n_docs: int) -> np.ndarray:
    best = np.zeros(n_docs, dtype=np.float32)
    np.maximum.at(best, owner, chunk_scores)
    return best


def bm25s_scorer(doc_ids: list[str], texts: list[str]) -> Scorer:
    import bm25s
    import Stemmer

    stemmer = Stemmer.Stemmer("english")
    model = bm25s.BM25(k1=1.5, b=0.75)
    model.index(
        bm25s.tokenize(texts, stopwords="en", stemmer=stemmer, show_progress=False),
        show_progress=False,
    )

    def score(query: str) -> dict[str, float]:
        q = bm25s.tokenize([query], stopwords="en", stemmer=stemmer, show_progress=False)
        docs, scores = model.retrieve(q, k=100, show_progress=False)
        return {doc_ids[d]: float(s) for d, s in zip(docs[0], scores[0], strict=True) if s > 0}

    return score


def chunk_scorers(doc_ids: list[str], chunks: list[IndexedChunk]) -> dict[str, Scorer]:
    number = {d: i for i, d in enumerate(doc_ids)}
    owner = np.array([number[c.doc.doc_id] for c in chunks], dtype=np.int64)
    texts = [searchable_text(c) for c in chunks]
    plain = BM25()
    plain.add_many(0, texts)
    n_docs = len(doc_ids)

    def best(query: str) -> dict[str, float]:
        return _top(_per_doc(plain.scores(query), owner, n_docs), doc_ids)

    def document_idf(query: str) -> dict[str, float]:
        # chunk tf and length, N and df in documents: rescale each term's idf
        out = np.zeros(len(chunks), dtype=np.float32)
        n_chunks = len(chunks)
        for term in dict.fromkeys(plain.analyzer.analyze(query)):
            alone = plain.scores(term)
            hit = alone > 0
            if not hit.any():
                continue
            df_chunks = int(hit.sum())
            df_docs = len(np.unique(owner[hit]))
            ratio = plain.scoring.idf(n_docs, df_docs) / plain.scoring.idf(n_chunks, df_chunks)
            out += alone * np.float32(ratio)
        return _top(_per_doc(out, owner, n_docs), doc_ids)

    def max_plus_sum(share: float) -> Scorer:
        def score(query: str) -> dict[str, float]:
            s = plain.scores(query)
            top = _per_doc(s, owner, n_docs)
            total = np.bincount(owner, weights=s, minlength=n_docs).astype(np.float32)
            return _top(top + np.float32(share) * (total - top), doc_ids)

        return score

    documents = BM25()
    documents.add_many(0, own_texts(chunks), owner.tolist())

    def mixed(query: str) -> dict[str, float]:
        whole = _per_doc(documents.ranked(query), owner, n_docs)  # the document's BM25
        return _top(0.5 * whole + 0.5 * _per_doc(plain.scores(query), owner, n_docs), doc_ids)

    return {
        "best chunk, chunk statistics (before)": best,
        "0.5 * document + 0.5 * best chunk": mixed,
        "best chunk, document idf": document_idf,
        "max + 0.1 * (sum - max)": max_plus_sum(0.1),
        "max + 0.3 * (sum - max)": max_plus_sum(0.3),
    }


def engine_scorer(index: MemoryIndex) -> Scorer:
    def score(query: str) -> dict[str, float]:
        out: dict[str, float] = {}
        for hit in index.search_keyword(query, 300):
            out.setdefault(hit.chunk.doc.doc_id, hit.score)
        return dict(list(out.items())[:100])

    return score


def whole_scorer(doc_ids: list[str], texts: list[str]) -> Scorer:
    whole = BM25()
    whole.add_many(0, texts)
    return lambda query: _top(whole.scores(query), doc_ids)


async def chunked(corpus: Mapping[str, tuple[str, str]]) -> tuple[MemoryIndex, float]:
    index = MemoryIndex()
    kb = Knowledge(index, embedder=None)
    files = [
        FileToIndex(f"/scifact/{doc_id}.md", f"# {title}\n\n{text}\n".encode())
        for doc_id, (title, text) in corpus.items()
    ]
    t0 = time.perf_counter()
    await kb.index_files(files)
    return index, time.perf_counter() - t0


def main() -> None:
    test = load_dataset(DEFAULT_DIR, split="test")
    train = load_dataset(DEFAULT_DIR, split="train")
    corpus = {d.doc_id: (d.title, d.text) for d in test.iter_corpus()}
    doc_ids = list(corpus)
    flat = [f"{t} {x}".strip() for t, x in corpus.values()]
    index, took = asyncio.run(chunked(corpus))
    path_to_id = {f"/scifact/{d}.md": d for d in doc_ids}
    chunks = [c for d in doc_ids for c in index.chunks_of(stable_doc_id(f"/scifact/{d}.md"))]
    # judged doc ids, not the index's: map the index's document ids back to SciFact's
    by_stable = {c.doc.doc_id: path_to_id[c.doc.path] for c in chunks}
    chunks = [_renamed(c, by_stable[c.doc.doc_id]) for c in chunks]

    scorers: dict[str, Scorer] = {"bm25s 0.3, whole documents (peer)": bm25s_scorer(doc_ids, flat)}
    scorers["Bastion BM25, whole documents (no chunk hits)"] = whole_scorer(doc_ids, flat)
    scorers |= chunk_scorers(doc_ids, chunks)
    engine = engine_scorer(index)
    scorers["**documents from own parts (now: MemoryIndex.search_keyword)**"] = lambda q: {
        by_stable[k]: v for k, v in engine(q).items()
    }

    lines = [
        f"SciFact: {len(doc_ids)} documents, {len(chunks)} chunks (indexed in {took:.1f} s), "
        f"{len(train.queries)} train / {len(test.queries)} test queries; machine: "
        f"{describe_machine()}",
        "",
        "| scoring | train nDCG@10 | test nDCG@10 | test R@100 |",
        "|---|---:|---:|---:|",
    ]
    for name, scorer in scorers.items():
        tr = evaluate({q: scorer(t) for q, t in train.queries.items()}, train.qrels)
        te = evaluate({q: scorer(t) for q, t in test.queries.items()}, test.qrels)
        lines.append(
            f"| {name} | {tr.ndcg_at_10:.4f} | {te.ndcg_at_10:.4f} | {te.recall_at_100:.4f} |"
        )
        print(lines[-1], flush=True)
    text = "\n".join(lines)
    print()
    print(text)
    out = HERE / "results"
    out.mkdir(exist_ok=True)
    (out / f"bm25_quality-{time.strftime('%Y%m%d-%H%M%S')}.md").write_text(text + "\n")


def _renamed(chunk: IndexedChunk, doc_id: str) -> IndexedChunk:
    return replace(chunk, doc=replace(chunk.doc, doc_id=doc_id))


if __name__ == "__main__":
    main()
