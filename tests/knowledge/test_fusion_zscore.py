"""Standard-score fusion (the hybrid default), by hand."""

from __future__ import annotations

import statistics

import pytest
from test_fusion import KEYWORD, VECTOR, hit, ranked, scores

from bastion.knowledge.index.fusion import zscore


def _standard(values: list[float]) -> list[float]:
    mean, spread = statistics.fmean(values), statistics.pstdev(values)
    return [(v - mean) / spread for v in values]


def test_zscore_values_by_hand() -> None:
    k = dict(zip("abc", _standard([12.0, 7.5, 3.0]), strict=True))
    v = dict(zip("cdae", _standard([0.91, 0.80, 0.42, 0.10]), strict=True))
    floor_k, floor_v = min(k.values()), min(v.values())
    fused = zscore(KEYWORD, VECTOR)
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
