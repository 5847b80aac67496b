"""BM25 against scores computed here from the formula (Lucene's idf), on a hand-checked corpus
and a synthetic one of 200 documents; removal and compaction against a rebuilt index; and the
analyzer it runs on documents and queries alike."""

from __future__ import annotations

import itertools
import math
import random
from collections import Counter

import numpy as np
import pytest

from bastion.knowledge.index.analysis import ENGLISH_STOPWORDS, Analyzer
from bastion.knowledge.index.bm25 import BM25

ANALYZER = Analyzer()


def reference_scores(
    docs: list[str], query: str, *, k1: float = 1.5, b: float = 0.75
) -> list[float]:
    """The formula of bm25.py's docstring, in plain float64 Python::

    idf(t) = ln(1 + (N - df + 0.5) / (df + 0.5))
    score  = sum over distinct query terms of idf * tf * (k1 + 1) / (tf + k1 * (1 - b + b * dl / avgdl))
    """
    terms = [Counter(ANALYZER.analyze(d)) for d in docs]
    lengths = [sum(t.values()) for t in terms]
    n = len(docs)
    avgdl = sum(lengths) / n
    query_terms = list(dict.fromkeys(ANALYZER.analyze(query)))
    df = {term: sum(1 for t in terms if term in t) for term in query_terms}
    out = []
    for tf_of, dl in zip(terms, lengths, strict=True):
        score = 0.0
        for term in query_terms:
            tf = tf_of.get(term, 0)
            if not tf:
                continue
            idf = math.log(1 + (n - df[term] + 0.5) / (df[term] + 0.5))
            score += idf * tf * (k1 + 1) / (tf + k1 * (1 - b + b * dl / avgdl))
        out.append(score)
    return out


def build(docs: list[str], **params: float) -> BM25:
    bm25 = BM25(ANALYZER, **params)
    for slot, text in enumerate(docs):
        bm25.add(slot, text)
    return bm25


TINY = [
    "cats chase mice",
    "dogs chase cats and cats run",
    "mice eat cheese",
    "a dog sleeps",
]


def test_tiny_corpus_by_hand() -> None:
    bm25 = build(TINY)
    # "cat": df = 2 of N = 4 (slot 0 tf 1, dl 3; slot 1 tf 2, dl 5); avgdl = (3 + 5 + 3 + 2) / 4
    idf = math.log(1 + (4 - 2 + 0.5) / (2 + 0.5))
    avgdl = 13 / 4
    slot0 = idf * 1 * 2.5 / (1 + 1.5 * (0.25 + 0.75 * 3 / avgdl))
    slot1 = idf * 2 * 2.5 / (2 + 1.5 * (0.25 + 0.75 * 5 / avgdl))
    np.testing.assert_allclose(bm25.scores("cat"), [slot0, slot1, 0, 0], rtol=1e-6)
    assert bm25.scores("cat")[1] > bm25.scores("cat")[0]


@pytest.mark.parametrize(
    "query", ["cat", "cats mice", "chase chase", "dog cheese", "the", "unicorn", "sleeping dogs"]
)
@pytest.mark.parametrize(("k1", "b"), [(1.5, 0.75), (1.2, 0.0), (0.9, 1.0)])
def test_tiny_corpus_matches_the_formula(query: str, k1: float, b: float) -> None:
    bm25 = build(TINY, k1=k1, b=b)
    expected = reference_scores(TINY, query, k1=k1, b=b)
    np.testing.assert_allclose(bm25.scores(query), expected, rtol=1e-5, atol=1e-5)


def _synthetic_corpus(n_docs: int = 200, seed: int = 11) -> tuple[list[str], list[str]]:
    """Documents whose words follow a Zipf-like law (a few common, many rare), lengths 5-120;
    queries of 1-4 words drawn from the same vocabulary."""
    rng = random.Random(seed)
    vocab = [f"term{i}x" for i in range(600)]
    weights = [1.0 / (rank + 1) for rank in range(len(vocab))]
    docs = [" ".join(rng.choices(vocab, weights, k=rng.randint(5, 120))) for _ in range(n_docs)]
    queries = [" ".join(rng.choices(vocab, weights, k=rng.randint(1, 4))) for _ in range(40)]
    queries += [" ".join(rng.sample(vocab[300:], 3)) for _ in range(10)]  # rare terms
    return docs, queries


def test_synthetic_corpus_scores_and_rankings() -> None:
    docs, queries = _synthetic_corpus()
    bm25 = build(docs)
    assert len(bm25) == bm25.slots == len(docs)
    for query in queries:
        got = bm25.scores(query)
        expected = np.array(reference_scores(docs, query))
        np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-5)
        top = np.argsort(-got, kind="stable")[:10]
        # the ranking agrees with the reference up to float32 rounding of near-ties
        assert all(expected[a] >= expected[b] - 1e-5 for a, b in itertools.pairwise(top))
        assert set(np.flatnonzero(got > 0)) == set(np.flatnonzero(expected > 0))


