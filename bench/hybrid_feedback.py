"""Hybrid retrieval on SciFact: the levers ``bench/hybrid_levers.py`` did not try (issue 28).

Each against the default (``fusion.zscore`` over 100 keyword and 100 vector chunks, scored per
document as in ``bench/hybrid_levers.py``), chosen on the 809 train claims with the paired
randomization test, then read once on the 300 test claims:

1. **Rocchio in vector space**: ``q' = q + beta * mean`` of the vectors of the first ``k``
   documents of the fused ranking (a document's vector: the mean of its chunks' vectors, made
   unit length); the vector side searched again with ``q'`` and fused with the same keyword
   list. No new embeddings: the chunk vectors are the index's.
2. **A document-level vector**: the mean of a document's chunk vectors (unit length), or its
   first chunk (which starts with the title), as the vector side instead of the best chunk, or
   as a third list of standard scores added with a weight.
3. **Learned fusion**: a logistic regression over features of the two lists alone (each
   document's keyword and vector standard scores, whether each list found it, the log of its
   rank in each, and their product), fitted on train qrels, pointwise or pairwise. Its train
   figure is by 5-fold cross-validation over train claims (each fold scored by a model that
   never saw it); the test figure by the model fitted on all of train.
4. **BM25 with a title field**: the engine's keyword score of a document plus ``w`` times a
   BM25 over titles alone (a separate title weight, BM25F's simplest form).

Run: ``BASTION_SCIFACT_DIR=... python bench/hybrid_feedback.py`` (reads the embedding cache
``bench/hybrid_quality.py`` fills in ``bench/results/cache``: run that first).
"""

from __future__ import annotations

import asyncio
import math
import pickle
import shutil
import sys
import tempfile
import time
from collections.abc import Mapping
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from _scifact import CORPUS_FILE, DEFAULT_DIR  # noqa: E402
from bastion.knowledge.engine import FileToIndex, Knowledge  # noqa: E402
from bastion.knowledge.eval import describe_machine, load_dataset  # noqa: E402
from bastion.knowledge.index.bm25 import BM25  # noqa: E402
from hybrid_levers import DEEP, Bench, Hit, Lists, Run, _hits, _top, _z, fuse  # noqa: E402

SAVED = HERE / "results" / "cache" / "hybrid_feedback.pickle"


async def gather(train: object, test: object) -> dict:
    """Candidate lists, query vectors, and the index's chunk vectors by document."""
    folder = Path(tempfile.mkdtemp(prefix="bastion-feedback-"))
    try:
        kb = Knowledge.open(
            folder,
            embedder="local",
            embedding_cache=HERE / "results" / "cache" / "embeddings.sqlite",
        )
        assert kb.embedder is not None
        docs = list(test.iter_corpus())  # type: ignore[attr-defined]
        files = [
            FileToIndex(f"/scifact/{d.doc_id}.md", f"# {d.title}\n\n{d.text}\n".encode())
            for d in docs
        ]
        for lo in range(0, len(files), 500):
            await kb.index_files(files[lo : lo + 500])
        queries = dict(train.queries) | dict(test.queries)  # type: ignore[attr-defined]
        vectors = await kb.embedder.embed(list(queries.values()))
        lists = {
            qid: (
                _hits(kb.index.search_keyword(text, DEEP)),
                _hits(kb.index.search_vector(vec, DEEP)),
            )
            for (qid, text), vec in zip(queries.items(), vectors, strict=True)
        }
        parts = list(kb.index._parts.values())  # type: ignore[attr-defined]
        matrix = np.vstack(
            [np.array(p._vectors[: len(p._chunks)], dtype=np.float32) for p in parts]
        )
        rows = []
        for part in parts:
            for chunk in part._chunks:
                m = CORPUS_FILE.search(chunk.doc.path)
                assert m is not None
                rows.append((chunk.chunk_id, m.group(1), chunk.seq))
        kb.close()
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    return {
        "lists": lists,
        "queries": dict(zip(queries, np.asarray(vectors, dtype=np.float32), strict=True)),
        "matrix": matrix,
        "rows": rows,
        "titles": {d.doc_id: d.title for d in docs},
    }


class Space:
    """The chunk vectors, the document vectors made from them, and searches over both."""

    def __init__(self, matrix: np.ndarray, rows: list[tuple[str, str, int]]) -> None:
        self.matrix = matrix
        self.chunk_ids = [r[0] for r in rows]
        self.chunk_docs = [r[1] for r in rows]
        self.doc_ids = sorted(set(self.chunk_docs))
        where = {d: i for i, d in enumerate(self.doc_ids)}
        owner = np.array([where[d] for d in self.chunk_docs])
        sums = np.zeros((len(self.doc_ids), matrix.shape[1]), np.float64)
        np.add.at(sums, owner, matrix)
        self.mean = (sums / np.linalg.norm(sums, axis=1, keepdims=True)).astype(np.float32)
        first = np.zeros_like(self.mean)
        best_seq: dict[int, int] = {}
        for i, (_, d, seq) in enumerate(rows):
            j = where[d]
            if j not in best_seq or seq < best_seq[j]:
                best_seq[j] = seq
                first[j] = matrix[i]
        self.first = first
        self.where = where
        self.chunks_per_doc = np.bincount(owner, minlength=len(self.doc_ids))

    def chunks(self, q: np.ndarray, k: int = 100) -> list[Hit]:
        s = self.matrix @ q
        top = np.argsort(-s, kind="stable")[:k]
        return [(self.chunk_ids[i], self.chunk_docs[i], float(s[i])) for i in top]

    def docs(self, table: np.ndarray, q: np.ndarray, k: int = 100) -> list[Hit]:
        s = table @ q
        top = np.argsort(-s, kind="stable")[:k]
        return [(self.doc_ids[i], self.doc_ids[i], float(s[i])) for i in top]


