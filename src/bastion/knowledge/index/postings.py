"""Postings for keyword search, in numpy arrays: term -> (entry slots, term frequencies).

Entries are numbered by slot, in the order they are added. A batch of entries becomes one
*segment* in compressed sparse row form (sorted term ids, row pointers, slots, frequencies),
built with a handful of vectorized operations; segments are merged as they pile up (a new
segment is merged into the one before while that one is less than twice its size, up to
``_MERGED`` postings), so a collection is held in a few segments and a posting is copied
a few times in all. A removed entry only clears its ``alive`` flag; :meth:`compact`
drops the dead slots and renumbers. No per-posting Python object exists at any time.

Term frequencies are counts: a segment keeps them in the narrowest unsigned type that holds
its largest (``uint8`` for almost every text: 5 bytes a posting instead of 8, ~100 MB less at
100,000 documents), and hands them out as ``float32``, the values scoring reads.

This module only stores; scoring (:mod:`bastion.knowledge.index.bm25`) reads the arrays.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from itertools import chain

import numpy as np
import numpy.typing as npt

from bastion.core.memo import Memo
from bastion.knowledge.index.analysis import Analyzer

__all__ = ["Postings", "Segment"]

_I32 = npt.NDArray[np.int32]
_I64 = npt.NDArray[np.int64]
_F32 = npt.NDArray[np.float32]
_MERGED = 1 << 20
"""Largest segment a merge makes, in postings: a merge holds a few copies of what it merges,
so this bounds the memory one write can need (a large collection keeps a few big segments)."""
_JOINED = 1 << 21
"""Postings kept joined across segments for terms queried since the last write (16 MiB)."""
_NO_TERM = -1
"""Term id of a word the analyzer drops (a stop word)."""


def _postings_count(joined: tuple[_I32, _F32]) -> int:
    return len(joined[0])


@dataclass(frozen=True, slots=True)
class Segment:
    """Postings of a run of entries: ``slots[indptr[i]:indptr[i + 1]]`` hold ``terms[i]``."""

    terms: _I32
    """Term ids, increasing."""
    indptr: _I64
    slots: _I32
    """Increasing within each term."""
    counts: npt.NDArray[np.unsignedinteger] | _F32
    """Each posting's term frequency, in the narrowest type that holds them (:func:`_narrow`);
    :meth:`find` and :meth:`triplets` give them as ``float32``."""

    @property
    def size(self) -> int:
        return len(self.slots)

    rows: _I32
    """Term id -> its row, or -1 (a direct lookup, faster than a search per query term)."""

    def find(self, term: int) -> tuple[_I32, _F32] | None:
        rows = self.rows
        i = int(rows[term]) if term < len(rows) else -1
        if i < 0:
            return None
        lo, hi = self.indptr[i], self.indptr[i + 1]
        return self.slots[lo:hi], self.counts[lo:hi].astype(np.float32)

    def triplets(self) -> tuple[_I32, _I32, _F32]:
        """(term of each posting, slot, frequency)."""
        terms = np.repeat(self.terms, np.diff(self.indptr))
        return terms, self.slots, self.counts.astype(np.float32)

    @staticmethod
    def build(terms: _I32, slots: _I32, tfs: npt.NDArray[np.number]) -> Segment:
        """From postings sorted by term (then slot); ``tfs``: their counts."""
        change = np.empty(len(terms), dtype=bool)
        change[:1] = True
        np.not_equal(terms[1:], terms[:-1], out=change[1:])
        first = np.flatnonzero(change)
        ids = terms[first].astype(np.int32)
        indptr = np.append(first, len(terms)).astype(np.int64)
        return Segment(ids, indptr, slots.astype(np.int32), _narrow(tfs), _rows(ids))

    @staticmethod
    def merge(*segments: Segment) -> Segment:
        """One segment of ``segments``' postings, given in slot order (each segment's slots
        above the one before's, as they are added): a term's postings are its postings of
        each segment in turn, so each segment's rows are copied straight to their places (no
        sort, and nothing larger than one segment's positions made besides the result)."""
        size = max((len(segment.rows) for segment in segments), default=0)
        per_term = np.zeros(size, dtype=np.int64)
        for segment in segments:
            per_term[segment.terms] += np.diff(segment.indptr)
        starts = np.zeros(size + 1, dtype=np.int64)
        np.cumsum(per_term, out=starts[1:])
        total = int(starts[-1])
        slots = np.empty(total, dtype=np.int32)
        counts = np.empty(total, dtype=np.result_type(*(s.counts for s in segments)))
        fill = starts[:-1].copy()
        for segment in segments:
            sizes = np.diff(segment.indptr)
            shift = np.repeat(fill[segment.terms] - segment.indptr[:-1], sizes)
            places = shift + np.arange(segment.size, dtype=np.int64)
            slots[places] = segment.slots
            counts[places] = segment.counts
            fill[segment.terms] += sizes
        present = np.flatnonzero(per_term).astype(np.int32)
        indptr = np.append(starts[present], total).astype(np.int64)
        return Segment(present, indptr, slots, counts, _rows(present))


