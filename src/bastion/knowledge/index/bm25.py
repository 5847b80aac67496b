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
live collection's, or, for a filtered search, those of the entries the filter admits. A bulk
load (many entries since the last unfiltered view) is instead scored in one vectorized pass
over every term, as bm25s does at index time, when the load ends (:meth:`BM25.prepare`; else
by the first search): the same values, bit for bit, laid out so that a query term's scores
are slices of the pass's arrays (nothing computed or joined in the search); a small write
goes back to per term, with no full rescoring. Slots of
removed entries stay in the arrays (masked out by ``alive``) until :meth:`BM25.compact`;
``bench/search_scifact.py`` checks the scores against bm25s and rank_bm25 on SciFact.

Entries belong to *documents* (a group number per slot, the caller's). :meth:`BM25.ranked` scores
documents, not entries: a document's term frequencies and length are the sums of its entries' (each
entry indexing only what it adds to the document, see :mod:`bastion.knowledge.index.passages`), and
N, df and avgdl count documents. Each matching entry then carries its document's score scaled by its
own (entry-level) score over the best entry's of that document: the best entry of a document scores
exactly as the whole document would, the others less. On SciFact's train queries this ranks
documents as whole-document BM25 does, better than the best entry alone (``bench/bm25_quality.py``,
``docs/benchmarks.md``, "Figures out of the code"). :class:`Statistics` are the document-level
counts for one query; summed over several indexes (tables of one tenant and source each) and handed
back to :meth:`BM25.ranked`, they score every table on one scale.
"""

from __future__ import annotations

from array import array
from collections.abc import Sequence

import numpy as np
import numpy.typing as npt

from bastion.core.memo import Memo
from bastion.knowledge.index.analysis import Analyzer
from bastion.knowledge.index.postings import Postings
from bastion.knowledge.index.scoring import LuceneBM25, Scoring, Statistics

__all__ = ["BM25", "LuceneBM25", "Scoring", "Statistics"]

_F32 = npt.NDArray[np.float32]
_I32 = npt.NDArray[np.int32]
_Bool = npt.NDArray[np.bool_]
_I64 = npt.NDArray[np.int64]
_MASKED = 16
"""Statistics kept for this many masks (one per principal view and filter in use)."""
_CACHED = 1 << 22
"""Postings up to which a bulk add scores every term at once (32 MiB of slots and scores)."""
_KEPT = 1 << 20
"""Per-term scores a view keeps between queries, in entries (a combined pair's entry is 12
bytes: 12 MiB; ``_CACHED`` of them held 48 MiB at 100,000 documents)."""
_BULK_ADDED = 256
_BULK_SHARE = 0.1
"""Entries added since the last unfiltered view (at least this many, and this share of the
slots) that make the next view (:meth:`BM25.prepare` at the end of a load, else the first
search) score every term in one pass instead of each term on first use: a bulk load is
followed by many searches. The share keeps searches between small writes per term: a pass
scores the whole collection, so one comes only once the collection grew by a tenth."""


class _Documents:
    """The visible slots of a view grouped by document: ``local[slot]`` is the slot's
    document's position (``-1``: not visible), ``lengths`` each document's length."""

    __slots__ = ("lengths", "local", "norm", "single", "terms")

    def __init__(self, local: _I64, lengths: _F32, entries: int) -> None:
        self.local = local
        self.lengths = lengths
        self.single = entries == len(lengths)
        """Every document has one visible entry."""
        self.norm: _F32 | None = None
        """Length norms with this view's own average (computed when first needed)."""
        self.terms: dict[int, tuple[_I64, _F32]] = {}
        """Term -> (documents holding it, their summed frequencies): statistics-free (the
        document counts and the scores with other tables' statistics use them)."""


class _Bulk:
    """Every term's scores in one view, from one vectorized pass, laid out so that a term's
    arrays are slices (no copy, no join on first use): one row per term id (CSR), the entries
    holding the term (their slots) then, where documents are numbered in slot order, the
    documents holding it (their places, ``offset + document``, in the sums of
    :meth:`BM25._summed`), with the score at each. A term's row is the pair one ``add.at``
    adds; its first part what :meth:`BM25.scores` adds."""

    __slots__ = (
        "doc_starts", "doc_sums", "documented", "middle", "offset", "scores", "starts", "where",
    )  # fmt: skip

    def __init__(
        self,
        indptr: _I64,
        middle: _I64,
        where: _I64,
        scores: _F32,
        offset: int,
        doc_indptr: _I64 | None = None,
        doc_sums: _F32 | None = None,
    ) -> None:
        self.starts = array("q", indptr.tobytes())
        """Row starts (one more than terms; an ``array``: a Python int per look-up, the
        fastest slice bounds)."""
        self.middle = array("q", middle.tobytes())
        """Per term, where its document part starts (its row's end when there is none)."""
        self.where = where
        self.scores = scores
        self.offset = offset
        self.documented = doc_indptr is not None
        """The document level is here too (documents numbered in slot order)."""
        self.doc_starts = array("q", b"" if doc_indptr is None else doc_indptr.tobytes())
        self.doc_sums = np.zeros(0, dtype=np.float32) if doc_sums is None else doc_sums
        """Per (term, document), the term's summed frequency (rows of ``doc_starts``)."""

    def entries(self, term: int) -> tuple[_I64, _F32]:
        lo, hi = self.starts[term], self.middle[term]
        return self.where[lo:hi], self.scores[lo:hi]

    def documents(self, term: int) -> tuple[_I64, _F32, _F32]:
        """The documents holding ``term``, its summed frequency and its score in each."""
        lo, hi = self.middle[term], self.starts[term + 1]
        sums = self.doc_sums[self.doc_starts[term] : self.doc_starts[term + 1]]
        return self.where[lo:hi] - self.offset, sums, self.scores[lo:hi]

    def row(self, term: int) -> tuple[_I64, _F32]:
        """The entries' slots then the documents' places, and the scores at each."""
        lo, hi = self.starts[term], self.starts[term + 1]
        return self.where[lo:hi], self.scores[lo:hi]


class _View:
    """The statistics of the entries one search may see, and the term scores they give."""

    __slots__ = (
        "bulk", "cached", "combined", "docs", "n", "norm", "owed", "size", "terms", "visible",
    )  # fmt: skip

    def __init__(self, visible: _Bool | None, n: int, norm: _F32) -> None:
        self.visible = visible
        """Per slot, or ``None``: every slot is live and visible."""
        self.n = n
        self.norm = norm
        self.terms: dict[int, tuple[_I32, _F32]] = {}
        self.cached = 0
        self.size = len(norm)
        self.docs: _Documents | None = None
        self.bulk: _Bulk | None = None
        """Every term scored at once (after a bulk add), or ``None``: each term on first use."""
        self.owed = False
        """Scored when a load ended (:meth:`BM25.prepare`) and not yet used by a search:
        dropped unused (an entry removed), the next unfiltered view scores every term at once
        again."""
        self.combined: dict[int, tuple[_I64, _F32]] = {}
        """Term -> its entry scores and its document scores as one pair of arrays: positions
        ``slot`` and ``slots + document`` of one sum (one ``add.at`` a term, not two)."""

    def forget(self) -> None:
        """Drop the per-term scores kept (over the :data:`_KEPT` bound)."""
        self.terms.clear()
        self.combined.clear()
        if self.docs is not None:
            self.docs.terms.clear()
        self.cached = 0


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
        self._masked: Memo[int, tuple[_Bool, _View]] = Memo(_MASKED)
        self._groups = np.zeros(0, dtype=np.int64)
        """Per slot, its document's number (the caller's; ``-1 - slot`` when none was given)."""
        self._added = 0
        """Entries added since the last unfiltered view was made (a bulk load when many)."""
        self._due = False
        """The next unfiltered view scores every term at once whatever :attr:`_added` says
        (a view scored after a bulk add was dropped before any search used it)."""

    def __len__(self) -> int:
        return self._postings.live_count

    @property
    def slots(self) -> int:
        """Slots allocated, live or not."""
        return self._postings.slots

    def add(self, slot: int, text: str) -> None:
        """Index ``text`` under ``slot``, which must be the next slot (``self.slots``)."""
        self.add_many(slot, [text])

    def add_many(
        self, first: int, texts: Sequence[str], documents: Sequence[int] | None = None
    ) -> None:
        """Index ``texts`` under slots ``first, first + 1, ...``; ``first`` must be the next
        slot. One vectorized pass: much faster than adding them one by one. ``documents``:
        each text's document number (any integers >= 0; default: each text is a document)."""
        if first != self._postings.slots:
            raise ValueError(f"slot {first} is not the next slot ({self._postings.slots})")
        if documents is not None and len(documents) != len(texts):
            raise ValueError(f"{len(documents)} document numbers for {len(texts)} texts")
        self._postings.add_many(texts)
        end = first + len(texts)
        if end > len(self._groups):
            grown = np.zeros(max(end, 2 * len(self._groups), 64), dtype=np.int64)
            grown[:first] = self._groups[:first]
            self._groups = grown
        self._groups[first:end] = (
            np.arange(-1 - first, -1 - end, -1)
            if documents is None
            else np.asarray(documents, dtype=np.int64)
        )
        self._added += len(texts)
        self._changed()

    def prepare(self) -> None:
        """A load ended: when it was a bulk add, score every term now, at index time, as
        bm25s does, rather than in the next search. One pass for a load of many batches."""
        if self._view is None and self._bulk_due():
            self._view = self._new_view()
            self._view.owed = True

    def merge_segments(self) -> None:
        """Merge the postings into one segment (after a bulk load, which adds one a slice):
        a query term's postings become one slice of one array. Scores do not change."""
        self._postings.merged()

    def remove(self, slot: int) -> None:
        """Take ``slot`` out of scoring (idempotent)."""
        if self._postings.remove(slot):
            self._changed()

    def _changed(self) -> None:
        view = self._view
        if view is not None and view.owed:
            self._due = True
        self._view = None
        self._masked = Memo(_MASKED)

    def _bulk_due(self) -> bool:
        """A bulk add since the last unfiltered view: enough entries added (see
        :data:`_BULK_ADDED`) that scoring every term at once pays."""
        return self._added >= max(_BULK_ADDED, _BULK_SHARE * self._postings.slots)

    def _unmasked(self) -> _View:
        view = self._view
        if view is None:
            view = self._view = self._new_view()
        view.owed = False
        return view

    def _new_view(self) -> _View:
        """The unfiltered view of the live entries; every term scored in it at once after a
        bulk add (once per load, when it ends: :meth:`prepare`; or here, in the first search,
        where it was not, or its view was dropped before any search used it)."""
        p = self._postings
        avgdl = p.live_length / max(p.live_count, 1)
        complete = p.live_count == p.slots
        view = _View(
            None if complete else p.alive.copy(),
            p.live_count,
            self.scoring.length_norm(p.lengths, avgdl),
        )
        bulk = self._due or self._bulk_due()
        self._added, self._due = 0, False
        if bulk and p.postings_count <= _CACHED:
            self._score_all(view)
        return view

    def _score_all(self, view: _View) -> None:
        """Score every term of ``view`` in one pass (:class:`_Bulk`): the same float32 values
        as scoring each term on first use, without a few dozen array calls per term."""
        p = self._postings
        merged = p.merged()
        terms, slots, tfs = merged.triplets()
        vocabulary = p.vocabulary
        if view.visible is None:
            counts = np.zeros(vocabulary, dtype=np.int64)
            counts[merged.terms] = np.diff(merged.indptr)
        else:
            keep = view.visible[slots]
            terms, slots, tfs = terms[keep], slots[keep], tfs[keep]
            counts = np.bincount(terms, minlength=vocabulary)
        scores = self.scoring.idfs(view.n, counts)[terms] * self.scoring.weights(
            tfs, view.norm[slots]
        )
        entry_indptr = _offsets(counts)
        docs = self._documents(view)
        where = docs.local[slots]
        same_term = terms[1:] == terms[:-1]
        if not len(where) or bool((same_term & (where[1:] < where[:-1])).any()):
            # documents not numbered in slot order: their level stays per term
            view.bulk = _Bulk(
                entry_indptr, entry_indptr[1:], slots.astype(np.int64), scores, p.slots
            )
            return
        first = np.empty(len(where), dtype=bool)
        first[0] = True
        np.not_equal(where[1:], where[:-1], out=first[1:])
        first[1:] |= ~same_term
        starts = np.flatnonzero(first)
        run_terms = terms[starts]
        doc_ids = where[starts]
        doc_sums = np.add.reduceat(tfs, starts)
        doc_counts = np.bincount(run_terms, minlength=vocabulary)
        doc_scores = self.scoring.idfs(len(docs.lengths), doc_counts)[run_terms] * (
            self.scoring.weights(doc_sums, self._document_norm(docs)[doc_ids])
        )
        # one row per term: its entries, then its documents (each part keeps its order)
        doc_indptr = _offsets(doc_counts)
        parts = np.empty(2 * vocabulary, dtype=np.int64)
        parts[0::2], parts[1::2] = counts, doc_counts
        at_doc = np.repeat(np.tile(np.array([False, True]), vocabulary), parts)
        at_entry = ~at_doc
        places = np.empty(len(at_doc), dtype=np.int64)
        places[at_entry] = slots
        places[at_doc] = doc_ids + p.slots
        row_scores = np.empty(len(at_doc), dtype=np.float32)
        row_scores[at_entry] = scores
        row_scores[at_doc] = doc_scores
        view.bulk = _Bulk(
            entry_indptr + doc_indptr,
            entry_indptr[1:] + doc_indptr[:-1],
            places,
            row_scores,
            p.slots,
            doc_indptr,
            doc_sums,
        )

    def _document_norm(self, docs: _Documents) -> _F32:
        if docs.norm is None:
            avgdl = float(docs.lengths.sum()) / max(len(docs.lengths), 1)
            docs.norm = self.scoring.length_norm(docs.lengths, avgdl)
        return docs.norm

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
        self._masked[id(mask)] = (mask, view)  # holds the mask: ids stay unique
        return view

    def _term(self, view: _View, term: int) -> tuple[_I32 | _I64, _F32]:
        """The visible slots holding ``term`` and their scores (idf included)."""
        if view.bulk is not None:
            return view.bulk.entries(term)
        found = view.terms.get(term)
        if found is not None:
            return found
        found = self._scored(view, term)
        if view.cached + len(found[0]) > _KEPT:
            view.forget()
        view.terms[term] = found
        view.cached += len(found[0])
        return found

    def _scored(self, view: _View, term: int) -> tuple[_I32, _F32]:
        """:meth:`_term`, computed (nothing kept)."""
        slots, tfs = self._postings.postings(term)
        if view.visible is not None:
            keep = view.visible[slots]
            slots, tfs = slots[keep], tfs[keep]
        if not len(slots):
            return slots, tfs
        idf = np.float32(self.scoring.idf(view.n, len(slots)))
        return slots, idf * self.scoring.weights(tfs, view.norm[slots])

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
                np.add.at(out, slots, scores)  # the same sums as ``out[slots] += scores``, faster
        return out

    # -- documents ---------------------------------------------------------------------------

    def _view_of(self, mask: _Bool | None) -> _View:
        return self._unmasked() if mask is None else self._masked_view(mask)

    def _documents(self, view: _View) -> _Documents:
        if view.docs is None:
            p = self._postings
            visible = np.flatnonzero(p.alive if view.visible is None else view.visible)
            _, inverse = np.unique(self._groups[visible], return_inverse=True)
            lengths = np.bincount(inverse, weights=p.lengths[visible]).astype(np.float32)
            local = np.full(p.slots, -1, dtype=np.int64)
            local[visible] = inverse
            view.docs = _Documents(local, lengths, len(visible))
        return view.docs

    def _document_term(self, view: _View, docs: _Documents, term: int) -> tuple[_I64, _F32]:
        """The visible documents holding ``term`` and its frequency in each."""
        if view.bulk is not None and view.bulk.documented:
            return view.bulk.documents(term)[:2]
        found = docs.terms.get(term)
        if found is None:
            found = self._summed_by_document(docs, term)
            if view.cached + len(found[0]) > _KEPT:  # the view's bound covers both levels
                view.forget()
            view.cached += len(found[0])
            docs.terms[term] = found
        return found

    def _summed_by_document(self, docs: _Documents, term: int) -> tuple[_I64, _F32]:
        """:meth:`_document_term`, computed (nothing kept)."""
        slots, tfs = self._postings.postings(term)
        where = docs.local[slots]
        seen = where >= 0
        where, tfs = where[seen], tfs[seen]
        if not len(where):
            return where, tfs
        if bool((where[1:] >= where[:-1]).all()):
            # documents numbered in slot order (always, until one is written again): each
            # document's entries are a run, summed without a sort
            starts = np.flatnonzero(np.r_[True, where[1:] != where[:-1]])
            return where[starts], np.add.reduceat(tfs, starts)
        ids, inverse = np.unique(where, return_inverse=True)
        return ids, np.bincount(inverse, weights=tfs, minlength=len(ids)).astype(np.float32)

    def statistics(self, query: str, mask: _Bool | None = None) -> Statistics:
        """The document-level counts :meth:`ranked` uses for ``query``, over the live entries
        ``mask`` admits (never over the others)."""
        terms = list(dict.fromkeys(self.analyzer.analyze(query)))
        if self._postings.live_count == 0:
            return Statistics(0, 0.0, dict.fromkeys(terms, 0), 0, dict.fromkeys(terms, 0))
        view = self._view_of(mask)
        docs = self._documents(view)
        df: dict[str, int] = {}
        entry_df: dict[str, int] = {}
        for term in terms:
            found = self._postings.term_id(term)
            df[term] = 0 if found is None else len(self._document_term(view, docs, found)[0])
            entry_df[term] = 0 if found is None else len(self._visible(view, found)[0])
        return Statistics(len(docs.lengths), float(docs.lengths.sum()), df, view.n, entry_df)

    def _visible(self, view: _View, term: int) -> tuple[_I32, _F32]:
        slots, tfs = self._postings.postings(term)
        if view.visible is not None:
            keep = view.visible[slots]
            slots, tfs = slots[keep], tfs[keep]
        return slots, tfs

    def _query_terms(self, query: str) -> list[tuple[str, int]]:
        """The distinct analyzed terms of ``query`` this collection knows, with their ids."""
        known = self._postings.term_id
        pairs = ((term, known(term)) for term in dict.fromkeys(self.analyzer.analyze(query)))
        return [(term, found) for term, found in pairs if found is not None]

    def _entry_parts(
        self, terms: list[tuple[str, int]], view: _View, statistics: Statistics
    ) -> list[tuple[_I32, _F32]]:
        """Per query term, the visible slots holding it and their entry-level scores with
        ``statistics``."""
        norm = self.scoring.length_norm(
            self._postings.lengths, statistics.length / max(statistics.entries, 1)
        )
        parts: list[tuple[_I32, _F32]] = []
        for term, found in terms:
            slots, tfs = self._visible(view, found)
            if len(slots):
                df = max(statistics.entry_df.get(term, 0), len(slots))
                idf = np.float32(self.scoring.idf(max(statistics.entries, view.n), df))
                parts.append((slots, idf * self.scoring.weights(tfs, norm[slots])))
        return parts

    def matches(
        self, query: str, mask: _Bool | None = None, statistics: Statistics | None = None
    ) -> tuple[_I64, _F32]:
        """The slots :meth:`ranked` scores above 0, increasing, and their scores: what a
        top-k needs, without a pass over every slot of the collection."""
        none = (np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.float32))
        if self._postings.live_count == 0:
            return none
        if statistics is None:
            ids = self._postings.query_terms(query)  # no term strings: the own counts only
            if not ids:
                return none
            view = self._view_of(mask)
            summed = self._summed(ids, view) if view.n else None
            if summed is None:
                return none
            matched, own, totals, docs = summed
        else:
            terms = self._query_terms(query)
            view = self._view_of(mask)
            if not terms or view.n == 0:
                return none
            shared = self._shared_sums(terms, view, statistics)
            if shared is None:
                return none
            matched, own, totals, docs = shared
        where = docs.local[matched]
        if docs.single:  # one visible entry per document: each is its document's best
            return matched, totals[where]
        best = np.zeros(len(docs.lengths), dtype=np.float32)
        np.maximum.at(best, where, own)
        return matched, totals[where] * (own / best[where])

    def _summed(self, terms: list[int], view: _View) -> tuple[_I64, _F32, _F32, _Documents] | None:
        """With the view's own statistics: each matched slot and its entry-level sum, each
        document's total, from one ``add.at`` a term over entries and documents together
        (the same float32 sums, in the same order, as one array for each level)."""
        docs = self._documents(view)
        size = self._postings.slots
        sums = np.zeros(size + len(docs.lengths), dtype=np.float32)
        hit = False
        for found in terms:
            where, scores = self._combined(view, docs, found)
            if len(where):
                np.add.at(sums, where, scores)
                hit = True
        if not hit:
            return None
        entries = sums[:size]
        matched = np.flatnonzero(entries > 0)  # a comparison first: nonzero on floats is slow
        return matched, entries[matched], sums[size:], docs

    def _combined(self, view: _View, docs: _Documents, term: int) -> tuple[_I64, _F32]:
        """``term``'s entry scores at their slots and document scores at ``slots +
        document``, kept per view (see :attr:`_View.combined`)."""
        bulk = view.bulk
        if bulk is not None and bulk.documented:
            return bulk.row(term)  # two slices of the bulk's arrays: nothing copied or kept
        found = view.combined.get(term)
        if found is not None:
            return found
        # the pair alone is kept: its parts are computed, or taken from the bulk, not cached
        slots, scores = bulk.entries(term) if bulk is not None else self._scored(view, term)
        ids, tfs = self._summed_by_document(docs, term)
        idf = np.float32(self.scoring.idf(len(docs.lengths), len(ids)))
        weights = idf * self.scoring.weights(tfs, self._document_norm(docs)[ids])
        found = (
            np.concatenate([slots.astype(np.int64), ids + self._postings.slots]),
            np.concatenate([scores, weights]),
        )
        if view.cached + len(found[0]) > _KEPT:
            view.forget()
        view.combined[term] = found
        view.cached += len(found[0])
        return found

    def _shared_sums(
        self, terms: list[tuple[str, int]], view: _View, statistics: Statistics
    ) -> tuple[_I64, _F32, _F32, _Documents] | None:
        """:meth:`_summed` with ``statistics`` counted over several tables (nothing kept:
        the scores hold for this query's statistics only)."""
        parts = [part for part in self._entry_parts(terms, view, statistics) if len(part[0])]
        if not parts:
            return None
        if len(parts) == 1:
            matched, own = parts[0][0].astype(np.int64), parts[0][1]
        else:
            summed = np.zeros(self._postings.slots, dtype=np.float32)
            for slots, scores in parts:
                np.add.at(summed, slots, scores)  # the sums of ``summed[slots] += ``, faster
            matched = np.flatnonzero(summed > 0)
            own = summed[matched]
        docs = self._documents(view)
        n = statistics.documents
        norm = self.scoring.length_norm(
            docs.lengths, statistics.length / max(statistics.documents, 1)
        )
        totals = np.zeros(len(docs.lengths), dtype=np.float32)
        for term, found in terms:
            ids, tfs = self._document_term(view, docs, found)
            if not len(ids):
                continue
            df = max(statistics.df.get(term, 0), len(ids))
            idf = np.float32(self.scoring.idf(n, df))
            np.add.at(totals, ids, idf * self.scoring.weights(tfs, norm[ids]))
        return matched, own, totals, docs

    def ranked(
        self, query: str, mask: _Bool | None = None, statistics: Statistics | None = None
    ) -> _F32:
        """One score per slot, documents first (see the module docstring): each matching entry
        scores its document's BM25 times its own score over its document's best entry's; 0
        where nothing matched, removed or masked out.

        N, df and avgdl are those of the documents ``mask`` admits, or ``statistics`` (counted
        by :meth:`statistics` over a wider collection this one is part of: several tables
        searched as one)."""
        out = np.zeros(self._postings.slots, dtype=np.float32)
        slots, scores = self.matches(query, mask, statistics)
        out[slots] = scores
        return out

    def compact(self, keep: npt.NDArray[np.int64]) -> None:
        """Renumber: old slot ``keep[i]`` becomes slot ``i``; every other slot is dropped."""
        self._postings.compact(keep)
        self._groups = np.ascontiguousarray(self._groups[keep])
        self._changed()


def _offsets(counts: npt.NDArray[np.int64]) -> _I64:
    """Row starts of rows of ``counts`` items (CSR ``indptr``: one more than ``counts``)."""
    out = np.zeros(len(counts) + 1, dtype=np.int64)
    np.cumsum(counts, out=out[1:])
    return out