def test_removing_slots_equals_rebuilding_without_them() -> None:
    docs, queries = _synthetic_corpus(seed=5)
    bm25 = build(docs)
    removed = set(random.Random(1).sample(range(len(docs)), 60))
    for slot in removed:
        bm25.remove(slot)
    bm25.remove(next(iter(removed)))  # idempotent
    keep = [s for s in range(len(docs)) if s not in removed]
    fresh = build([docs[s] for s in keep])
    assert len(bm25) == len(fresh) == len(keep)
    for query in queries:
        got = bm25.scores(query)
        np.testing.assert_allclose(got[keep], fresh.scores(query), rtol=1e-5, atol=1e-6)
        assert not got[sorted(removed)].any()


def test_removing_every_slot() -> None:
    bm25 = build(TINY)
    for slot in range(len(TINY)):
        bm25.remove(slot)
    assert len(bm25) == 0
    assert not bm25.scores("cat").any()
    bm25.add(len(TINY), "cats again")
    assert bm25.scores("cat")[len(TINY)] > 0


def test_compact_keeps_scores() -> None:
    docs, queries = _synthetic_corpus(seed=9)
    bm25 = build(docs)
    removed = set(range(0, len(docs), 3))
    for slot in removed:
        bm25.remove(slot)
    keep = np.array([s for s in range(len(docs)) if s not in removed], dtype=np.int64)
    before = {q: bm25.scores(q)[keep] for q in queries}
    bm25.compact(keep)
    assert bm25.slots == len(bm25) == len(keep)
    fresh = build([docs[s] for s in keep])
    for query in queries:
        np.testing.assert_allclose(bm25.scores(query), before[query], rtol=1e-6, atol=1e-7)
        np.testing.assert_allclose(bm25.scores(query), fresh.scores(query), rtol=1e-5, atol=1e-6)
    bm25.add(len(keep), docs[0])  # numbering goes on from the compacted end
    fresh.add(len(keep), docs[0])
    for query in queries[:10]:
        np.testing.assert_allclose(bm25.scores(query), fresh.scores(query), rtol=1e-5, atol=1e-6)


def test_compact_can_keep_a_removed_slot_removed() -> None:
    bm25 = build(TINY)
    bm25.remove(1)
    bm25.compact(np.array([0, 1, 2], dtype=np.int64))
    assert bm25.slots == 3
    assert len(bm25) == 2
    assert bm25.scores("cat")[1] == 0
    fresh = build([TINY[0], TINY[2]])
    np.testing.assert_allclose(bm25.scores("mice")[[0, 2]], fresh.scores("mice"), rtol=1e-6)


def test_masked_scores_are_those_of_the_visible_entries_alone() -> None:
    """A filtered search scores as if the hidden entries did not exist: N, df and avgdl come
    from what the mask admits, so a score tells nothing of hidden entries."""
    docs, queries = _synthetic_corpus(seed=3)
    bm25 = build(docs)
    mask = np.zeros(len(docs), dtype=bool)
    mask[::4] = True
    alone = build([d for d, keep in zip(docs, mask, strict=True) if keep])
    for query in queries[:15]:
        masked = bm25.scores(query, mask)
        np.testing.assert_allclose(masked[mask], alone.scores(query), rtol=1e-5, atol=1e-6)
        assert not masked[~mask].any()
    assert_array_equal = np.testing.assert_array_equal
    assert_array_equal(
        bm25.scores(queries[0], np.ones(len(docs), dtype=bool)), bm25.scores(queries[0])
    )


def test_slots_must_be_added_in_order() -> None:
    bm25 = build(TINY)
    with pytest.raises(ValueError, match="next slot"):
        bm25.add(len(TINY) + 1, "skips a slot")
    with pytest.raises(ValueError, match="next slot"):
        bm25.add(0, "reuses a slot")


def test_query_terms_count_once() -> None:
    bm25 = build(TINY)
    np.testing.assert_array_equal(bm25.scores("cat cats CAT"), bm25.scores("cat"))


def test_empty_index_and_empty_documents() -> None:
    bm25 = BM25()
    assert bm25.scores("anything").shape == (0,)
    bm25.add(0, "")
    bm25.add(1, "the and of")
    bm25.add(2, "real words")
    assert len(bm25) == 3
    scores = bm25.scores("real")
    assert scores[2] > 0
    assert not scores[:2].any()
    np.testing.assert_allclose(scores, reference_scores(["", "the and of", "real words"], "real"))


def test_scores_update_as_documents_arrive() -> None:
    bm25 = build(TINY[:2])
    first = bm25.scores("mice")[0]
    bm25.add(2, TINY[2])  # a second document with "mice": df and avgdl change
    np.testing.assert_allclose(bm25.scores("mice"), reference_scores(TINY[:3], "mice"), rtol=1e-6)
    assert bm25.scores("mice")[0] != first


# -- the analyzer ---------------------------------------------------------------------------------


