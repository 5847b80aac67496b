"""Hybrid retrieval on SciFact: every lever tried for issue 28, chosen on train, reported on test.

Where ``bench/hybrid_quality.py`` scores the fusion functions the engine ships, this script
scores the levers around them, each against the default (``fusion.zscore`` over the engine's
100 keyword and 100 vector chunks) on the same candidate lists:

* candidate depth (50 to 1,000 chunks from each list);
* fusion: a weight on the vector side, the value a hit missing from a list takes, robust
  standard scores (median and MAD), each list weighted by how far its best hit stands out,
  ``exp`` of the standard scores summed, CombMNZ, the vector side per document (standard
  scores over documents; best chunk plus a share of the mean of its chunks);
* BM25: ``k1`` and ``b`` (the engine's chunked BM25, rebuilt for each pair);
* RM3 pseudo-relevance feedback on the keyword side (whole-document BM25, its baseline beside);
* a third signal: the similarity of the query to the document's title alone (titles
  embedded by the same packaged MiniLM).

Fusion here is per document, as the benchmark judges: a document's fused score is its keyword
standard score plus the best vector standard score among its chunks, exactly the ranking
``fusion.zscore`` gives through its best chunk (the first row checks it against
``bench/hybrid_quality.py``). Each option: nDCG@10 on the 809 train claims, the difference to
the default there and its p-value (paired randomization test,
:func:`bastion.knowledge.eval.paired_test`, 10,000 rounds), then nDCG@10 and R@100 on the 300
test claims. An option would be kept only for a train gain with p < 0.05.

Run: ``BASTION_SCIFACT_DIR=... python bench/hybrid_levers.py`` (reads the embedding cache
``bench/hybrid_quality.py`` fills in ``bench/results/cache``: run that first; then about ten
minutes on a 2-core machine, most of it rebuilding BM25 for each ``k1``/``b``).
"""

from __future__ import annotations

import asyncio
import math
import shutil
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from _scifact import CORPUS_FILE, DEFAULT_DIR  # noqa: E402
from bastion.knowledge.engine import FileToIndex, Knowledge  # noqa: E402
from bastion.knowledge.eval import (  # noqa: E402
    BeirDataset,
    describe_machine,
    evaluate,
    load_dataset,
    paired_test,
)
from bastion.knowledge.index.bm25 import BM25  # noqa: E402
from bastion.knowledge.index.memory import MemoryIndex  # noqa: E402
from bastion.knowledge.index.models import IndexHit  # noqa: E402

Hit = tuple[str, str, float]
"""(chunk id, SciFact doc id, score), best first."""
Lists = dict[str, tuple[list[Hit], list[Hit]]]
"""query id -> (keyword chunks, vector chunks)."""
Run = dict[str, dict[str, float]]
DEEP = 1000


def _hits(found: Sequence[IndexHit]) -> list[Hit]:
    out = []
    for h in found:
        m = CORPUS_FILE.search(h.chunk.doc.path)
        assert m is not None
        out.append((h.chunk.chunk_id, m.group(1), h.score))
    return out


def _z(values: Sequence[float] | np.ndarray) -> np.ndarray:
    a = np.asarray(values, dtype=np.float64)
    spread = a.std() if len(a) else 0.0
    return (a - a.mean()) / spread if spread > 1e-12 else np.zeros_like(a)


def _robust(values: Sequence[float] | np.ndarray) -> np.ndarray:
    a = np.asarray(values, dtype=np.float64)
    med = np.median(a)
    mad = float(np.median(np.abs(a - med))) * 1.4826 or 1.0
    return (a - med) / mad


def _top(scores: Mapping[str, float], k: int = 100) -> dict[str, float]:
    return dict(sorted(scores.items(), key=lambda kv: -kv[1])[:k])


def fuse(
    keyword: list[Hit],
    vector: list[Hit],
    *,
    depth: int = 100,
    weight: float = 1.0,
    missing: float | None = None,
    norm: Callable[[Sequence[float]], np.ndarray] = _z,
    combine: str = "sum",
    dense_docs: bool = False,
    mean_share: float = 0.0,
    adaptive: bool = False,
) -> dict[str, float]:
    keyword, vector = keyword[:depth], vector[:depth]
    best: dict[str, float] = {}
    for _, doc, score in keyword:
        best.setdefault(doc, score)
    lexical = dict(zip(best, norm(list(best.values())), strict=True))
    dense: dict[str, list[float]] = {}
    if dense_docs:  # statistics over documents (each by its best chunk)
        first: dict[str, float] = {}
        for _, doc, score in vector:
            first.setdefault(doc, score)
        dense = {d: [z] for d, z in zip(first, norm(list(first.values())), strict=True)}
    else:
        for (_, doc, _), z in zip(vector, norm([s for _, _, s in vector]), strict=True):
            dense.setdefault(doc, []).append(z)
    per_doc = {d: max(zs) + mean_share * (sum(zs) / len(zs) - max(zs)) for d, zs in dense.items()}
    low_l = min(lexical.values(), default=0.0) if missing is None else missing
    low_d = min(per_doc.values(), default=0.0) if missing is None else missing
    wl, wd = 1.0, weight
    if adaptive:  # each list weighed by how far its best hit stands out
        tl, td = max(*lexical.values(), 1e-6), max(*per_doc.values(), 1e-6)
        wl, wd = 2 * tl / (tl + td), 2 * td / (tl + td)
    out: dict[str, float] = {}
    for doc in lexical.keys() | per_doc.keys():
        lex, den = lexical.get(doc, low_l), per_doc.get(doc, low_d)
        if combine == "exp":
            out[doc] = math.exp(0.5 * lex) + math.exp(0.5 * den)
        elif combine == "mnz":
            out[doc] = (lex - low_l + den - low_d) * ((doc in lexical) + (doc in per_doc))
        else:
            out[doc] = wl * lex + wd * den
    return _top(out)


