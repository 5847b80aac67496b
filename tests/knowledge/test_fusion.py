"""Hybrid fusion: reciprocal rank fusion and min-max weighted fusion, by hand."""

from __future__ import annotations

from collections.abc import Callable, Sequence

import pytest

from bastion.knowledge.index.fusion import rrf, weighted
from bastion.knowledge.index.models import DocumentMeta, IndexedChunk, IndexHit

Fuse = Callable[[Sequence[IndexHit], Sequence[IndexHit]], list[IndexHit]]

DOC = DocumentMeta(doc_id="d", path="/d.md")


def hit(chunk_id: str, score: float) -> IndexHit:
    return IndexHit(
        IndexedChunk(chunk_id=chunk_id, doc=DOC, seq=0, text=chunk_id, start_line=1, end_line=1),
        score,
    )


def ranked(hits: list[IndexHit]) -> list[str]:
    return [h.chunk.chunk_id for h in hits]


def scores(hits: list[IndexHit]) -> dict[str, float]:
    return {h.chunk.chunk_id: h.score for h in hits}


KEYWORD = [hit("a", 12.0), hit("b", 7.5), hit("c", 3.0)]
VECTOR = [hit("c", 0.91), hit("d", 0.80), hit("a", 0.42), hit("e", 0.10)]


# -- reciprocal rank fusion -----------------------------------------------------------------------


def test_rrf_values_by_hand() -> None:
    fused = rrf(KEYWORD, VECTOR)
    assert scores(fused) == pytest.approx(
        {
            "a": 1 / 61 + 1 / 63,
            "b": 1 / 62,
            "c": 1 / 63 + 1 / 61,
            "d": 1 / 62,
            "e": 1 / 64,
        }
    )
    # a and c tie (ranks 1 + 3 each), as do b and d (rank 2 in one list): chunk id decides
    assert ranked(fused) == ["a", "c", "b", "d", "e"]


def test_rrf_constant() -> None:
    fused = rrf([hit("x", 1.0)], [hit("y", 1.0), hit("x", 0.5)], c=1)
    assert scores(fused) == pytest.approx({"x": 1 / 2 + 1 / 3, "y": 1 / 2})


def test_rrf_a_hit_in_both_lists_outranks_hits_in_one() -> None:
    keyword = [hit("k1", 9.0), hit("k2", 8.0), hit("both", 1.0)]
    vector = [hit("v1", 0.9), hit("v2", 0.8), hit("both", 0.1)]
    assert ranked(rrf(keyword, vector))[0] == "both"


def test_rrf_ignores_scores() -> None:
    loud = [hit("a", 1e9), hit("b", 1e-9)]
    quiet = [hit("a", 0.2), hit("b", 0.1)]
    assert scores(rrf(loud, [])) == scores(rrf(quiet, []))


def test_rrf_one_list_keeps_its_order() -> None:
    assert ranked(rrf(KEYWORD, [])) == ["a", "b", "c"]
    assert ranked(rrf([], VECTOR)) == ["c", "d", "a", "e"]


def test_rrf_keeps_the_chunks() -> None:
    fused = rrf(KEYWORD, VECTOR)
    assert {h.chunk.chunk_id: h.chunk for h in fused}["e"] == VECTOR[3].chunk


def test_rrf_ties_do_not_depend_on_input_order() -> None:
    one = rrf([hit("x", 1.0)], [hit("y", 1.0)])
    other = rrf([hit("y", 1.0)], [hit("x", 1.0)])
    assert ranked(one) == ranked(other) == ["x", "y"]


# -- weighted fusion ------------------------------------------------------------------------------


def test_weighted_values_by_hand() -> None:
    fused = weighted(KEYWORD, VECTOR, alpha=0.3)
    kw = {"a": 1.0, "b": (7.5 - 3) / 9, "c": 0.0}
    vec = {"c": 1.0, "d": (0.80 - 0.10) / 0.81, "a": (0.42 - 0.10) / 0.81, "e": 0.0}
    expected = {key: 0.7 * kw.get(key, 0) + 0.3 * vec.get(key, 0) for key in "abcde"}
    assert scores(fused) == pytest.approx(expected)
    assert ranked(fused) == sorted(expected, key=lambda key: -expected[key])


def test_weighted_alpha_zero_is_the_keyword_order() -> None:
    keyword = [hit("z", 5.0), hit("m", 4.0), hit("m2", 4.0), hit("y", 1.0)]
    vector = [hit("a", 0.9), hit("y", 0.8), hit("b", 0.1)]
    fused = weighted(keyword, vector, alpha=0.0)
    assert ranked(fused)[:4] == ["z", "m", "m2", "y"]  # y is last of its list, yet first of 0s
    assert set(ranked(fused)[4:]) == {"a", "b"}


def test_weighted_alpha_one_is_the_vector_order() -> None:
    keyword = [hit("a", 9.0), hit("x", 5.0)]
    vector = [hit("z", 0.9), hit("y", 0.5), hit("x", 0.5), hit("w", 0.1)]
    fused = weighted(keyword, vector, alpha=1.0)
    assert ranked(fused)[:4] == ["z", "y", "x", "w"]
    assert ranked(fused)[4:] == ["a"]


def test_weighted_equal_scores_normalize_to_one() -> None:
    fused = weighted([hit("a", 2.0), hit("b", 2.0)], [hit("c", 0.5)], alpha=0.5)
    assert scores(fused) == pytest.approx({"a": 0.5, "b": 0.5, "c": 0.5})
    assert ranked(fused) == ["a", "b", "c"]


def test_weighted_a_hit_in_both_lists_outranks_hits_in_one() -> None:
    keyword = [hit("k", 10.0), hit("both", 9.0), hit("k2", 1.0)]
    vector = [hit("v", 0.9), hit("both", 0.85), hit("v2", 0.1)]
    assert ranked(weighted(keyword, vector, alpha=0.5))[0] == "both"


def test_weighted_is_deterministic() -> None:
    keyword = [hit(f"k{i}", 1.0) for i in range(5)]
    vector = [hit(f"v{i}", 1.0) for i in range(5)]
    first = ranked(weighted(keyword, vector))
    assert all(ranked(weighted(keyword, vector)) == first for _ in range(3))
    assert first == [f"k{i}" for i in range(5)] + [f"v{i}" for i in range(5)]


@pytest.mark.parametrize("fuse", [rrf, weighted])
def test_empty_inputs(fuse: Fuse) -> None:
    assert fuse([], []) == []
    assert ranked(fuse([hit("only", 3.0)], [])) == ["only"]
    assert ranked(fuse([], [hit("only", 0.3)])) == ["only"]
