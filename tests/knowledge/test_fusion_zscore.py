"""Standard-score fusion (the hybrid default), by hand."""

from __future__ import annotations

import statistics

import pytest
from test_fusion import KEYWORD, VECTOR, hit, ranked, scores

from bastion.knowledge.index.fusion import zscore
from bastion.knowledge.index.models import DocumentMeta, IndexedChunk, IndexHit


def _standard(values: list[float]) -> list[float]:
    mean, spread = statistics.fmean(values), statistics.pstdev(values)
    return [(v - mean) / spread for v in values]


def doc_hit(chunk_id: str, score: float, doc: str | None = None) -> IndexHit:
    """A hit on chunk ``chunk_id`` of document ``doc`` (its own document by default)."""
    meta = DocumentMeta(doc_id=doc or chunk_id, path=f"/{doc or chunk_id}.md")
    chunk = IndexedChunk(
        chunk_id=chunk_id, doc=meta, seq=0, text=chunk_id, start_line=1, end_line=1
    )
    return IndexHit(chunk, score)


def _own(hits: list[IndexHit]) -> list[IndexHit]:
    return [doc_hit(h.chunk.chunk_id, h.score) for h in hits]


def test_zscore_values_by_hand() -> None:
    k = dict(zip("abc", _standard([12.0, 7.5, 3.0]), strict=True))
    v = dict(zip("cdae", _standard([0.91, 0.80, 0.42, 0.10]), strict=True))
    floor_k, floor_v = min(k.values()), min(v.values())
    fused = zscore(_own(KEYWORD), _own(VECTOR))
    assert scores(fused) == pytest.approx(
        {
            "a": k["a"] + v["a"],
            "b": k["b"] + floor_v,  # missing from the vector list: its lowest
            "c": k["c"] + v["c"],
            "d": floor_k + v["d"],
            "e": floor_k + v["e"],
        }
    )
    assert ranked(fused) == ["a", "c", "d", "b", "e"]


def test_zscore_is_blind_to_each_lists_scale() -> None:
    """Scaling a list's scores (BM25's scale moves with the corpus) changes nothing."""
    louder = [hit(h.chunk.chunk_id, 1000 * h.score + 5) for h in KEYWORD]
    assert ranked(zscore(louder, VECTOR)) == ranked(zscore(KEYWORD, VECTOR))
    assert scores(zscore(louder, VECTOR)) == pytest.approx(scores(zscore(KEYWORD, VECTOR)))


def test_zscore_with_an_empty_or_flat_list() -> None:
    assert ranked(zscore([], VECTOR)) == ["c", "d", "a", "e"]
    assert ranked(zscore(KEYWORD, [])) == ["a", "b", "c"]
    assert zscore([], []) == []
    flat = [hit("x", 2.0), hit("y", 2.0)]
    fused = zscore(flat, [])
    assert ranked(fused) == ["x", "y"] and scores(fused) == {"x": 0.0, "y": 0.0}


def test_a_chunk_carries_its_documents_keyword_evidence() -> None:
    """BM25 ranks documents: the chunk that best matches the meaning of the question (found
    by the vector list only) carries its document's keyword score, not the list's lowest."""
    keyword = [doc_hit("p1", 9.0, "paper"), doc_hit("n1", 6.0, "noise"), doc_hit("o1", 1.0)]
    vector = [doc_hit("p2", 0.9, "paper"), doc_hit("n1", 0.5, "noise"), doc_hit("x", 0.1)]
    fused = zscore(keyword, vector)
    got = scores(fused)
    lexical = dict(zip(["paper", "noise", "o1"], _standard([9.0, 6.0, 1.0]), strict=True))
    dense = dict(zip(["p2", "n1", "x"], _standard([0.9, 0.5, 0.1]), strict=True))
    assert got["p2"] == pytest.approx(lexical["paper"] + dense["p2"])
    assert got["p1"] == pytest.approx(lexical["paper"] + min(dense.values()))
    assert ranked(fused)[0] == "p2"


def test_keyword_statistics_count_each_document_once() -> None:
    """Two chunks of one document with its score are one document in the statistics."""
    twice = [doc_hit("a1", 10.0, "a"), doc_hit("a2", 10.0, "a"), doc_hit("b1", 2.0, "b")]
    once = [doc_hit("a1", 10.0, "a"), doc_hit("b1", 2.0, "b")]
    assert scores(zscore(twice, []))["a1"] == pytest.approx(scores(zscore(once, []))["a1"])
    assert scores(zscore(twice, [])) == pytest.approx({"a1": 1.0, "a2": 1.0, "b1": -1.0})
