"""BM25 over in-memory postings, updated in place: add and remove cost microseconds, so a
written file is searchable as soon as the write returns.

Scoring is Lucene's BM25 (the variant bm25s and Elasticsearch use)::

    idf(t)   = ln(1 + (N - df + 0.5) / (df + 0.5))
    score    = sum over distinct query terms t of
               idf(t) * tf * (k1 + 1) / (tf + k1 * (1 - b + b * dl / avgdl))

Postings keep raw term frequencies, not precomputed scores, so N, df and avgdl are always the
live collection's, or, for a filtered search, those of the entries the filter admits. Slots of
removed entries stay in the arrays (masked out by ``alive``) until :meth:`BM25.compact` is due;
``bench/search_scifact.py`` checks the scores against bm25s and rank_bm25 on SciFact.
"""

from __future__ import annotations

from array import array
from collections import Counter

import numpy as np
import numpy.typing as npt

from bastion.knowledge.index.analysis import Analyzer

__all__ = ["BM25"]

_F32 = npt.NDArray[np.float32]
_MASKED = 16
"""Statistics kept for this many masks (one per principal view and filter in use)."""
_I32 = npt.NDArray[np.int32]


class _Postings:
    __slots__ = ("_frozen", "slots", "tfs")

    def __init__(self) -> None:
        self.slots = array("i")
        self.tfs = array("f")
        self._frozen: tuple[_I32, _F32] | None = None

    def add(self, slot: int, tf: int) -> None:
        self.slots.append(slot)
        self.tfs.append(float(tf))
        self._frozen = None

    def arrays(self) -> tuple[_I32, _F32]:
        if self._frozen is None:
            self._frozen = (
                np.frombuffer(self.slots, dtype=np.int32).copy(),
                np.frombuffer(self.tfs, dtype=np.float32).copy(),
            )
        return self._frozen


class BM25:
    """Postings for entries numbered by slot (the caller owns the numbering)."""

    def __init__(self, analyzer: Analyzer | None = None, *, k1: float = 1.5, b: float = 0.75):
        self.analyzer = analyzer or Analyzer()
        self.k1 = k1
        self.b = b
        self._postings: dict[str, _Postings] = {}
        self._lengths = array("f")
        self._alive = array("b")
        self._live_count = 0
        self._live_length = 0.0
        self._cache: tuple[npt.NDArray[np.bool_], _F32] | None = None
        self._masked: dict[int, tuple[npt.NDArray[np.bool_], npt.NDArray[np.bool_], int, _F32]] = {}

    def __len__(self) -> int:
        return self._live_count

    @property
    def slots(self) -> int:
        """Slots allocated, live or not."""
        return len(self._lengths)

    def add(self, slot: int, text: str) -> None:
        """Index ``text`` under ``slot``, which must be the next slot (``self.slots``)."""
        if slot != len(self._lengths):
            raise ValueError(f"slot {slot} is not the next slot ({len(self._lengths)})")
        terms = self.analyzer.analyze(text)
        for term, tf in Counter(terms).items():
            postings = self._postings.get(term)
            if postings is None:
                postings = self._postings[term] = _Postings()
            postings.add(slot, tf)
        self._lengths.append(float(len(terms)))
        self._alive.append(1)
        self._live_count += 1
        self._live_length += len(terms)
        self._cache = None
        self._masked = {}

    def remove(self, slot: int) -> None:
        """Take ``slot`` out of scoring (idempotent)."""
        if self._alive[slot]:
            self._alive[slot] = 0
            self._live_count -= 1
            self._live_length -= self._lengths[slot]
            self._cache = None
        self._masked = {}

    def _state(self) -> tuple[npt.NDArray[np.bool_], _F32]:
        """(alive per slot, the length normalization per slot), rebuilt after a change."""
        if self._cache is None:
            alive = np.frombuffer(self._alive, dtype=np.int8).astype(bool)
            lengths = np.frombuffer(self._lengths, dtype=np.float32)
            avgdl = max(self._live_length / max(self._live_count, 1), 1e-9)
            norm = (self.k1 * (1.0 - self.b + self.b * lengths / avgdl)).astype(np.float32)
            self._cache = (alive, norm)
        return self._cache

    def _masked_state(self, mask: npt.NDArray[np.bool_]) -> tuple[npt.NDArray[np.bool_], int, _F32]:
        """(visible per slot, how many, the length normalization over them) for ``mask``,
        remembered per mask object (masks are cached per filter upstream)."""
        cached = self._masked.get(id(mask))
        if cached is not None and cached[0] is mask:
            return cached[1], cached[2], cached[3]
        alive, _ = self._state()
        size = len(self._lengths)
        visible = alive & mask[:size] if len(mask) >= size else alive & np.resize(mask, size)
        n = int(np.count_nonzero(visible))
        lengths = np.frombuffer(self._lengths, dtype=np.float32)
        avgdl = max(float(lengths[visible].sum()) / max(n, 1), 1e-9)
        norm = (self.k1 * (1.0 - self.b + self.b * lengths / avgdl)).astype(np.float32)
        if len(self._masked) >= _MASKED:
            self._masked.clear()
        self._masked[id(mask)] = (mask, visible, n, norm)  # holds the mask: ids stay unique
        return visible, n, norm

    def scores(self, query: str, mask: npt.NDArray[np.bool_] | None = None) -> _F32:
        """One score per slot (0 where nothing matched, removed or masked out).

        With a ``mask`` (the entries a search may return), N, df and the average length are
        those of the masked entries only: a score never depends on entries the asker may not
        see (otherwise the score of one's own document would tell how many hidden documents
        hold a word)."""
        out = np.zeros(len(self._lengths), dtype=np.float32)
        if self._live_count == 0:
            return out
        if mask is None:
            alive, norm = self._state()
            n = self._live_count
            complete = n == len(self._lengths)
        else:
            alive, n, norm = self._masked_state(mask)
            complete = False
            if n == 0:
                return out
        k1p1 = np.float32(self.k1 + 1.0)
        for term in dict.fromkeys(self.analyzer.analyze(query)):
            postings = self._postings.get(term)
            if postings is None:
                continue
            slots, tfs = postings.arrays()
            df = len(slots) if complete else int(np.count_nonzero(alive[slots]))
            if df == 0:
                continue
            idf = np.float32(np.log1p((n - df + 0.5) / (df + 0.5)))
            out[slots] += idf * k1p1 * tfs / (tfs + norm[slots])
        if not complete:
            out[~alive] = 0.0
        return out

    def compact(self, keep: npt.NDArray[np.int64]) -> None:
        """Renumber: old slot ``keep[i]`` becomes slot ``i``; every other slot is dropped."""
        remap = np.full(len(self._lengths), -1, dtype=np.int64)
        remap[keep] = np.arange(len(keep))
        rebuilt: dict[str, _Postings] = {}
        for term, postings in self._postings.items():
            slots, tfs = postings.arrays()
            new = remap[slots]
            sel = new >= 0
            if not sel.any():
                continue
            fresh = _Postings()
            fresh.slots = array("i", new[sel].astype(np.int32).tobytes())
            fresh.tfs = array("f", tfs[sel].tobytes())
            rebuilt[term] = fresh
        lengths = np.frombuffer(self._lengths, dtype=np.float32)[keep]
        alive = np.frombuffer(self._alive, dtype=np.int8)[keep]
        self._postings = rebuilt
        self._lengths = array("f", lengths.tobytes())
        self._alive = array("b", alive.tobytes())
        self._live_count = int(np.count_nonzero(alive))
        self._live_length = float(lengths[alive.astype(bool)].sum())
        self._cache = None
        self._masked = {}
