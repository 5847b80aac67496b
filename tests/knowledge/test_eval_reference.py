"""Bastion's retrieval metrics against ``pytrec_eval`` (``trec_eval``'s own C code).

Every figure :mod:`bastion.knowledge.eval.metrics` computes — nDCG@k, recall@k, MRR@k, per
query and averaged — must equal the reference to 1e-9: on a real BM25 run over BEIR SciFact
(both splits, the engine's own scores) and on the cases where implementations part ways:
ties, 32-bit score rounding, graded and negative judgements, queries without a ranking or
without a relevant document.

``trec_eval`` has no cut-off for ``recip_rank``: the reference MRR@k is its reciprocal rank
when that rank is within k (rr >= 1/k), else 0. ``pytrec_eval`` leaves out judged queries that
have no ranking; Bastion counts them as 0, so the reference mean divides by every judged query.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from pathlib import Path

import numpy as np
import pytest
import pytrec_eval
from hypothesis import given, settings
from hypothesis import strategies as st

from bastion.knowledge.eval import evaluate, load_dataset, ndcg, recall, reciprocal_rank
from bastion.knowledge.eval.metrics import Qrels
from bastion.knowledge.index.bm25 import BM25

SCIFACT = Path(__file__).resolve().parents[2].parent / "shared" / "data" / "scifact"
KS = (1, 3, 5, 10, 100)
TOLERANCE = 1e-9
Scored = dict[str, dict[str, float]]


def _reference(run: Scored, qrels: Qrels, ks: Sequence[int] = KS) -> dict[str, dict[str, float]]:
    """query id -> ``ndcg@k`` / ``recall@k`` / ``mrr@k`` from trec_eval, for every judged
    query (0 where pytrec_eval leaves a query out)."""
    cut = ",".join(map(str, ks))
    measures = {f"ndcg_cut.{cut}", f"recall.{cut}", "recip_rank"}
    judged = {qid: dict(j) for qid, j in qrels.items()}
    scored = pytrec_eval.RelevanceEvaluator(judged, measures).evaluate(run)
    rows: dict[str, dict[str, float]] = {}
    for qid in qrels:
        got = scored.get(qid)
        row: dict[str, float] = {}
        for k in ks:
            rr = got["recip_rank"] if got else 0.0
            row[f"ndcg@{k}"] = got[f"ndcg_cut_{k}"] if got else 0.0
            row[f"recall@{k}"] = got[f"recall_{k}"] if got else 0.0
            row[f"mrr@{k}"] = rr if rr >= 1 / k - 1e-12 else 0.0
        rows[qid] = row
    return rows


def _assert_same(run: Scored | Mapping[str, Sequence[str]], ref_run: Scored, qrels: Qrels) -> None:
    ours = evaluate(run, qrels, ks=KS, per_query=True)
    reference = _reference(ref_run, qrels)
    assert ours.per_query is not None
    assert set(ours.per_query) == set(reference)
    for qid, row in reference.items():
        for key, value in row.items():
            assert ours.per_query[qid][key] == pytest.approx(value, abs=TOLERANCE), (qid, key)
    for key in ours.figures:
        mean = math.fsum(row[key] for row in reference.values()) / max(len(reference), 1)
        assert ours.figures[key] == pytest.approx(mean, abs=TOLERANCE), key


# --- a real run on SciFact -------------------------------------------------------------------


@pytest.fixture(scope="module")
def scifact_index() -> tuple[BM25, list[str]]:
    index, ids = BM25(), []
    for slot, doc in enumerate(load_dataset(SCIFACT, split="test").iter_corpus()):
        index.add(slot, f"{doc.title} {doc.text}")
        ids.append(doc.doc_id)
    return index, ids


def _bm25_run(index: BM25, ids: list[str], queries: Mapping[str, str], depth: int) -> Scored:
    run: Scored = {}
    for qid, text in queries.items():
        scores = index.scores(text)
        top = np.argsort(-scores, kind="stable")[:depth]
        run[qid] = {ids[i]: float(scores[i]) for i in top if scores[i] > 0}
    return run


@pytest.mark.parametrize("split", ["test", "train"])
def test_scifact_bm25_run_matches_trec_eval(
    scifact_index: tuple[BM25, list[str]], split: str
) -> None:
    dataset = load_dataset(SCIFACT, split=split)
    run = _bm25_run(*scifact_index, dataset.queries, depth=100)
    assert len(dataset.qrels) >= 300
    _assert_same(run, run, dataset.qrels)
    assert evaluate(run, dataset.qrels).ndcg_at_10 > 0.6  # a real run, not an empty one


def test_scifact_run_as_id_lists_and_with_queries_missing(
    scifact_index: tuple[BM25, list[str]],
) -> None:
    dataset = load_dataset(SCIFACT, split="test")
    run = _bm25_run(*scifact_index, dataset.queries, depth=1000)  # deeper than every cut-off
    # the same ranking as doc ids in rank order (trec_eval's order, so the scores decide)
    order = {qid: _trec_order(scores) for qid, scores in run.items()}
    _assert_same(order, run, dataset.qrels)
    # every third judged query without a ranking: 0 for it, still counted in the mean
    partial = {qid: r for n, (qid, r) in enumerate(run.items()) if n % 3}
    _assert_same(partial, partial, dataset.qrels)


def _trec_order(scores: Mapping[str, float]) -> list[str]:
    """Score (as a 32-bit float) descending, then doc id descending: trec_eval's order."""
    return sorted(scores, key=lambda doc_id: (np.float32(scores[doc_id]), doc_id), reverse=True)