class Bench:
    def __init__(self, train: BeirDataset, test: BeirDataset, lists: Lists) -> None:
        self.train, self.test, self.lists = train, test, lists
        self.default: Mapping[str, float] = self._per_query(self.train, self._run(fuse))
        self.lines: list[str] = []

    def _run(self, rank: Callable[[list[Hit], list[Hit]], dict[str, float]]) -> Run:
        return {qid: rank(kw, vec) for qid, (kw, vec) in self.lists.items()}

    @staticmethod
    def _per_query(split: BeirDataset, run: Run) -> dict[str, float]:
        found = evaluate(run, split.qrels, per_query=True).per_query
        assert found is not None
        return {qid: row["ndcg@10"] for qid, row in found.items()}

    def row(self, name: str, run: Run) -> None:
        train = self._per_query(self.train, run)
        test = evaluate(run, self.test.qrels)
        versus = paired_test(self.default, train)
        mean = math.fsum(train.values()) / len(train)
        self.lines.append(
            f"| {name} | {mean:.4f} | {versus.difference:+.4f} | {versus.p_value:.2f} | "
            f"{test.ndcg_at_10:.4f} | {test.recall_at_100:.4f} |"
        )
        print(self.lines[-1], flush=True)

    def option(self, name: str, **knobs: object) -> None:
        self.row(name, self._run(lambda kw, vec: fuse(kw, vec, **knobs)))  # type: ignore[arg-type]


async def candidates(folder: Path, train: BeirDataset, test: BeirDataset) -> tuple[Lists, dict]:
    cache = HERE / "results" / "cache" / "embeddings.sqlite"
    kb = Knowledge.open(folder, embedder="local", embedding_cache=cache)
    assert kb.embedder is not None
    files = [
        FileToIndex(f"/scifact/{d.doc_id}.md", f"# {d.title}\n\n{d.text}\n".encode())
        for d in test.iter_corpus()
    ]
    for lo in range(0, len(files), 500):
        await kb.index_files(files[lo : lo + 500])
    queries = dict(train.queries) | dict(test.queries)
    vectors = await kb.embedder.embed(list(queries.values()))
    lists = {
        qid: (
            _hits(kb.index.search_keyword(text, DEEP)),
            _hits(kb.index.search_vector(vec, DEEP)),
        )
        for (qid, text), vec in zip(queries.items(), vectors, strict=True)
    }
    titles = np.asarray(await kb.embedder.embed([d.title for d in test.iter_corpus()]))
    kb.close()
    return lists, {"queries": dict(zip(queries, vectors, strict=True)), "titles": titles}


async def keyword_lists(docs: Sequence, queries: Mapping[str, str], k1: float, b: float) -> dict:
    index = MemoryIndex(k1=k1, b=b)
    kb = Knowledge(index, embedder=None)
    await kb.index_files(
        [
            FileToIndex(f"/scifact/{d.doc_id}.md", f"# {d.title}\n\n{d.text}\n".encode())
            for d in docs
        ]
    )
    return {qid: _hits(index.search_keyword(text, 300)) for qid, text in queries.items()}


