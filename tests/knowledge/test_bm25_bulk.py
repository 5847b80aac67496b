"""After a bulk add, BM25 scores every term of the collection in one pass; the scores, the
matches and the statistics are exactly (bit for bit) those of scoring each term on first use."""

from __future__ import annotations

import random

import numpy as np
import pytest

from bastion.knowledge.index.bm25 import BM25

WORDS = [f"w{n}" for n in range(300)] + ["alpha", "beta", "gamma", "delta", "running", "runs"]


def _corpus(seed: int, size: int) -> tuple[list[str], list[int]]:
    rng = random.Random(seed)
    weights = [1 / (rank + 1) for rank in range(len(WORDS))]  # Zipf-like: shared terms
    texts = [" ".join(rng.choices(WORDS, weights, k=rng.randint(1, 40))) for _ in range(size)]
    documents, doc = [], 0
    for _ in range(size):  # runs of 1-4 entries per document, numbered in slot order
        documents.append(doc)
        if rng.random() < 0.45:
            doc += 1
    return texts, documents


def _queries(seed: int) -> list[str]:
    rng = random.Random(seed + 1)
    return [" ".join(rng.sample(WORDS, rng.randint(1, 8))) for _ in range(60)] + [
        "unknown words only",
        "",
        "w0 w0 w0",
    ]


def _bulk(texts: list[str], documents: list[int], removed: list[int]) -> BM25:
    index = BM25()
    index.add_many(0, texts, documents)
    for slot in removed:
        index.remove(slot)
    return index


def _lazy(texts: list[str], documents: list[int], removed: list[int]) -> BM25:
    """The same collection, added in small batches with a search after each: no add is
    large enough for the one-pass scoring."""
    index = BM25()
    for start in range(0, len(texts), 50):
        index.add_many(start, texts[start : start + 50], documents[start : start + 50])
        index.matches("w1")
    for slot in removed:
        index.remove(slot)
    return index


def _same(one: BM25, two: BM25, queries: list[str], mask: np.ndarray | None = None) -> None:
    for query in queries:
        slots_one, scores_one = one.matches(query, mask)
        slots_two, scores_two = two.matches(query, mask)
        assert np.array_equal(slots_one, slots_two), query
        assert np.array_equal(scores_one, scores_two), query
        assert np.array_equal(one.ranked(query, mask), two.ranked(query, mask)), query
        assert one.statistics(query, mask) == two.statistics(query, mask), query


@pytest.mark.parametrize("seed", [1, 2, 3])
@pytest.mark.parametrize("removals", [0, 40])
def test_one_pass_scores_are_the_per_term_scores(seed: int, removals: int) -> None:
    texts, documents = _corpus(seed, 700)
    removed = random.Random(seed).sample(range(len(texts)), removals)
    bulk, lazy = _bulk(texts, documents, removed), _lazy(texts, documents, removed)
    queries = _queries(seed)
    _same(bulk, lazy, queries)
    view = bulk._view  # the test must cover the one-pass path it claims to
    assert view is not None and view.bulk is not None and view.bulk.documented
    lazy_view = lazy._view
    assert lazy_view is not None and lazy_view.bulk is None


def test_documents_out_of_slot_order_keep_their_level_per_term() -> None:
    texts, documents = _corpus(7, 600)
    documents = [10_000 - doc for doc in documents]  # numbered against slot order
    bulk, lazy = _bulk(texts, documents, []), _lazy(texts, documents, [])
    _same(bulk, lazy, _queries(7))
    view = bulk._view
    assert view is not None and view.bulk is not None and not view.bulk.documented


def test_a_mask_that_hides_nothing_shares_the_scored_view_and_one_that_hides_some_does_not() -> (
    None
):
    texts, documents = _corpus(11, 600)
    bulk, lazy = _bulk(texts, documents, []), _lazy(texts, documents, [])
    everything = np.ones(len(texts), dtype=bool)
    some = np.arange(len(texts)) % 3 != 0
    _same(bulk, lazy, _queries(11), everything)
    _same(bulk, lazy, _queries(11), some)


def test_a_write_after_the_bulk_add_is_scored_with_the_new_statistics() -> None:
    texts, documents = _corpus(5, 600)
    bulk, lazy = _bulk(texts, documents, []), _lazy(texts, documents, [])
    queries = _queries(5)
    _same(bulk, lazy, queries)
    for index in (bulk, lazy):  # one small write: N, df and avgdl change for every term
        index.add_many(len(texts), ["alpha beta w3 w3 w9"], [documents[-1] + 1])
        index.remove(3)
    _same(bulk, lazy, queries)
    view = bulk._view
    assert view is not None and view.bulk is None  # a small write: per term again


