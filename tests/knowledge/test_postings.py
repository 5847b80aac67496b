"""Postings as they are stored: term frequencies in the narrowest type that holds them, handed
out as the same float32 values; segments merged by copying each term's rows in slot order,
the same postings as a sort by term would give; and an index opened from LanceDB holding its
postings in one segment, with the same scores as the index that wrote them."""

from __future__ import annotations

import random
from pathlib import Path

import numpy as np
import pytest

from bastion.knowledge.index.bm25 import BM25
from bastion.knowledge.index.lance import LanceIndex
from bastion.knowledge.index.models import DocumentMeta, IndexedChunk
from bastion.knowledge.index.postings import Segment

WORDS = [f"w{i}x" for i in range(300)]


def texts(count: int, seed: int) -> list[str]:
    rng = random.Random(seed)
    return [
        " ".join(rng.choices(WORDS[: rng.randint(5, 300)], k=rng.randint(1, 60)))
        for _ in range(count)
    ]


def sorted_merge(segments: list[Segment]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The postings of ``segments`` by a stable sort on the term (the reference)."""
    parts = [s.triplets() for s in segments]
    terms = np.concatenate([t for t, _, _ in parts])
    order = np.argsort(terms, kind="stable")
    slots = np.concatenate([s for _, s, _ in parts])
    tfs = np.concatenate([f for _, _, f in parts])
    return terms[order], slots[order], tfs[order]


@pytest.mark.parametrize(
    ("top", "kind"),
    [(1, np.uint8), (255, np.uint8), (256, np.uint16), (65535, np.uint16), (70000, np.float32)],
)
def test_counts_are_kept_narrow_and_read_back_as_float32(top: int, kind: type) -> None:
    terms = np.array([0, 0, 1, 2], dtype=np.int32)
    slots = np.array([0, 3, 1, 2], dtype=np.int32)
    counts = np.array([1, top, 2, 3], dtype=np.int64)
    segment = Segment.build(terms, slots, counts)
    assert segment.counts.dtype == kind
    found = segment.find(0)
    assert found is not None
    assert found[1].dtype == np.float32
    assert found[1].tolist() == [1.0, float(top)]
    assert segment.triplets()[2].tolist() == [1.0, float(top), 2.0, 3.0]


def test_fractional_frequencies_stay_float32() -> None:
    segment = Segment.build(
        np.array([0], dtype=np.int32), np.array([0], dtype=np.int32), np.array([1.5], np.float32)
    )
    assert segment.counts.dtype == np.float32
    assert segment.triplets()[2].tolist() == [1.5]


def random_segment(rng: np.random.Generator, first: int, entries: int) -> Segment:
    """Postings of entries ``first`` to ``first + entries - 1`` over 300 terms."""
    pairs = {(int(t), first + int(s)) for t, s in rng.integers(0, (300, entries), (entries * 8, 2))}
    terms, slots = (np.array(c, dtype=np.int32) for c in zip(*sorted(pairs), strict=True))
    return Segment.build(terms, slots, rng.integers(1, 400, len(terms)))


def test_a_merge_gives_the_postings_of_a_sort_by_term() -> None:
    rng = np.random.default_rng(5)
    segments, first = [], 0
    for entries in (40, 7, 120, 1, 60):  # segments in slot order, as they are added
        segments.append(random_segment(rng, first, entries))
        first += entries
    merged = Segment.merge(*segments)
    terms, slots, tfs = merged.triplets()
    want = sorted_merge(segments)
    assert np.array_equal(terms, want[0])
    assert np.array_equal(slots, want[1])
    assert np.array_equal(tfs, want[2])
    assert merged.counts.dtype == np.uint16  # the widest of its parts (counts up to 399)
    for term in range(301):
        found = merged.find(term)
        parts = [hit for s in segments if (hit := s.find(term)) is not None]
        if not parts:
            assert found is None
            continue
        assert found is not None
        assert np.array_equal(found[0], np.concatenate([p[0] for p in parts]))
        assert np.array_equal(found[1], np.concatenate([p[1] for p in parts]))


def test_scores_do_not_depend_on_how_postings_are_merged(monkeypatch: pytest.MonkeyPatch) -> None:
    from bastion.knowledge.index import postings as module

    corpus = texts(400, seed=7)
    whole = BM25()
    whole.add_many(0, corpus)
    monkeypatch.setattr(module, "_MERGED", 500)  # many segments, merged pairwise while adding
    split = BM25()
    for lo in range(0, len(corpus), 25):
        split.add_many(lo, corpus[lo : lo + 25])
    assert split._postings.segments > 3
    for query in ["w1x w2x", "w17x w200x w3x", "w299x"]:
        assert np.array_equal(whole.scores(query), split.scores(query))
        assert np.array_equal(whole.ranked(query), split.ranked(query))
    split._postings.merged()
    assert split._postings.segments == 1
    for query in ["w1x w2x", "w17x w200x w3x"]:
        assert np.array_equal(whole.ranked(query), split.ranked(query))


def test_an_opened_index_holds_one_segment_and_scores_as_the_writer(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from bastion.knowledge.index import lance

    monkeypatch.setattr(lance, "_LOAD", 50)  # the open reads several slices
    chunks = []
    for d, text in enumerate(texts(120, seed=3)):
        doc = DocumentMeta(doc_id=f"d{d:03d}", path=f"/docs/d{d:03d}.md")  # load order
        words = text.split()
        for seq in range(2):
            part = " ".join(words[seq::2]) or "empty"
            chunks.append(
                IndexedChunk(
                    chunk_id=f"d{d:03d}#{seq}",
                    doc=doc,
                    seq=seq,
                    text=part,
                    start_line=seq + 1,
                    end_line=seq + 1,
                )
            )
    writer = LanceIndex(tmp_path / "ix", dim=None)
    for lo in range(0, len(chunks), 30):  # several segments in the writer
        writer.upsert(chunks[lo : lo + 30])
    reader = LanceIndex(tmp_path / "ix", dim=None, keep_texts=False)
    assert reader._bm25._postings.segments == 1
    for query in ["w1x w2x", "w17x w200x w3x", "w5x"]:
        mine = [(h.chunk.chunk_id, h.score, h.chunk.text) for h in reader.search_keyword(query, 20)]
        theirs = [
            (h.chunk.chunk_id, h.score, h.chunk.text) for h in writer.search_keyword(query, 20)
        ]
        assert mine == theirs
        assert mine
    writer.close()
    reader.close()
