"""Retrieval metrics: pure functions over rankings and graded judgements (qrels).

A *ranking* is one query's result: either doc ids in rank order (``["d3", "d1"]``), or
doc id -> score (``{"d1": 0.2, "d3": 0.9}``), which is ranked the way ``trec_eval`` (and so
``pytrec_eval`` and BEIR) ranks a run: score descending, ties broken by doc id *descending*
(scores compared as 32-bit floats, as ``trec_eval`` stores them).
A doc id repeated in a list counts at its first rank only; later copies are dropped before
the cut-off, so they take no rank.

*Judgements* map doc id -> grade; a grade > 0 is relevant, unjudged documents are grade 0.

* ``ndcg(k)``: DCG@k / ideal DCG@k, with gain = grade (grades <= 0 give nothing) and
  discount ``log2(rank + 1)``; the ideal ranking puts the judged grades in descending order.
  This is ``trec_eval``'s ``ndcg_cut.k``. 0 when the query has no relevant document.
* ``recall(k)``: relevant documents in the top k / all relevant documents (``recall.k``).
* ``reciprocal_rank(k)``: 1 / rank of the first relevant document in the top k, else 0.

:func:`evaluate` averages them over the judged queries (every query in the qrels; a query
with no ranking scores 0) into an :class:`Evaluation`.

``tests/knowledge/test_eval_reference.py`` holds every figure to ``pytrec_eval`` (trec_eval's C
code) within 1e-9, on SciFact and on edge cases; why these stay hand-written rather than call it:
``docs/decisions.md`` (issue 11).
"""

from __future__ import annotations

import math
from array import array
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from types import MappingProxyType

from bastion.core.errors import ConfigurationError

__all__ = [
    "DEFAULT_KS",
    "Evaluation",
    "Judgements",
    "Qrels",
    "Ranking",
    "Rankings",
    "evaluate",
    "mean_metric",
    "ndcg",
    "ranked_ids",
    "recall",
    "reciprocal_rank",
]

Ranking = Sequence[str] | Mapping[str, float]
"""One query's result: doc ids in rank order, or doc id -> score."""
Rankings = Mapping[str, Ranking]
"""query id -> ranking."""
Judgements = Mapping[str, int]
"""doc id -> relevance grade for one query."""
Qrels = Mapping[str, Judgements]
"""query id -> judgements."""

DEFAULT_KS: tuple[int, ...] = (1, 3, 5, 10, 100)
"""Cut-offs :func:`evaluate` reports by default (10 and 100 are always included)."""
_ALWAYS: tuple[int, ...] = (10, 100)


def ranked_ids(ranking: Ranking) -> list[str]:
    """The ranking as doc ids in rank order, each once (trec_eval order for scored input)."""
    if isinstance(ranking, str):
        raise ConfigurationError("a ranking is a list of doc ids or a doc id -> score mapping")
    if isinstance(ranking, Mapping):
        # trec_eval keeps scores as C floats: round to float32 so near-equal scores tie as there.
        try:
            scores = array("f", ranking.values())
        except TypeError:
            raise ConfigurationError("a ranking score is not a number") from None
        if any(math.isnan(s) for s in scores):
            raise ConfigurationError("a ranking score is NaN; scores must be numbers")
        ordered = sorted(zip(scores, ranking, strict=True), reverse=True)
        return [doc_id for _, doc_id in ordered]
    return list(dict.fromkeys(ranking))


def ndcg(ranking: Ranking, judgements: Judgements, k: int) -> float:
    """nDCG@k of one query, as ``trec_eval -m ndcg_cut.k`` computes it."""
    return _ndcg(ranked_ids(ranking), judgements, _check_k(k))


def recall(ranking: Ranking, judgements: Judgements, k: int) -> float:
    """Recall@k of one query: relevant docs in the top k / relevant docs (0 if none)."""
    return _recall(ranked_ids(ranking), judgements, _check_k(k))


def reciprocal_rank(ranking: Ranking, judgements: Judgements, k: int) -> float:
    """1 / rank of the first doc with grade > 0 within the top k; 0 when there is none."""
    return _reciprocal_rank(ranked_ids(ranking), judgements, _check_k(k))


