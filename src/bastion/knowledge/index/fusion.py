"""Hybrid fusion: two ranked lists of hits in, one out. Pure functions.

* :func:`zscore` — each list's scores as standard scores (mean 0, deviation 1 over the list),
  summed; a hit missing from a list gets that list's lowest. No weight to choose.
* :func:`rrf` — reciprocal rank fusion: ``sum 1 / (c + rank)``; ignores scores entirely.
* :func:`weighted` — each list's scores min-max normalized to [0, 1], then
  ``alpha * vector + (1 - alpha) * keyword``; a hit missing from a list gets 0 there.

Ties are broken deterministically: by chunk id in :func:`rrf`, by first appearance (keyword
list first) in :func:`zscore`, by the order of the more heavily weighted list in
:func:`weighted`.

The default is :func:`zscore`: on SciFact's train queries it ranked at least as well as the
best weight of :func:`weighted` and better than RRF, and it has no weight to tune on one corpus
(``bench/hybrid_quality.py``; figures in ``docs/benchmarks.md``, "Retrieval quality on
SciFact, chosen on train"). Min-max lets each list's
single best and worst hits set its scale; standard scores use every hit of the list.
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
    lists: list[tuple[dict[str, float], float]] = []
    for hits in (keyword, vector):
        if not hits:
            continue
        standard = _standard([h.score for h in hits])
        lists.append(
            ({h.chunk.chunk_id: z for h, z in zip(hits, standard, strict=True)}, min(standard))
        )
        for hit in hits:
            chunks.setdefault(hit.chunk.chunk_id, hit)
    scores = {key: sum(found.get(key, floor) for found, floor in lists) for key in chunks}
    order = sorted(scores, key=lambda key: -scores[key])  # stable: ties in first-seen order
    return [IndexHit(chunks[key].chunk, scores[key]) for key in order]


def _standard(values: Sequence[float]) -> list[float]:
    """``(v - mean) / deviation``; all zeros when the values are all equal."""
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
