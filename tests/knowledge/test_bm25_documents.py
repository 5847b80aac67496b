"""Keyword search ranks documents and returns their chunks (``BM25.ranked``): a document's
best chunk scores exactly as the whole document would, overlaps between chunks count once,
and the document-level counts of several collections add up to those of their union."""

from __future__ import annotations

import numpy as np
import pytest
from index_contract import chunk, meta

from bastion.knowledge.index.bm25 import BM25, Statistics
from bastion.knowledge.index.memory import MemoryIndex
from bastion.knowledge.index.passages import overlap, own_text, own_texts

DOCS = [
    ["mice eat cheese in the barn", "the cat chases mice and more mice"],
    ["a dog sleeps by the fire", "cheese and bread for the dog", "mice are everywhere"],
    ["cats purr", "cheese cheese cheese"],
    ["nothing relevant here at all"],
]
QUERIES = ["mice", "cheese dog", "cat mice cheese", "fire bread", "absent words"]


def _chunked(docs: list[list[str]]) -> tuple[BM25, list[int]]:
    bm25 = BM25()
    owners = [d for d, parts in enumerate(docs) for _ in parts]
    bm25.add_many(0, [p for parts in docs for p in parts], owners)
    return bm25, owners


def _whole(docs: list[list[str]]) -> BM25:
    bm25 = BM25()
    bm25.add_many(0, [" ".join(parts) for parts in docs])
    return bm25


@pytest.mark.parametrize("query", QUERIES)
def test_a_documents_best_chunk_scores_as_the_whole_document(query: str) -> None:
    chunked, owners = _chunked(DOCS)
    whole = _whole(DOCS).scores(query)
    ranked = chunked.ranked(query)
    for doc, expected in enumerate(whole):
        mine = [ranked[slot] for slot, owner in enumerate(owners) if owner == doc]
        assert max(mine) == pytest.approx(expected, rel=1e-5)


def test_other_chunks_carry_the_score_scaled_by_their_own() -> None:
    chunked, owners = _chunked(DOCS)
    plain = chunked.scores("mice")  # each chunk on its own
    ranked = chunked.ranked("mice")
    doc1 = [slot for slot, owner in enumerate(owners) if owner == 1]  # "mice" in its last chunk
    assert [ranked[s] > 0 for s in doc1] == [False, False, True]
    doc0 = [slot for slot, owner in enumerate(owners) if owner == 0]
    best, other = sorted(doc0, key=lambda s: -plain[s])
    assert ranked[other] / ranked[best] == pytest.approx(plain[other] / plain[best], rel=1e-5)
    assert ranked[best] > ranked[other] > 0


def test_a_document_with_more_of_the_term_ranks_first_whatever_its_chunks() -> None:
    """Eight mentions spread over four chunks outrank one mention in a short chunk: chunk by
    chunk, the single mention in a short text would win."""
    docs = [[f"leave days days policy part {n}" for n in range(4)], ["days"]]
    chunked, owners = _chunked(docs)
    ranked = chunked.ranked("days")
    assert owners[int(np.argmax(ranked))] == 0
    assert chunked.scores("days")[4] > chunked.scores("days")[:4].max()  # chunk by chunk


def test_statistics_of_parts_add_up_to_the_whole() -> None:
    """Two collections scored with their summed counts score as one collection holding both
    (what a partitioned index relies on)."""
    left, right = DOCS[:2], DOCS[2:]
    one, _ = _chunked(DOCS)
    a, _ = _chunked(left)
    b, _ = _chunked(right)
    for query in QUERIES:
        total = a.statistics(query) + b.statistics(query)
        assert total == one.statistics(query)
        joined = np.concatenate(
            [a.ranked(query, statistics=total), b.ranked(query, statistics=total)]
        )
        np.testing.assert_allclose(joined, one.ranked(query), rtol=1e-5, atol=1e-7)


def test_statistics_count_documents_the_mask_admits_only() -> None:
    chunked, owners = _chunked(DOCS)
    mask = np.array([owner in (0, 2) for owner in owners])
    visible, _ = _chunked([DOCS[0], DOCS[2]])
    for query in QUERIES:
        assert chunked.statistics(query, mask) == visible.statistics(query)
        masked = chunked.ranked(query, mask)
        np.testing.assert_allclose(masked[mask], visible.ranked(query), rtol=1e-5, atol=1e-7)
        assert not masked[~mask].any()
    stats = chunked.statistics("mice cheese", mask)
    assert stats == Statistics(2, stats.length, {"mice": 1, "chees": 2}, 4, {"mice": 2, "chees": 2})


def test_compaction_keeps_each_chunk_with_its_document() -> None:
    chunked, owners = _chunked(DOCS)
    chunked.remove(0)
    keep = np.arange(1, len(owners), dtype=np.int64)
    before = chunked.ranked("mice cheese")[keep]
    chunked.compact(keep)
    np.testing.assert_allclose(chunked.ranked("mice cheese"), before, rtol=1e-6)


def test_document_numbers_must_match_the_texts() -> None:
    with pytest.raises(ValueError, match="document numbers"):
        BM25().add_many(0, ["a", "b"], [0])


# -- overlaps ---------------------------------------------------------------------------------

OPENING = "The study enrolled 40 patients over two years."
SHARED = "Outcomes were measured at twelve months."


def test_overlap_is_the_shared_suffix_and_prefix() -> None:
    assert overlap(f"{OPENING} {SHARED}", f"{SHARED} Follow-up went on.") == len(SHARED)
    assert overlap(OPENING, "Something else entirely, no shared words.") == 0
    assert overlap("a b", "a b c") == 0  # shorter than the 12-character probe
    assert overlap(SHARED, SHARED) == 0  # a whole repeat is not an overlap


def test_own_text_drops_what_the_previous_chunk_said() -> None:
    doc = meta("d")
    first = chunk("c0", doc, f"{OPENING} {SHARED}")
    second = chunk("c1", doc, f"{SHARED} Follow-up went on.", seq=1, section="Results")
    assert own_text(first, None) == first.text
    assert own_text(second, first) == "Results\n Follow-up went on."
    assert own_texts([first, second]) == [first.text, "Results\n Follow-up went on."]


def test_overlapping_chunks_count_the_shared_words_once() -> None:
    """Two chunks that overlap score their document as the text they were cut from."""
    doc = meta("d")
    text = f"{OPENING} {SHARED} Follow-up went on for outcomes."
    index = MemoryIndex()
    index.upsert(
        [
            chunk("c0", doc, f"{OPENING} {SHARED}"),
            chunk("c1", doc, f"{SHARED} Follow-up went on for outcomes.", seq=1),
        ]
    )
    index.upsert([chunk("o0", meta("other"), "unrelated words about outcomes")])
    whole = MemoryIndex()
    whole.upsert(
        [chunk("w0", doc, text), chunk("o0", meta("other"), "unrelated words about outcomes")]
    )
    got = index.search_keyword("outcomes measured", 1)[0].score
    assert got == pytest.approx(whole.search_keyword("outcomes measured", 1)[0].score, rel=1e-5)
