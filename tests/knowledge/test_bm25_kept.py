"""The per-term scores a BM25 view keeps between queries stay within their bound
(``bm25._KEPT`` entries), and dropping them changes no score."""

from __future__ import annotations

import random

import numpy as np
import pytest

from bastion.knowledge.index import bm25 as module
from bastion.knowledge.index.bm25 import BM25

WORDS = [f"w{i}x" for i in range(200)]


def corpus(count: int) -> tuple[list[str], list[int]]:
    rng = random.Random(11)
    texts = [" ".join(rng.choices(WORDS, k=rng.randint(3, 40))) for _ in range(count)]
    return texts, [i // 3 for i in range(count)]  # three entries a document


def build(texts: list[str], documents: list[int]) -> BM25:
    index = BM25()
    index.add_many(0, texts, documents)
    return index


def test_the_scores_kept_stay_within_the_bound_and_score_alike(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(module, "_CACHED", 0)  # no bulk scoring: each term on first use
    texts, documents = corpus(600)
    queries = [" ".join(random.Random(q).sample(WORDS, 3)) for q in range(60)]
    unbounded = build(texts, documents)
    want = [unbounded.ranked(q) for q in queries]
    monkeypatch.setattr(module, "_KEPT", 400)
    bounded = build(texts, documents)
    for query, expected in zip(queries, want, strict=True):
        assert np.array_equal(bounded.ranked(query), expected)
        view = bounded._view
        assert view is not None
        assert view.bulk is None  # the per-term path, the one the bound applies to
        assert 0 < view.cached <= 400
        assert view.cached == sum(len(s) for s, _ in view.combined.values())
