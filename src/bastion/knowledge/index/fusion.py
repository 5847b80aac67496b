"""Hybrid fusion: two ranked lists of hits in, one out. Pure functions.

* :func:`zscore` — each list's scores as standard scores (mean 0, deviation 1 over the list),
  summed; a hit missing from a list gets that list's lowest. No weight to choose. Keyword
  evidence is a document's: the keyword list's statistics are taken over its documents (each
  by its best hit), and every candidate chunk of a document the keyword list found carries
  that document's keyword score, so the chunk that best matches the question's meaning is not
  left without the lexical evidence of its own document (BM25 ranks documents, see
  :mod:`~bastion.knowledge.index.bm25`).
* :func:`rrf` — reciprocal rank fusion: ``sum 1 / (c + rank)``; ignores scores entirely.
* :func:`weighted` — each list's scores min-max normalized to [0, 1], then
  ``alpha * vector + (1 - alpha) * keyword``; a hit missing from a list gets 0 there.

Ties are broken deterministically: by chunk id in :func:`rrf`, by first appearance (keyword
list first) in :func:`zscore`, by the order of the more heavily weighted list in
:func:`weighted`.

The default is :func:`zscore`: on SciFact's 809 train queries it scored nDCG@10 0.7426,
against 0.7364 when each chunk kept only its own keyword score (the former :func:`zscore`),
0.7359 for the best weight of :func:`weighted` (``alpha=0.4``) and 0.7242 for RRF, and it has
no weight to tune on one corpus; on the 300 test queries 0.7382 (``bench/hybrid_quality.py``,
``docs/decisions/``). Min-max lets each list's single best and worst hits set its scale;
standard scores use every hit of the list. The levers around it (candidate depth, a weight, the
value of a missing hit, robust or adaptive scores, BM25 ``k1``/``b``, RM3, a title signal) gain
nothing on train beyond noise (paired randomization test, ``bench/hybrid_levers.py``), and
Rocchio feedback in vector space, a document-level vector, a fusion learned on train and a
BM25 title field each lose on train (``bench/hybrid_feedback.py``).
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from bastion.knowledge.index.models import IndexHit

__all__ = ["rrf", "weighted", "zscore"]


def rrf(keyword: Sequence[IndexHit], vector: Sequence[IndexHit], *, c: int = 60) -> list[IndexHit]:
    scores: dict[str, float] = {}
    chunks: dict[str, IndexHit] = {}
    for hits in (keyword, vector):
        for rank, hit in enumerate(hits, start=1):
            key = hit.chunk.chunk_id
            scores[key] = scores.get(key, 0.0) + 1.0 / (c + rank)
            chunks.setdefault(key, hit)
    return _ranked(scores, chunks)


def weighted(
    keyword: Sequence[IndexHit], vector: Sequence[IndexHit], *, alpha: float = 0.5
) -> list[IndexHit]:
    scores: dict[str, float] = {}
    chunks: dict[str, IndexHit] = {}
    # The heavier list is read first and equal scores keep the order hits were first seen in:
    # the bottom hit of a list (normalized to 0) still ranks above hits missing from it, and
    # alpha=0 or alpha=1 gives exactly that list's order.
    lists = [(keyword, 1.0 - alpha), (vector, alpha)]
    lists.sort(key=lambda pair: -pair[1])
    for hits, weight in lists:
        for hit, norm in zip(hits, _minmax([h.score for h in hits]), strict=True):
            key = hit.chunk.chunk_id
            scores[key] = scores.get(key, 0.0) + weight * norm
            chunks.setdefault(key, hit)
    order = sorted(scores, key=lambda key: -scores[key])  # stable: ties in first-seen order
    return [IndexHit(chunks[key].chunk, scores[key]) for key in order]


def zscore(keyword: Sequence[IndexHit], vector: Sequence[IndexHit]) -> list[IndexHit]:
    chunks: dict[str, IndexHit] = {}
    for hits in (keyword, vector):
        for hit in hits:
            chunks.setdefault(hit.chunk.chunk_id, hit)
    best: dict[str, float] = {}  # document -> its best keyword score
    for hit in keyword:
        doc = hit.chunk.doc.doc_id
        if doc not in best or hit.score > best[doc]:
            best[doc] = hit.score
    lexical = dict(zip(best, _standard(list(best.values())), strict=True))
    dense = {
        h.chunk.chunk_id: z
        for h, z in zip(vector, _standard([h.score for h in vector]), strict=True)
    }
    low_lexical = min(lexical.values(), default=0.0)
    low_dense = min(dense.values(), default=0.0)
    scores = {
        key: (lexical.get(hit.chunk.doc.doc_id, low_lexical) if lexical else 0.0)
        + (dense.get(key, low_dense) if dense else 0.0)
        for key, hit in chunks.items()
    }
    order = sorted(scores, key=lambda key: -scores[key])  # stable: ties in first-seen order
    return [IndexHit(chunks[key].chunk, scores[key]) for key in order]


def _standard(values: Sequence[float]) -> list[float]:
    """``(v - mean) / deviation``; all zeros when the values are all equal."""
    if not values:
        return []
    mean = math.fsum(values) / len(values)
    spread = math.sqrt(math.fsum((v - mean) ** 2 for v in values) / len(values))
    if spread <= 1e-12:
        return [0.0] * len(values)
    return [(v - mean) / spread for v in values]


def _minmax(values: Sequence[float]) -> list[float]:
    if not values:
        return []
    lo, hi = min(values), max(values)
    if hi - lo <= 1e-12:
        return [1.0] * len(values)
    return [(v - lo) / (hi - lo) for v in values]


def _ranked(scores: dict[str, float], chunks: dict[str, IndexHit]) -> list[IndexHit]:
    order = sorted(scores, key=lambda key: (-scores[key], key))
    return [IndexHit(chunks[key].chunk, scores[key]) for key in order]
