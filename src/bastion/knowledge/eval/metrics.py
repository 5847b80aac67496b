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
``docs/decisions/`` (issue 11).
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
    return _figures(ranked_ids(ranking), judgements, (_check_k(k),))[f"ndcg@{k}"]


def recall(ranking: Ranking, judgements: Judgements, k: int) -> float:
    """Recall@k of one query: relevant docs in the top k / relevant docs (0 if none)."""
    return _figures(ranked_ids(ranking), judgements, (_check_k(k),))[f"recall@{k}"]


def reciprocal_rank(ranking: Ranking, judgements: Judgements, k: int) -> float:
    """1 / rank of the first doc with grade > 0 within the top k; 0 when there is none."""
    return _figures(ranked_ids(ranking), judgements, (_check_k(k),))[f"mrr@{k}"]


def mean_metric(name: str, rankings: Rankings, qrels: Qrels, k: int) -> float:
    """The mean of metric ``name`` (``ndcg``, ``recall`` or ``mrr``) @k over the judged queries."""
    if name not in _METRICS:
        raise ConfigurationError(f"unknown metric {name!r}; use one of {sorted(_METRICS)}")
    _check_k(k)
    if not qrels:
        return 0.0
    key = f"{name}@{k}"
    total = math.fsum(_figures(_ranked(rankings, qid), qrels[qid], (k,))[key] for qid in qrels)
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
    rows = {qid: _figures(_ranked(rankings, qid), judged, cutoffs) for qid, judged in qrels.items()}
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


_METRICS = ("ndcg", "recall", "mrr")


def _figures(
    ids: Sequence[str], judgements: Judgements, cutoffs: Sequence[int]
) -> dict[str, float]:
    """``ndcg@k``, ``recall@k`` and ``mrr@k`` of one query for each k in ``cutoffs`` (ascending),
    from one pass over its top ``max(cutoffs)``: DCG, ideal DCG and hits are running sums read
    at each cut-off."""
    ideal = sorted((g for g in judgements.values() if g > 0), reverse=True)
    if not ideal:
        return {f"{name}@{k}": 0.0 for k in cutoffs for name in _METRICS}
    top = max(cutoffs)
    dcg, hits, first = 0.0, 0, 0
    dcg_at, hits_at = [0.0], [0]  # after 0, 1, 2... ranks
    for rank, doc_id in enumerate(ids[:top], start=1):
        gain = judgements.get(doc_id, 0)
        if gain > 0:
            dcg += gain / math.log2(rank + 1)
            hits += 1
            first = first or rank
        dcg_at.append(dcg)
        hits_at.append(hits)
    idcg, idcg_at = 0.0, [0.0]
    for rank, gain in enumerate(ideal[:top], start=1):
        idcg += gain / math.log2(rank + 1)
        idcg_at.append(idcg)
    out: dict[str, float] = {}
    for k in cutoffs:
        seen = min(k, len(dcg_at) - 1)
        out[f"ndcg@{k}"] = dcg_at[seen] / idcg_at[min(k, len(idcg_at) - 1)]
        out[f"recall@{k}"] = hits_at[seen] / len(ideal)
        out[f"mrr@{k}"] = 1.0 / first if 0 < first <= k else 0.0
    return out


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
