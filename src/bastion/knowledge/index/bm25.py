"""BM25 over in-memory postings, updated in place: adding or removing an entry costs
microseconds, so a written file is searchable as soon as the write returns.

Scoring is Lucene's BM25 (the variant bm25s and Elasticsearch use)::

    idf(t)   = ln(1 + (N - df + 0.5) / (df + 0.5))
    score    = sum over distinct query terms t of
               idf(t) * tf * (k1 + 1) / (tf + k1 * (1 - b + b * dl / avgdl))

The formula is a :class:`Scoring` (pluggable: another weighting only replaces it). Postings
(:mod:`bastion.knowledge.index.postings`) keep raw term frequencies; the per-posting scores
of a term are computed the first time a query needs them and kept until the collection
changes (any add or remove), so a query repeats no arithmetic while N, df and avgdl stay the
live collection's, or, for a filtered search, those of the entries the filter admits. Slots of
removed entries stay in the arrays (masked out by ``alive``) until :meth:`BM25.compact`;
``bench/search_scifact.py`` checks the scores against bm25s and rank_bm25 on SciFact.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

import numpy as np
import numpy.typing as npt

from bastion.knowledge.index.analysis import Analyzer
from bastion.knowledge.index.postings import Postings

__all__ = ["BM25", "LuceneBM25", "Scoring"]

_F32 = npt.NDArray[np.float32]
_I32 = npt.NDArray[np.int32]
_Bool = npt.NDArray[np.bool_]
_MASKED = 16
"""Statistics kept for this many masks (one per principal view and filter in use)."""
_CACHED = 1 << 22
"""Postings whose scores a view keeps between queries (32 MiB of slots and scores)."""


class Scoring(Protocol):
    """A term weighting over term frequencies and entry lengths (``BM25``'s pluggable part)."""

    def length_norm(self, lengths: _F32, avgdl: float) -> _F32:
        """A per-entry factor computed once per collection state (``k1 * (1 - b + b *
        dl / avgdl)`` for BM25)."""
        ...

    def idf(self, n: int, df: int) -> float: ...

    def weights(self, tfs: _F32, norm: _F32) -> _F32:
        """Each posting's score before ``idf``, from its frequency and its entry's norm."""
        ...


@dataclass(frozen=True, slots=True)
class LuceneBM25:
    """The formula of the module docstring."""

    k1: float = 1.5
    b: float = 0.75

    def length_norm(self, lengths: _F32, avgdl: float) -> _F32:
        return (self.k1 * (1.0 - self.b + self.b * lengths / max(avgdl, 1e-9))).astype(np.float32)

    def idf(self, n: int, df: int) -> float:
        return float(np.log1p((n - df + 0.5) / (df + 0.5)))

    def weights(self, tfs: _F32, norm: _F32) -> _F32:
        return (np.float32(self.k1 + 1.0) * tfs / (tfs + norm)).astype(np.float32, copy=False)


class _View:
    """The statistics of the entries one search may see, and the term scores they give."""

    __slots__ = ("cached", "n", "norm", "size", "terms", "visible")

    def __init__(self, visible: _Bool | None, n: int, norm: _F32) -> None:
        self.visible = visible
        """Per slot, or ``None``: every slot is live and visible."""
        self.n = n
        self.norm = norm
        self.terms: dict[int, tuple[_I32, _F32]] = {}
        self.cached = 0
        self.size = len(norm)


class BM25:
    """Postings for entries numbered by slot (the caller owns the numbering)."""

    def __init__(
        self,
        analyzer: Analyzer | None = None,
        *,
        k1: float = 1.5,
        b: float = 0.75,
        scoring: Scoring | None = None,
    ):
        self.analyzer = analyzer or Analyzer()
        self.scoring: Scoring = scoring if scoring is not None else LuceneBM25(k1, b)
        self._postings = Postings(self.analyzer)
        self._view: _View | None = None
        self._masked: dict[int, tuple[_Bool, _View]] = {}

    def __len__(self) -> int:
        return self._postings.live_count

    @property
    def slots(self) -> int:
        """Slots allocated, live or not."""
        return self._postings.slots

    def add(self, slot: int, text: str) -> None:
        """Index ``text`` under ``slot``, which must be the next slot (``self.slots``)."""
        self.add_many(slot, [text])

    def add_many(self, first: int, texts: Sequence[str]) -> None:
        """Index ``texts`` under slots ``first, first + 1, ...``; ``first`` must be the next
        slot. One vectorized pass: much faster than adding them one by one."""
        if first != self._postings.slots:
            raise ValueError(f"slot {first} is not the next slot ({self._postings.slots})")
        self._postings.add_many(texts)
        self._changed()

    def remove(self, slot: int) -> None:
        """Take ``slot`` out of scoring (idempotent)."""
        if self._postings.remove(slot):
            self._changed()

    def _changed(self) -> None:
        self._view = None
        self._masked = {}

    def _unmasked(self) -> _View:
        if self._view is None:
            p = self._postings
            avgdl = p.live_length / max(p.live_count, 1)
            complete = p.live_count == p.slots
            self._view = _View(
                None if complete else p.alive.copy(),
                p.live_count,
                self.scoring.length_norm(p.lengths, avgdl),
            )
        return self._view

    def _masked_view(self, mask: _Bool) -> _View:
        """The view of the live slots ``mask`` admits, remembered per mask object (masks are
        cached per filter upstream)."""
        cached = self._masked.get(id(mask))
        if cached is not None and cached[0] is mask:
            return cached[1]
        p = self._postings
        size = p.slots
        alive = p.alive
        visible = alive & mask[:size] if len(mask) >= size else alive & np.resize(mask, size)
        n = int(np.count_nonzero(visible))
        if n == p.live_count:  # the mask hides nothing live: the statistics are the same
            view = self._unmasked()
        else:
            avgdl = float(p.lengths[visible].sum()) / max(n, 1)
            view = _View(visible, n, self.scoring.length_norm(p.lengths, avgdl))
        if len(self._masked) >= _MASKED:
            self._masked.clear()
        self._masked[id(mask)] = (mask, view)  # holds the mask: ids stay unique
        return view

    def _term(self, view: _View, term: int) -> tuple[_I32, _F32]:
        """The visible slots holding ``term`` and their scores (idf included)."""
        found = view.terms.get(term)
        if found is not None:
            return found
        slots, tfs = self._postings.postings(term)
        if view.visible is not None:
            keep = view.visible[slots]
            slots, tfs = slots[keep], tfs[keep]
        if len(slots):
            idf = np.float32(self.scoring.idf(view.n, len(slots)))
            found = (slots, idf * self.scoring.weights(tfs, view.norm[slots]))
        else:
            found = (slots, tfs)
        if view.cached + len(slots) > _CACHED:
            view.terms.clear()
            view.cached = 0
        view.terms[term] = found
        view.cached += len(slots)
        return found

    def scores(self, query: str, mask: _Bool | None = None) -> _F32:
        """One score per slot (0 where nothing matched, removed or masked out).

        With a ``mask`` (the entries a search may return), N, df and the average length are
        those of the masked entries only: a score never depends on entries the asker may not
        see (otherwise the score of one's own document would tell how many hidden documents
        hold a word)."""
        out = np.zeros(self._postings.slots, dtype=np.float32)
        if self._postings.live_count == 0:
            return out
        view = self._unmasked() if mask is None else self._masked_view(mask)
        if view.n == 0:
            return out
        for term in self._postings.query_terms(query):
            slots, scores = self._term(view, term)
            if len(slots):
                out[slots] += scores
        return out

    def compact(self, keep: npt.NDArray[np.int64]) -> None:
        """Renumber: old slot ``keep[i]`` becomes slot ``i``; every other slot is dropped."""
        self._postings.compact(keep)
        self._changed()