def rocchio(space: Space, lists: Lists, qv: Mapping[str, np.ndarray], k: int, beta: float) -> Run:
    run: Run = {}
    for qid, (kw, vec) in lists.items():
        first = list(fuse(kw, vec))[:k]
        fb = space.mean[[space.where[d] for d in first]].mean(axis=0)
        q = qv[qid] + beta * fb
        run[qid] = fuse(kw, space.chunks(q / np.linalg.norm(q)))
    return run


def third_list(space: Space, lists: Lists, qv: Mapping[str, np.ndarray], weight: float) -> Run:
    run: Run = {}
    for qid, (kw, vec) in lists.items():
        base = fuse(kw, vec)
        extra = space.docs(space.mean, qv[qid])
        z = dict(zip([d for d, _, _ in extra], _z([s for _, _, s in extra]), strict=True))
        low = min(z.values())
        run[qid] = _top(
            {d: base.get(d, -1e9) + weight * z.get(d, low) for d in base.keys() | z.keys()}
        )
    return run


FEATURES = (
    "z keyword",
    "z vector",
    "in keyword",
    "in vector",
    "-log rank keyword",
    "-log rank vector",
    "z keyword x z vector",
)


def features(kw: list[Hit], vec: list[Hit], depth: int = 100) -> tuple[list[str], np.ndarray]:
    """Per candidate document of the two lists: the features the learned fusion weighs."""
    best: dict[str, float] = {}
    for _, doc, score in kw[:depth]:
        best.setdefault(doc, score)
    lex = dict(zip(best, _z(list(best.values())), strict=True))
    lex_rank = {d: i + 1 for i, d in enumerate(best)}
    dense: dict[str, float] = {}
    dense_rank: dict[str, int] = {}
    for (_, doc, _), z in zip(vec[:depth], _z([s for _, _, s in vec[:depth]]), strict=True):
        if doc not in dense:
            dense[doc] = float(z)
            dense_rank[doc] = len(dense_rank) + 1
    low_l, low_d = min(lex.values(), default=0.0), min(dense.values(), default=0.0)
    docs = list(lex.keys() | dense.keys())
    docs.sort()
    out = np.zeros((len(docs), len(FEATURES)))
    for i, d in enumerate(docs):
        zl, zd = lex.get(d, low_l), dense.get(d, low_d)
        rl, rd = lex_rank.get(d, depth + 1), dense_rank.get(d, depth + 1)
        out[i] = (zl, zd, d in lex, d in dense, -math.log(rl), -math.log(rd), zl * zd)
    return docs, out


def learned(
    lists: Lists,
    train_ids: list[str],
    qrels: Mapping,
    *,
    pairwise: bool = False,
    negatives: int | None = None,
    seed: int = 0,
) -> tuple[Run, Run]:
    """(train run by 5-fold cross-validation, every query's run by the model fitted on all of
    train). Pointwise: each candidate document relevant or not. Pairwise (a linear RankSVM's
    logistic form): each relevant document against each candidate not judged relevant (or only
    those among the first ``negatives`` of the default ranking), the difference of their
    features, both signs."""
    from sklearn.linear_model import LogisticRegression

    feats = {qid: features(kw, vec) for qid, (kw, vec) in lists.items()}
    firsts = {qid: list(fuse(kw, vec))[:negatives] for qid, (kw, vec) in lists.items()}

    def fit(ids: list[str]) -> LogisticRegression:
        if not pairwise:
            x = np.vstack([feats[q][1] for q in ids])
            y = np.concatenate([[qrels[q].get(d, 0) > 0 for d in feats[q][0]] for q in ids])
            return LogisticRegression(C=1.0, max_iter=1000).fit(x, y.astype(int))
        diffs = []
        for q in ids:
            docs, x = feats[q]
            at = {d: i for i, d in enumerate(docs)}
            good = [at[d] for d in docs if qrels[q].get(d, 0) > 0]
            pool = firsts[q] if negatives else docs
            bad = [at[d] for d in pool if d in at and qrels[q].get(d, 0) <= 0]
            diffs += [x[g] - x[b] for g in good for b in bad]
        xd = np.vstack(diffs)
        x2 = np.vstack([xd, -xd])
        y2 = np.r_[np.ones(len(xd)), np.zeros(len(xd))].astype(int)
        return LogisticRegression(C=1.0, max_iter=1000, fit_intercept=False).fit(x2, y2)

    def score(model: LogisticRegression, qid: str) -> dict[str, float]:
        docs, x = feats[qid]
        return _top(dict(zip(docs, model.decision_function(x).tolist(), strict=True)))

    rng = np.random.default_rng(seed)
    order = list(rng.permutation(train_ids))
    folds = [order[i::5] for i in range(5)]
    cv: Run = {}
    for i, held in enumerate(folds):
        model = fit([q for j, f in enumerate(folds) if j != i for q in f])
        for q in held:
            cv[q] = score(model, q)
    model = fit(train_ids)
    print(
        "learned weights:", dict(zip(FEATURES, np.round(model.coef_[0], 3).tolist(), strict=True))
    )
    return cv, {qid: score(model, qid) for qid in lists}


