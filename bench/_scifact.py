"""Load the offline BEIR SciFact copy and score a run with nDCG@10.

Shared by the benchmark scripts in ``bench/``. The files live in ``../shared/data/scifact``,
beside the repository (override with ``$BASTION_SCIFACT_DIR``). Loading and scoring are
:mod:`bastion.knowledge.eval`'s (``load_dataset``, ``evaluate``: pytrec_eval's
``ndcg_cut_10`` as BEIR uses it); this module only reshapes them for the scripts.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from bastion.knowledge.eval import evaluate, load_dataset, percentile

__all__ = [
    "CORPUS_FILE",
    "SciFact",
    "dense_search",
    "doc_scores",
    "load_scifact",
    "ndcg_at_k",
    "p50_p99_ms",
]

DEFAULT_DIR = Path(
    os.environ.get(
        "BASTION_SCIFACT_DIR", Path(__file__).resolve().parents[2] / "shared" / "data" / "scifact"
    )
)


@dataclass(frozen=True, kw_only=True)
class SciFact:
    """The corpus, the queries of one split and its relevance judgements."""

    doc_ids: list[str]
    """Corpus document ids, in file order."""
    titles: list[str]
    texts: list[str]
    query_ids: list[str]
    """Ids of the queries that have judgements in the split, in file order."""
    queries: list[str]
    qrels: dict[str, dict[str, int]]
    """query id -> {doc id: relevance}."""

    def documents(self) -> list[str]:
        """Each document as BEIR embeds it: ``title + " " + text``."""
        return [f"{t} {x}".strip() for t, x in zip(self.titles, self.texts, strict=True)]


def load_scifact(root: Path = DEFAULT_DIR, *, split: str = "test") -> SciFact:
    dataset = load_dataset(root, split=split)
    corpus = list(dataset.iter_corpus())
    return SciFact(
        doc_ids=[d.doc_id for d in corpus],
        titles=[d.title for d in corpus],
        texts=[d.text for d in corpus],
        query_ids=list(dataset.queries),
        queries=list(dataset.queries.values()),
        qrels={qid: dict(judged) for qid, judged in dataset.qrels.items()},
    )


def ndcg_at_k(
    run: Mapping[str, Sequence[str]], qrels: Mapping[str, Mapping[str, int]], k: int = 10
) -> float:
    """Mean nDCG@k over the judged queries; ``run`` maps query id -> ranked doc ids."""
    return evaluate(run, qrels, ks=(k,)).figures[f"ndcg@{k}"]


CORPUS_FILE = re.compile(r"/scifact/(.+)\.md$")
"""The path of a SciFact document in the benchmarks' workspaces; group 1 is its id."""


def doc_scores(hits: Iterable[tuple[str, float]], k: int = 100) -> dict[str, float]:
    """Chunk hits ``(path, score)``, best first, to the scores of the first ``k`` SciFact
    documents (``/scifact/<id>.md``): a document scores its best chunk."""
    best: dict[str, float] = {}
    for path, score in hits:
        m = CORPUS_FILE.search(path)
        if m and m.group(1) not in best:
            best[m.group(1)] = score
        if len(best) >= k:
            break
    return best


def p50_p99_ms(seconds: Sequence[float]) -> tuple[float, float]:
    """The median and 99th percentile of latencies in seconds, in milliseconds."""
    return percentile(seconds, 50) * 1e3, percentile(seconds, 99) * 1e3


def dense_search(
    query_vecs: np.ndarray, doc_vecs: np.ndarray, doc_ids: Sequence[str], k: int = 10
) -> list[list[str]]:
    """Top-k doc ids per query by dot product (cosine for L2-normalized rows)."""
    scores = query_vecs.astype(np.float32) @ doc_vecs.astype(np.float32).T
    top = np.argpartition(-scores, kth=min(k, scores.shape[1] - 1), axis=1)[:, :k]
    out = []
    for row, idx in zip(scores, top, strict=True):
        order = idx[np.argsort(-row[idx], kind="stable")]
        out.append([doc_ids[j] for j in order])
    return out