def test_lower_cases() -> None:
    assert ANALYZER.analyze("Paris PARIS paris") == ["pari"] * 3


def test_drops_stop_words() -> None:
    assert ANALYZER.analyze("The cat is on the mat and it is not there") == ["cat", "mat"]
    assert ANALYZER.analyze("the and of") == []
    assert len(ENGLISH_STOPWORDS) == 33


@pytest.mark.parametrize(
    ("word", "stem"),
    [("running", "run"), ("runs", "run"), ("connected", "connect"), ("connection", "connect")],
)
def test_stems(word: str, stem: str) -> None:
    assert ANALYZER.analyze(word) == [stem]


def test_unicode_is_normalized() -> None:
    full_width = "".join(chr(ord(ch) + 0xFEE0) for ch in "RUNNING")  # U+FF32 ...
    assert ANALYZER.analyze(full_width) == ["run"]
    assert ANALYZER.analyze("\ufb01le") == ANALYZER.analyze("file")  # the "fi" ligature
    assert ANALYZER.analyze("cafe\u0301") == ANALYZER.analyze("caf\u00e9")  # combining accent


def test_drops_one_letter_tokens_and_splits_on_punctuation() -> None:
    assert ANALYZER.analyze("a b c x-ray e-mail 42 7") == ["ray", "mail", "42"]
    assert ANALYZER.analyze("snake_case,comma;semi") == ["snake_cas", "comma", "semi"]


def test_keeps_repeats_for_term_frequency() -> None:
    assert ANALYZER.analyze("cat cat dog") == ["cat", "cat", "dog"]


def test_name_tells_analyzers_apart() -> None:
    assert Analyzer().name == Analyzer().name
    assert Analyzer().name != Analyzer(stopwords=frozenset()).name
    assert Analyzer().name != Analyzer(language="german").name


# -- batches, segments and the score cache -----------------------------------------------------


def test_a_batch_scores_like_one_by_one() -> None:
    docs, queries = _synthetic_corpus(seed=21)
    batched = BM25(ANALYZER)
    batched.add_many(0, docs[:150])
    batched.add_many(150, docs[150:])
    single = build(docs)
    for query in queries:
        np.testing.assert_allclose(batched.scores(query), single.scores(query), rtol=1e-6)
    with pytest.raises(ValueError, match="next slot"):
        batched.add_many(0, ["reuses slots"])


def test_many_small_writes_stay_in_few_segments() -> None:
    docs, queries = _synthetic_corpus(n_docs=300, seed=4)
    bm25 = build(docs)  # 300 writes of one entry each
    assert bm25._postings.segments <= 12
    for query in queries[:20]:
        np.testing.assert_allclose(
            bm25.scores(query), reference_scores(docs, query), rtol=1e-5, atol=1e-5
        )


def test_cached_term_scores_follow_every_change() -> None:
    """Scores kept between queries are dropped by any add or remove: a query after a change
    gives the formula's scores over the collection as it is now."""
    docs, queries = _synthetic_corpus(seed=8)
    bm25 = build(docs[:100])
    for query in queries:
        bm25.scores(query)  # fill the cache
    bm25.add_many(100, docs[100:150])
    for query in queries:
        np.testing.assert_allclose(
            bm25.scores(query), reference_scores(docs[:150], query), rtol=1e-5, atol=1e-5
        )
    for slot in range(0, 150, 2):
        bm25.remove(slot)
    kept = [docs[s] for s in range(1, 150, 2)]
    for query in queries:
        np.testing.assert_allclose(
            bm25.scores(query)[1:150:2], reference_scores(kept, query), rtol=1e-5, atol=1e-5
        )


def test_masked_scores_after_changes_use_the_visible_entries_only() -> None:
    """The per-mask cache is rebuilt after a write: a hidden entry added later still does not
    move a visible entry's score."""
    docs, queries = _synthetic_corpus(seed=13)
    bm25 = build(docs[:100])
    mask = np.zeros(200, dtype=bool)
    mask[:100:2] = True
    before = {q: bm25.scores(q, mask)[:100] for q in queries}
    bm25.add_many(100, docs[100:200])  # hidden: the mask does not admit them
    for query in queries:
        np.testing.assert_array_equal(bm25.scores(query, mask)[:100], before[query])
        assert not bm25.scores(query, mask)[100:].any()


def test_capped_merges_keep_the_scores(monkeypatch: pytest.MonkeyPatch) -> None:
    """Segments stop merging at a size cap (bounded memory per write); the scores do not
    depend on how the postings are split."""
    from bastion.knowledge.index import postings

    monkeypatch.setattr(postings, "_MERGED", 300)
    docs, queries = _synthetic_corpus(n_docs=200, seed=17)
    bm25 = build(docs)
    assert bm25._postings.segments > 5
    for query in queries:
        np.testing.assert_allclose(
            bm25.scores(query), reference_scores(docs, query), rtol=1e-5, atol=1e-5
        )