def title_bm25(
    titles: Mapping[str, str], lists: Lists, queries: Mapping[str, str], w: float
) -> Run:
    ids = list(titles)
    bm25 = BM25()
    bm25.add_many(0, [titles[d] for d in ids])
    run: Run = {}
    for qid, (kw, vec) in lists.items():
        t = bm25.scores(queries[qid])
        best: dict[str, float] = {}
        for _, doc, score in kw[:DEEP]:
            best.setdefault(doc, score)
        floor = min(best.values(), default=0.0)
        top_t = np.argsort(-t)[:100]
        cands = set(list(best)[:300]) | {ids[i] for i in top_t if t[i] > 0}
        where = {d: i for i, d in enumerate(ids)}
        combined = {d: best.get(d, floor) + w * float(t[where[d]]) for d in cands}
        size = len({doc for _, doc, _ in kw[:100]})  # as many documents as the default has
        ranked = sorted(combined.items(), key=lambda kv: -kv[1])[:size]
        run[qid] = fuse([(d, d, s) for d, s in ranked], vec)
    return run


def main() -> None:
    train = load_dataset(DEFAULT_DIR, split="train")
    test = load_dataset(DEFAULT_DIR, split="test")
    t0 = time.perf_counter()
    if SAVED.exists():
        data = pickle.loads(SAVED.read_bytes())
    else:
        data = asyncio.run(gather(train, test))
        SAVED.write_bytes(pickle.dumps(data))
    lists: Lists = data["lists"]
    qv = data["queries"]
    space = Space(data["matrix"], data["rows"])
    bench = Bench(train, test, lists)
    header = [
        f"SciFact levers (2): {len(train.queries)} train / {len(test.queries)} test claims; "
        f"{len(space.chunk_ids)} chunks of {len(space.doc_ids)} documents "
        f"({int((space.chunks_per_doc > 1).sum())} with more than one); "
        f"candidates in {time.perf_counter() - t0:.0f} s; machine: {describe_machine()}",
        "",
        "| option | train nDCG@10 | train diff | p (train) | test nDCG@10 | test R@100 |",
        "|---|---:|---:|---:|---:|---:|",
    ]
    print("\n".join(header), flush=True)
    bench.option("**default: fusion.zscore, 100 + 100 chunks**")
    bench.row(
        "check: vector side searched again here (must equal the default)",
        {qid: fuse(kw, space.chunks(qv[qid])) for qid, (kw, _) in lists.items()},
    )
    for k in (3, 5, 10):
        for beta in (0.25, 0.5, 1.0):
            bench.row(
                f"Rocchio on the vector side, {k} documents, beta {beta}",
                rocchio(space, lists, qv, k, beta),
            )
    for name, table in (("mean of its chunks", space.mean), ("first chunk", space.first)):
        bench.row(
            f"vector side per document: {name}",
            {qid: fuse(kw, space.docs(table, qv[qid])) for qid, (kw, _) in lists.items()},
        )
    for weight in (0.3, 0.5, 1.0):
        bench.row(
            f"+ {weight} x document-mean vector list (standard scores)",
            third_list(space, lists, qv, weight),
        )
    cv, fitted = learned(lists, list(train.queries), train.qrels)
    bench.row(
        "learned fusion (logistic regression; train: 5-fold CV)",
        cv | {q: fitted[q] for q in test.queries},
    )
    for negatives in (None, 20):
        cv, fitted = learned(
            lists, list(train.queries), train.qrels, pairwise=True, negatives=negatives
        )
        bench.row(
            f"learned fusion, pairwise, negatives: {'first 20' if negatives else 'all'} "
            "(train: 5-fold CV)",
            cv | {q: fitted[q] for q in test.queries},
        )
    queries = dict(train.queries) | dict(test.queries)
    for w in (0.1, 0.2, 0.4):
        bench.row(f"BM25 + {w} x BM25 over titles", title_bm25(data["titles"], lists, queries, w))
    text = "\n".join(header + bench.lines)
    print()
    print(text)
    out = HERE / "results" / f"hybrid_feedback-{time.strftime('%Y%m%d-%H%M%S')}.md"
    out.write_text(text + "\n")


if __name__ == "__main__":
    main()