def _rows(terms: _I32) -> _I32:
    """Term id -> its row in a segment holding ``terms`` (increasing), -1 for the others."""
    rows = np.full(int(terms[-1]) + 1 if len(terms) else 0, -1, dtype=np.int32)
    rows[terms] = np.arange(len(terms), dtype=np.int32)
    return rows


def _narrow(tfs: npt.NDArray[np.number]) -> npt.NDArray[np.unsignedinteger] | _F32:
    """Counts in ``uint8`` or ``uint16`` when they fit (and are whole), else ``float32``."""
    top = float(tfs.max()) if len(tfs) else 0.0
    narrow: npt.NDArray[np.unsignedinteger] | None = None
    if top <= 255:
        narrow = tfs.astype(np.uint8)
    elif top <= 65535:
        narrow = tfs.astype(np.uint16)
    if narrow is not None and np.array_equal(narrow, tfs):
        return narrow
    return tfs.astype(np.float32)


class Postings:
    """The inverted index of entries numbered by slot, with each entry's length and liveness."""

    def __init__(self, analyzer: Analyzer) -> None:
        self.analyzer = analyzer
        self._vocab: dict[str, int] = {}
        """Term -> id."""
        self._word_terms: dict[str, int] = {}
        """Word (as the analyzer splits it) -> term id, or ``_NO_TERM``: each distinct word is
        stemmed once."""
        self._segments: list[Segment] = []
        self._joined: Memo[int, tuple[_I32, _F32]] = Memo(_JOINED, weigh=_postings_count)
        """Term -> its postings of every segment in one array (segments are never changed in
        place: a new list of segments empties it), at most :data:`_JOINED` postings."""
        self._lengths = np.zeros(0, dtype=np.float32)
        self._alive = np.zeros(0, dtype=bool)
        self._count = 0
        self.live_count = 0
        self.live_length = 0.0

    @property
    def slots(self) -> int:
        return self._count

    @property
    def lengths(self) -> _F32:
        """Terms per slot (live or not)."""
        return self._lengths[: self._count]

    @property
    def alive(self) -> npt.NDArray[np.bool_]:
        return self._alive[: self._count]

    def term_id(self, term: str) -> int | None:
        return self._vocab.get(term)

    def query_terms(self, text: str) -> list[int]:
        """The distinct known term ids of ``text`` (unknown terms match nothing), in order of
        first use. A word some entry had is not stemmed again: its term was found when the
        entry was added (a query's first search pays no stemming for it)."""
        known = self._word_terms
        ids: dict[int, None] = {}
        for word in self.analyzer.words(text):
            found = known.get(word)
            if found is None:  # a word no entry had: its term, if the collection knows it
                term = self.analyzer.term(word)
                found = _NO_TERM if term is None else self._vocab.get(term, _NO_TERM)
            if found != _NO_TERM:
                ids[found] = None
        return list(ids)

    # -- writes ------------------------------------------------------------------------------

    def add_many(self, texts: Sequence[str]) -> None:
        """Append one entry per text, numbered from :attr:`slots` on."""
        if not texts:
            return
        per_entry = [self._term_ids(text) for text in texts]
        sizes = np.fromiter((len(ids) for ids in per_entry), np.int64, len(per_entry))
        flat = np.fromiter(chain.from_iterable(per_entry), np.int64, int(sizes.sum()))
        local = np.repeat(np.arange(len(texts), dtype=np.int64), sizes)
        keep = flat != _NO_TERM
        flat, local = flat[keep], local[keep]
        lengths = np.bincount(local, minlength=len(texts)).astype(np.float32)
        first = self._count
        self._grow(first + len(texts))
        self._lengths[first : first + len(texts)] = lengths
        self._alive[first : first + len(texts)] = True
        self._count += len(texts)
        self.live_count += len(texts)
        self.live_length += float(lengths.sum())
        if len(flat) == 0:
            return
        keys, tfs = np.unique(flat * len(texts) + local, return_counts=True)
        terms = (keys // len(texts)).astype(np.int32)
        slots = (keys % len(texts) + first).astype(np.int32)
        self._push(Segment.build(terms, slots, tfs))

    def _term_ids(self, text: str) -> list[int]:
        known = self._word_terms
        words = self.analyzer.words(text)
        ids = list(map(known.get, words))
        if None in ids:
            for n, word in enumerate(words):
                if ids[n] is None:
                    ids[n] = self._learn(word)
        return ids  # type: ignore[return-value]  # every None was filled in

    def _learn(self, word: str) -> int:
        term = self.analyzer.term(word)
        if term is None:
            found = _NO_TERM
        else:
            found = self._vocab.get(term, -2)
            if found == -2:
                found = self._vocab[term] = len(self._vocab)
        self._word_terms[word] = found
        return found

    def _grow(self, size: int) -> None:
        if size <= len(self._lengths):
            return
        capacity = max(size, 2 * len(self._lengths), 64)
        lengths = np.zeros(capacity, dtype=np.float32)
        alive = np.zeros(capacity, dtype=bool)
        lengths[: self._count] = self._lengths[: self._count]
        alive[: self._count] = self._alive[: self._count]
        self._lengths, self._alive = lengths, alive

    def _push(self, segment: Segment) -> None:
        self._joined.clear()
        segments = self._segments
        segments.append(segment)
        while (
            len(segments) >= 2
            and segments[-2].size < 2 * segments[-1].size
            and segments[-2].size + segments[-1].size <= _MERGED
        ):
            newer = segments.pop()
            segments[-1] = Segment.merge(segments[-1], newer)

    def remove(self, slot: int) -> bool:
        """Clear ``slot``; False when it was not live."""
        if not self._alive[slot]:
            return False
        self._alive[slot] = False
        self.live_count -= 1
        self.live_length -= float(self._lengths[slot])
        return True

    def compact(self, keep: _I64) -> None:
        """Renumber: old slot ``keep[i]`` becomes slot ``i``; every other slot is dropped."""
        remap = np.full(self._count, -1, dtype=np.int64)
        remap[keep] = np.arange(len(keep))
        rebuilt: list[Segment] = []
        for segment in self._segments:
            terms, slots, tfs = segment.triplets()
            new = remap[slots]
            sel = new >= 0
            if sel.any():
                rebuilt.append(Segment.build(terms[sel], new[sel].astype(np.int32), tfs[sel]))
        self._segments = []
        for segment in rebuilt:
            self._push(segment)
        self._lengths = np.ascontiguousarray(self._lengths[keep])
        self._alive = np.ascontiguousarray(self._alive[keep])
        self._count = len(keep)
        self.live_count = int(np.count_nonzero(self._alive))
        self.live_length = float(self._lengths[self._alive].sum())

    # -- reads -------------------------------------------------------------------------------

    def postings(self, term: int) -> tuple[_I32, _F32]:
        """Slots holding ``term`` (dead ones included), increasing, and its frequency in each."""
        joined = self._joined.get(term)
        if joined is not None:
            return joined
        found = [hit for segment in self._segments if (hit := segment.find(term)) is not None]
        if len(found) == 1:
            return found[0]
        if not found:
            return np.zeros(0, dtype=np.int32), np.zeros(0, dtype=np.float32)
        joined = np.concatenate([s for s, _ in found]), np.concatenate([f for _, f in found])
        self._joined[term] = joined
        return joined

    def merged(self) -> Segment:
        """Every posting in one segment (dead slots included), sorted by term then slot; it
        replaces the segments (a full merge, as a bulk load is followed by many reads)."""
        if len(self._segments) == 1:
            return self._segments[0]
        if not self._segments:
            empty_i, empty_f = np.zeros(0, dtype=np.int32), np.zeros(0, dtype=np.float32)
            return Segment.build(empty_i, empty_i, empty_f)
        merged = Segment.merge(*self._segments)  # the list is in slot order
        self._segments = [merged]
        self._joined.clear()
        return merged

    @property
    def postings_count(self) -> int:
        """Postings held, dead slots' included."""
        return sum(segment.size for segment in self._segments)

    @property
    def vocabulary(self) -> int:
        """Term ids handed out (ids are ``0`` to ``vocabulary - 1``)."""
        return len(self._vocab)

    @property
    def segments(self) -> int:
        return len(self._segments)