def mean_metric(name: str, rankings: Rankings, qrels: Qrels, k: int) -> float:
    """The mean of metric ``name`` (``ndcg``, ``recall`` or ``mrr``) @k over the judged queries."""
    metric = _METRICS.get(name)
    if metric is None:
        raise ConfigurationError(f"unknown metric {name!r}; use one of {sorted(_METRICS)}")
    _check_k(k)
    if not qrels:
        return 0.0
    total = math.fsum(metric(_ranked(rankings, qid), qrels[qid], k) for qid in qrels)
    return total / len(qrels)


@dataclass(frozen=True, kw_only=True, slots=True)
class Evaluation:
    """Mean metrics over the judged queries of one run."""

    ndcg_at_10: float
    recall_at_10: float
    recall_at_100: float
    mrr_at_10: float
    num_queries: int
    """Queries evaluated: every query in the qrels."""
    figures: Mapping[str, float]
    """``ndcg@k``, ``recall@k`` and ``mrr@k`` for every cut-off, in that order, k ascending."""
    per_query: Mapping[str, Mapping[str, float]] | None = None
    """query id -> the same keys as ``figures``, when ``evaluate(per_query=True)``."""


def evaluate(
    rankings: Rankings, qrels: Qrels, *, ks: Iterable[int] = DEFAULT_KS, per_query: bool = False
) -> Evaluation:
    """Score ``rankings`` against ``qrels`` at each cut-off in ``ks`` (plus 10 and 100).

    Queries are the qrels' queries; rankings for other queries are ignored and a judged query
    without a ranking scores 0 everywhere.
    """
    cutoffs = sorted({_check_k(k) for k in ks} | set(_ALWAYS))
    names = [f"{name}@{k}" for k in cutoffs for name in _METRICS]
    rows: dict[str, dict[str, float]] = {}
    for qid, judged in qrels.items():
        ids = _ranked(rankings, qid)
        rows[qid] = {
            f"{name}@{k}": metric(ids, judged, k)
            for k in cutoffs
            for name, metric in _METRICS.items()
        }
    n = len(rows)
    figures = {key: (math.fsum(r[key] for r in rows.values()) / n if n else 0.0) for key in names}
    return Evaluation(
        ndcg_at_10=figures["ndcg@10"],
        recall_at_10=figures["recall@10"],
        recall_at_100=figures["recall@100"],
        mrr_at_10=figures["mrr@10"],
        num_queries=n,
        figures=MappingProxyType(figures),
        per_query=(
            MappingProxyType({qid: MappingProxyType(r) for qid, r in rows.items()})
            if per_query
            else None
        ),
    )


def _ndcg(ids: Sequence[str], judgements: Judgements, k: int) -> float:
    ideal = sorted((g for g in judgements.values() if g > 0), reverse=True)[:k]
    if not ideal:
        return 0.0
    dcg = 0.0
    for rank, doc_id in enumerate(ids[:k], start=1):
        gain = judgements.get(doc_id, 0)
        if gain > 0:
            dcg += gain / math.log2(rank + 1)
    idcg = 0.0
    for rank, gain in enumerate(ideal, start=1):
        idcg += gain / math.log2(rank + 1)
    return dcg / idcg


def _recall(ids: Sequence[str], judgements: Judgements, k: int) -> float:
    relevant = sum(1 for g in judgements.values() if g > 0)
    if not relevant:
        return 0.0
    return sum(1 for doc_id in ids[:k] if judgements.get(doc_id, 0) > 0) / relevant


def _reciprocal_rank(ids: Sequence[str], judgements: Judgements, k: int) -> float:
    for rank, doc_id in enumerate(ids[:k], start=1):
        if judgements.get(doc_id, 0) > 0:
            return 1.0 / rank
    return 0.0


_METRICS = {"ndcg": _ndcg, "recall": _recall, "mrr": _reciprocal_rank}


def _ranked(rankings: Rankings, qid: str) -> list[str]:
    ranking = rankings.get(qid)
    if ranking is None:
        return []
    try:
        return ranked_ids(ranking)
    except ConfigurationError as exc:
        raise ConfigurationError(f"ranking of query {qid!r}: {exc}") from None


def _check_k(k: int) -> int:
    if not isinstance(k, int) or isinstance(k, bool) or k < 1:
        raise ConfigurationError(f"cut-off k must be a positive integer, got {k!r}")
    return k