# --- the edge cases --------------------------------------------------------------------------

EDGES: list[tuple[str, Scored, dict[str, dict[str, int]]]] = [
    (
        "ties broken by doc id descending",
        {"q": {"a": 0.5, "b": 0.5, "c": 0.5, "B": 0.5, "_": 0.5, "d": 0.9}},
        {"q": {"a": 1, "B": 1, "x": 1}},
    ),
    ("all scores equal", {"q": {f"d{i}": 1.0 for i in range(30)}}, {"q": {"d7": 2, "d29": 1}}),
    (
        "scores equal as 32-bit floats",
        {"q": {"b": 1.0, "a": 1.0 + 1e-9, "c": 1.0 + 1e-6}, "r": {"b": 1e40, "a": 1e39}},
        {"q": {"a": 1}, "r": {"a": 1}},
    ),
    (
        "negative and infinite scores",
        {"q": {"a": -2.0, "b": -1.0, "c": math.inf, "d": -math.inf}},
        {"q": {"a": 1, "d": 1}},
    ),
    (
        "graded, zero and negative judgements",
        {"q": {"a": 0.1, "b": 0.2, "c": 0.3, "d": 0.4, "e": 0.5}},
        {"q": {"a": 3, "b": 0, "c": -1, "d": 1, "e": 2}},
    ),
    ("gain is the grade", {"q": {"low": 2.0, "high": 1.0}}, {"q": {"high": 3, "low": 1}}),
    (
        "no relevant document judged",
        {"q": {"a": 1.0}, "r": {"a": 1.0}},
        {"q": {"a": 0, "b": -1}, "r": {"a": 1}},
    ),
    ("an empty ranking", {"q": {}, "r": {"a": 1.0}}, {"q": {"a": 1}, "r": {"a": 1}}),
    ("a judged query with no ranking", {"r": {"a": 1.0}}, {"q": {"a": 1}, "r": {"a": 1}}),
    ("rankings of unjudged queries", {"q": {"a": 1.0}, "z": {"a": 1.0}}, {"q": {"a": 1}}),
    (
        "more relevant documents than k",
        {"q": {f"d{i:03}": 200.0 - i for i in range(150)}},
        {"q": {f"d{i:03}": 1 + i % 3 for i in range(0, 150, 2)}},
    ),
    ("nothing judged at all", {"q": {"a": 1.0}}, {}),
]


@pytest.mark.parametrize(("run", "qrels"), [e[1:] for e in EDGES], ids=[e[0] for e in EDGES])
def test_edge_cases_match_trec_eval(run: Scored, qrels: dict[str, dict[str, int]]) -> None:
    _assert_same(run, run, qrels)


def test_the_single_query_functions_agree_with_evaluate() -> None:
    run, qrels = EDGES[4][1], EDGES[4][2]
    reference = _reference(run, qrels)["q"]
    for k in KS:
        assert ndcg(run["q"], qrels["q"], k) == pytest.approx(reference[f"ndcg@{k}"], abs=1e-12)
        assert recall(run["q"], qrels["q"], k) == pytest.approx(reference[f"recall@{k}"])
        assert reciprocal_rank(run["q"], qrels["q"], k) == pytest.approx(reference[f"mrr@{k}"])


_DOC = st.sampled_from([*"abcdefgh", "B", "_", "d1", "d10"])
_SCORE = st.sampled_from([0.0, 0.5, 1.0, 1.0 + 1e-9, 2.5, -1.0, 1e39])
_GRADE = st.integers(min_value=-1, max_value=3)


@settings(max_examples=300, deadline=None)
@given(
    run=st.dictionaries(st.sampled_from(["q1", "q2", "q3"]), st.dictionaries(_DOC, _SCORE)),
    qrels=st.dictionaries(
        st.sampled_from(["q1", "q2", "q4"]), st.dictionaries(_DOC, _GRADE, min_size=1)
    ),
)
def test_random_runs_match_trec_eval(run: Scored, qrels: dict[str, dict[str, int]]) -> None:
    _assert_same(run, run, qrels)
