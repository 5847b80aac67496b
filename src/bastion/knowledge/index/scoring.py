"""What BM25 weighs and counts: the pluggable term weighting (:class:`Scoring`, Lucene's
formula in :class:`LuceneBM25`) and the document-level counts of one query
(:class:`Statistics`), summed over the tables of a partitioned index. Used by
:mod:`bastion.knowledge.index.bm25`, which re-exports all three."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Protocol

import numpy as np
import numpy.typing as npt

__all__ = ["LuceneBM25", "Scoring", "Statistics"]

_F32 = npt.NDArray[np.float32]
_I64 = npt.NDArray[np.int64]


class Scoring(Protocol):
    """A term weighting over term frequencies and entry lengths (``BM25``'s pluggable part)."""

    def length_norm(self, lengths: _F32, avgdl: float) -> _F32:
        """A per-entry factor computed once per collection state (``k1 * (1 - b + b *
        dl / avgdl)`` for BM25)."""
        ...

    def idf(self, n: int, df: int) -> float: ...

    def idfs(self, n: int, dfs: _I64) -> _F32:
        """:meth:`idf` of each of ``dfs``, as float32 (the same values, for every term at
        once)."""
        ...

    def weights(self, tfs: _F32, norm: _F32) -> _F32:
        """Each posting's score before ``idf``, from its frequency and its entry's norm."""
        ...


@dataclass(frozen=True, slots=True)
class LuceneBM25:
    """The formula in the docstring of :mod:`bastion.knowledge.index.bm25`."""

    k1: float = 1.5
    b: float = 0.75

    def length_norm(self, lengths: _F32, avgdl: float) -> _F32:
        return (self.k1 * (1.0 - self.b + self.b * lengths / max(avgdl, 1e-9))).astype(np.float32)

    def idf(self, n: int, df: int) -> float:
        return float(np.log1p((n - df + 0.5) / (df + 0.5)))

    def idfs(self, n: int, dfs: _I64) -> _F32:
        return np.log1p((n - dfs + 0.5) / (dfs + 0.5)).astype(np.float32)

    def weights(self, tfs: _F32, norm: _F32) -> _F32:
        return (np.float32(self.k1 + 1.0) * tfs / (tfs + norm)).astype(np.float32, copy=False)


@dataclass(frozen=True, slots=True)
class Statistics:
    """What document-level BM25 counts for one query over the documents a search may see."""

    documents: int
    """Documents with at least one visible entry (N)."""
    length: float
    """Their total length in terms (avgdl = length / documents; the entries' total too)."""
    df: Mapping[str, int] = field(default_factory=dict)
    """Analyzed query term -> documents holding it."""
    entries: int = 0
    """Visible entries (chunks), for the entry-level scores that order a document's chunks."""
    entry_df: Mapping[str, int] = field(default_factory=dict)
    """Analyzed query term -> entries holding it."""

    def __add__(self, other: Statistics) -> Statistics:
        return Statistics(
            self.documents + other.documents,
            self.length + other.length,
            _added(self.df, other.df),
            self.entries + other.entries,
            _added(self.entry_df, other.entry_df),
        )


def _added(one: Mapping[str, int], two: Mapping[str, int]) -> dict[str, int]:
    out = dict(one)
    for term, count in two.items():
        out[term] = out.get(term, 0) + count
    return out