class RM3:
    """RM3 over whole-document BM25: the query's terms (weight ``keep``) and the ``terms`` most
    likely under the relevance model of the first ``docs`` documents (each weighed by
    ``softmax`` of its BM25 score)."""

    def __init__(self, doc_ids: list[str], texts: list[str]) -> None:
        self.doc_ids = doc_ids
        self.bm25 = BM25()
        self.bm25.add_many(0, texts)
        self.analyzer = self.bm25.analyzer
        self.bags = [Counter(self.analyzer.analyze(t)) for t in texts]
        self.word: dict[str, str] = {}  # term -> a word that analyzes to it
        for text in texts:
            for w in self.analyzer.words(text):
                t = self.analyzer.term(w)
                if t is not None:
                    self.word.setdefault(t, w)
        self.term_scores: dict[str, np.ndarray] = {}

    def _term(self, term: str) -> np.ndarray:
        if term not in self.term_scores:
            w = self.word.get(term)
            self.term_scores[term] = (
                self.bm25.scores(w) if w else np.zeros(len(self.doc_ids), np.float32)
            )
        return self.term_scores[term]

    def hits(self, query: str, *, docs: int = 0, terms: int = 10, keep: float = 0.8) -> list[Hit]:
        scores = self.bm25.scores(query)
        if docs:
            first = [i for i in np.argsort(-scores)[:docs] if scores[i] > 0]
            if first:
                w = np.exp(scores[first] - scores[first].max())
                w /= w.sum()
                model: Counter[str] = Counter()
                for i, wi in zip(first, w, strict=True):
                    size = sum(self.bags[i].values())
                    for term, tf in self.bags[i].items():
                        model[term] += wi * tf / size
                asked = Counter(self.analyzer.analyze(query))
                mix: Counter[str] = Counter(
                    {t: keep * c / sum(asked.values()) for t, c in asked.items()}
                )
                chosen = model.most_common(terms)
                total = sum(v for _, v in chosen)
                for t, v in chosen:
                    mix[t] += (1 - keep) * v / total
                scores = np.zeros(len(self.doc_ids), np.float32)
                for t, wt in mix.items():
                    scores += np.float32(wt) * self._term(t)
        order = np.flatnonzero(scores > 0)
        order = order[np.argsort(-scores[order], kind="stable")][:100]
        return [(self.doc_ids[i], self.doc_ids[i], float(scores[i])) for i in order]


async def main() -> None:
    train = load_dataset(DEFAULT_DIR, split="train")
    test = load_dataset(DEFAULT_DIR, split="test")
    docs = list(test.iter_corpus())
    folder = Path(tempfile.mkdtemp(prefix="bastion-levers-"))
    t0 = time.perf_counter()
    try:
        lists, vectors = await candidates(folder, train, test)
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    bench = Bench(train, test, lists)
    header = [
        f"SciFact levers: {len(train.queries)} train / {len(test.queries)} test claims; "
        f"candidates in {time.perf_counter() - t0:.0f} s; machine: {describe_machine()}",
        "",
        "| option | train nDCG@10 | train diff | p (train) | test nDCG@10 | test R@100 |",
        "|---|---:|---:|---:|---:|---:|",
    ]
    print("\n".join(header), flush=True)
    bench.option("**default: fusion.zscore, 100 + 100 chunks**")
    for depth in (50, 200, 500, 1000):
        bench.option(f"depth {depth} + {depth}", depth=depth)
    for weight in (0.9, 1.1):
        bench.option(f"vector weight {weight}", weight=weight)
    bench.option("a missing hit scores -1 (not its list's lowest)", missing=-1.0)
    bench.option("robust standard scores (median, MAD)", norm=_robust)
    bench.option("each list weighed by its best standard score", adaptive=True)
    bench.option("exp(0.5 z) summed", combine="exp")
    bench.option("CombMNZ over shifted standard scores", combine="mnz")
    bench.option("vector statistics over documents", dense_docs=True)
    bench.option("vector: best chunk + 0.3 (mean of chunks - best)", mean_share=0.3)
    queries = dict(train.queries) | dict(test.queries)
    for k1, b in ((1.2, 0.75), (1.5, 0.9), (0.9, 0.75), (2.0, 0.75)):
        found = await keyword_lists(docs, queries, k1, b)
        bench.row(
            f"BM25 k1={k1} b={b}",
            {qid: fuse(found[qid], vec) for qid, (_, vec) in lists.items()},
        )
    rm3 = RM3([d.doc_id for d in docs], [f"{d.title} {d.text}".strip() for d in docs])
    for name, knobs in (
        ("whole-document BM25 (the RM3 baseline)", {}),
        ("RM3, 3 docs, 10 terms, query weight 0.8", {"docs": 3}),
        ("RM3, 10 docs, 20 terms, query weight 0.7", {"docs": 10, "terms": 20, "keep": 0.7}),
    ):
        bench.row(
            name,
            {
                qid: fuse(rm3.hits(queries[qid], **knobs), vec)  # type: ignore[arg-type]
                for qid, (_, vec) in lists.items()
            },
        )
    ids = [d.doc_id for d in docs]
    titles = vectors["titles"]
    for share in (0.1, 0.3):
        run: Run = {}
        for qid, (kw, vec) in lists.items():
            base = fuse(kw, vec)
            z = dict(zip(ids, _z(titles @ np.asarray(vectors["queries"][qid])), strict=True))
            run[qid] = _top({d: s + share * z[d] for d, s in base.items()})
        bench.row(f"+ {share} x title similarity (standard score)", run)
    text = "\n".join(header + bench.lines)
    print()
    print(text)
    (HERE / "results").mkdir(exist_ok=True)
    out = HERE / "results" / f"hybrid_levers-{time.strftime('%Y%m%d-%H%M%S')}.md"
    out.write_text(text + "\n")


if __name__ == "__main__":
    asyncio.run(main())
