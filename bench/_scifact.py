"""Load the offline BEIR SciFact copy and score a run with nDCG@10.

Shared by the benchmark scripts in ``bench/``. The files live in ``../shared/data/scifact``,
beside the repository (override with ``$BASTION_SCIFACT_DIR``); the loader accepts BEIR's
own format too (an extra ``metadata`` key per line, CRLF line ends in the qrels).

nDCG@10 follows pytrec_eval's ``ndcg_cut_10`` as BEIR uses it: linear gain (the relevance
score), ``log2(rank + 1)`` discount, the ideal ranking built from the qrels of that query.
Queries with no relevant documents in the qrels are not scored.
"""

from __future__ import annotations

import json
import math
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

__all__ = ["SciFact", "dense_search", "load_scifact", "ndcg_at_k"]

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


def _jsonl(path: Path) -> list[dict[str, str]]:
    with path.open(encoding="utf-8") as fh:
        return [json.loads(line) for line in fh if line.strip()]


def load_scifact(root: Path = DEFAULT_DIR, *, split: str = "test") -> SciFact:
    corpus = _jsonl(root / "corpus.jsonl")
    qrels: dict[str, dict[str, int]] = {}
    with (root / "qrels" / f"{split}.tsv").open(encoding="utf-8") as fh:
        for i, raw in enumerate(fh):
            line = raw.rstrip("\r\n")
            if not line or (i == 0 and line.startswith("query-id")):
                continue
            qid, did, score = line.split("\t")
            qrels.setdefault(qid, {})[did] = int(score)
    queries = [q for q in _jsonl(root / "queries.jsonl") if q["_id"] in qrels]
    return SciFact(
        doc_ids=[d["_id"] for d in corpus],
        titles=[d.get("title", "") for d in corpus],
        texts=[d.get("text", "") for d in corpus],
        query_ids=[q["_id"] for q in queries],
        queries=[q["text"] for q in queries],
        qrels=qrels,
    )


def ndcg_at_k(
    run: Mapping[str, Sequence[str]], qrels: Mapping[str, Mapping[str, int]], k: int = 10
) -> float:
    """Mean nDCG@k over the judged queries; ``run`` maps query id -> ranked doc ids."""
    scores = []
    for qid, rels in qrels.items():
        ideal = sorted((r for r in rels.values() if r > 0), reverse=True)[:k]
        if not ideal:
            continue
        ranked = run.get(qid, [])[:k]
        dcg = sum(rels.get(d, 0) / math.log2(i + 2) for i, d in enumerate(ranked))
        idcg = sum(r / math.log2(i + 2) for i, r in enumerate(ideal))
        scores.append(dcg / idcg)
    return float(np.mean(scores)) if scores else 0.0


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