def test_a_prepared_bulk_add_is_scored_and_a_query_term_reads_slices_of_its_pass() -> None:
    texts, documents = _corpus(13, 700)
    bulk = BM25()
    bulk.add_many(0, texts, documents)
    assert bulk._view is None  # the add itself scores nothing: the load may go on
    bulk.prepare()
    view = bulk._view  # scored when the load ended (at index time), before any search
    assert view is not None and view.bulk is not None and view.bulk.documented
    lazy = _lazy(texts, documents, [])
    _same(bulk, lazy, _queries(13))
    assert bulk._view is view  # the searches used the add's pass: nothing scored again
    docs = bulk._documents(view)
    for word in ("w0", "w7", "alpha"):
        term = bulk._postings.term_id(word)
        assert term is not None
        where, scores = bulk._combined(view, docs, term)
        assert where.base is view.bulk.where and scores.base is view.bulk.scores  # no copy
        slots, entry_scores = bulk._term(view, term)
        assert np.array_equal(where[: len(slots)], slots)
        assert np.array_equal(scores[: len(slots)], entry_scores)


def test_a_load_in_batches_is_scored_once_when_it_ends_and_matches_the_per_term_scores() -> None:
    texts, documents = _corpus(17, 2100)
    loaded = BM25()
    for start in range(0, len(texts), 300):  # each batch a bulk add: no search in between
        loaded.add_many(start, texts[start : start + 300], documents[start : start + 300])
        assert loaded._view is None  # no pass per batch
    loaded.prepare()
    view = loaded._view
    assert view is not None and view.bulk is not None  # one pass, for the whole load
    loaded.prepare()
    assert loaded._view is view  # prepared already: nothing scored again
    _same(loaded, _lazy(texts, documents, []), _queries(17))
    assert loaded._view is view  # the searches used the load's pass


def test_a_small_write_after_a_bulk_add_rescores_nothing_at_once() -> None:
    texts, documents = _corpus(19, 700)
    index, lazy = _bulk(texts, documents, []), _lazy(texts, documents, [])
    _same(index, lazy, _queries(19))
    for one in (index, lazy):
        one.add_many(len(texts), ["gamma delta w5"], [documents[-1] + 1])
    assert index._view is None  # the write scored nothing
    _same(index, lazy, _queries(19))
    view = index._view
    assert view is not None and view.bulk is None  # per term, on first use


@pytest.mark.parametrize("change", ["remove", "small add", "compact"])
def test_a_bulk_pass_dropped_before_any_search_is_made_again_by_the_first_search(
    change: str,
) -> None:
    texts, documents = _corpus(23, 700)
    index, lazy = BM25(), _lazy(texts, documents, [])
    index.add_many(0, texts, documents)
    index.prepare()
    assert index._view is not None
    for one in (index, lazy):
        if change == "remove":
            one.remove(5)
        elif change == "small add":
            one.add_many(len(texts), ["beta w2 w2"], [documents[-1] + 1])
        else:
            one.remove(5)
            one.compact(np.array([s for s in range(len(texts)) if s != 5], dtype=np.int64))
    assert index._view is None
    _same(index, lazy, _queries(23))
    view = index._view  # the load was never searched: its first search scores it at once
    assert view is not None and view.bulk is not None


def test_a_query_word_an_entry_had_finds_the_term_its_stem_does() -> None:
    index = BM25()
    index.add_many(0, ["runs quickly", "The runner ran", "Café naïve résumé", "w1 w2"])
    analyzer = index.analyzer
    for query in ["running runs RUN the a", "runner ran unknownword", "cafe café naïve", ""]:
        by_stem = [index._postings.term_id(term) for term in dict.fromkeys(analyzer.analyze(query))]
        expected = [found for found in by_stem if found is not None]
        assert index._postings.query_terms(query) == expected, query


async def test_a_workspace_load_ends_with_every_term_scored_once() -> None:
    from bastion import MemoryStore, Mount, Policy, VPath, Workspace
    from bastion.knowledge.engine import Knowledge
    from bastion.knowledge.index.memory import MemoryIndex

    store = MemoryStore()
    texts, _ = _corpus(29, 600)
    for i, text in enumerate(texts):
        await store.write(VPath.parse(f"/d{i}.md"), f"# {i}\n\n{text} w{i % 7}\n".encode())
    index = MemoryIndex()
    ws = Workspace(
        [Mount.of("/docs", store)], policy=Policy.allow_all(), knowledge=Knowledge(index)
    )
    summary = await ws.index_directory("/docs")
    assert summary.indexed == len(texts)
    view = index._bm25._view  # the load ended: scored then, before any search
    assert view is not None and view.bulk is not None
    hits = (await ws.search("w3", mode="bm25", k=5)).hits
    assert hits and index._bm25._view is view  # the search used the load's pass
