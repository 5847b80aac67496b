"""An index held in memory: BM25 postings, a matrix of vectors, and per-document masks.

Keyword search ranks documents and returns their chunks (:meth:`BM25.ranked`): each chunk
indexes only what it adds to its document (:func:`own_texts`), and its document is numbered.
Filters are evaluated once per distinct document metadata and cached per filter, so a search
costs the scoring only; the mask of a new document is added when it first matters. Removed
chunks leave dead slots that are compacted away once they outnumber the live ones.

A subclass that stores the texts elsewhere (:class:`LanceIndex`) sets
:attr:`MemoryIndex.keeps_texts` to False: a slot then keeps its chunk with an empty text, the
text's hash and where the store holds it (:class:`TextRef`), and the subclass's
:meth:`MemoryIndex._with_texts` fetches the texts of the chunks a search returns, checked
against the hashes of the versions that were scored.
"""

from __future__ import annotations

import threading
from array import array
from collections import OrderedDict
from collections.abc import Iterable, Sequence
from dataclasses import replace
from typing import NamedTuple

import numpy as np
import numpy.typing as npt

from bastion.core.memo import Memo
from bastion.knowledge.index.analysis import Analyzer
from bastion.knowledge.index.bm25 import BM25, Statistics
from bastion.knowledge.index.models import (
    DocumentMeta,
    IndexedChunk,
    IndexFilter,
    IndexHit,
)
from bastion.knowledge.index.passages import own_texts
from bastion.knowledge.index.port import Index

__all__ = ["MemoryIndex", "TextRef"]

_MASK_CACHE = 256


class TextRef(NamedTuple):
    """Where a slot's text is, for an index that does not keep texts: taken under the lock
    with the hits, so a fetch afterwards checks against the version that was scored."""

    slot: int
    held: IndexedChunk
    """The slot's chunk as held (to tell that the slot still holds it)."""
    digest: int
    """``hash`` of the text indexed."""
    location: int
    """Where the store keeps the text (its row id), ``-1`` when not known."""


class MemoryIndex(Index):
    """Everything in process memory; :class:`LanceIndex` adds persistence on top."""

    kind = "memory"
    keeps_texts = True
    """Slots hold their chunk's text; False: an empty text and its hash (see the module doc)."""

    def __init__(self, *, analyzer: Analyzer | None = None, k1: float = 1.5, b: float = 0.75):
        self._lock = threading.RLock()
        self._analyzer = analyzer or Analyzer()
        self._k1, self._b = k1, b
        self._reset()

    def _reset(self) -> None:
        self._bm25 = BM25(self._analyzer, k1=self._k1, b=self._b)
        self._chunks: list[IndexedChunk | None] = []
        self._slot_of: dict[str, int] = {}
        self._doc_slots: dict[str, list[int]] = {}
        """Document id -> its slots, increasing (a list: a third of a set's size, and a
        document has a few chunks)."""
        self._doc_number: dict[str, int] = {}
        """Document id -> its number in keyword scoring (kept while the index lives)."""
        self._metas: list[DocumentMeta] = []
        self._meta_code: dict[DocumentMeta, int] = {}
        self._slot_meta = array("i")
        self._vectors: npt.NDArray[np.float32] | None = None
        self._has_vector = array("b")
        self._text_hash = array("q")
        """Per slot, ``hash`` of its chunk's text (only when texts are not kept)."""
        self._text_at = array("q")
        """Per slot, where the store keeps its text (:attr:`TextRef.location`)."""
        self._masks: OrderedDict[IndexFilter, npt.NDArray[np.bool_]] = OrderedDict()
        self._slot_masks: Memo[IndexFilter, tuple[int, npt.NDArray[np.bool_]]] = Memo(_MASK_CACHE)
        """Per-slot masks of the current generation: the same array for the same filter, so
        BM25 can keep its statistics for it (it recognizes a mask by identity)."""
        self._generation = 0
        self._last_mask: tuple[IndexFilter, int, npt.NDArray[np.bool_]] | None = None
        """The filter of the last filtered search (this object), the generation and its
        per-slot mask: a principal's searches pass the same filter object, and the three
        lookups of :meth:`_slot_mask` hash all of its fields each."""

    # -- writes ------------------------------------------------------------------------------

    def upsert(self, chunks: Sequence[IndexedChunk]) -> None:
        self._put(chunks)

    def _put(self, chunks: Sequence[IndexedChunk], locations: Sequence[int] | None = None) -> None:
        """:meth:`upsert` in the mirror only; ``locations``: where the store keeps each
        chunk's text, when known (an index that does not keep texts)."""
        with self._lock:
            self._check_vectors(chunks)
            # one vectorized BM25 pass for the batch; the slots follow in the same order
            numbers = self._doc_number
            self._bm25.add_many(
                len(self._chunks),
                own_texts(chunks),
                [numbers.setdefault(c.doc.doc_id, len(numbers)) for c in chunks],
            )
            self._reserve(len(self._chunks) + len(chunks), chunks)
            for n, chunk in enumerate(chunks):
                old = self._slot_of.get(chunk.chunk_id)
                if old is not None:
                    self._drop_slot(old)
                self._add(chunk, -1 if locations is None else locations[n])
            self._maybe_compact()

    def replace_documents(self, doc_ids: Sequence[str], chunks: Sequence[IndexedChunk]) -> None:
        with self._lock:  # a search sees the old chunks or the new ones, never neither
            self._check_vectors(chunks)  # a refused batch leaves the old chunks in place
            self.delete_documents(doc_ids)
            self.upsert(chunks)

    def _add(self, chunk: IndexedChunk, location: int = -1) -> None:
        self._generation += 1
        slot = len(self._chunks)  # BM25 holds it already (``upsert``)
        code = self._meta_code.get(chunk.doc)
        if code is None:
            code = self._meta_code[chunk.doc] = len(self._metas)
            self._metas.append(chunk.doc)
        self._chunks.append(_slim(chunk, self._metas[code], self.keeps_texts))
        if not self.keeps_texts:
            self._text_hash.append(hash(chunk.text))
            self._text_at.append(location)
        self._slot_of[chunk.chunk_id] = slot
        self._doc_slots.setdefault(chunk.doc.doc_id, []).append(slot)
        self._slot_meta.append(code)
        self._put_vector(slot, chunk.vector)

    def _check_vectors(self, chunks: Sequence[IndexedChunk]) -> None:
        """Refuse a batch with a vector of the wrong size before anything changes (a half-applied
        batch would leave slots without their vector row)."""
        dim = None if self._vectors is None else self._vectors.shape[1]
        for chunk in chunks:
            if chunk.vector is None:
                continue
            size = np.asarray(chunk.vector).size
            if dim is None:
                dim = size
            elif size != dim:
                raise ValueError(
                    f"chunk {chunk.chunk_id} has a vector of {size} dimensions in an index of {dim}"
                )

    def _reserve(self, slots: int, chunks: Sequence[IndexedChunk]) -> None:
        """Room for ``slots`` rows in the vector matrix, made once for a batch: exactly what a
        first load needs, and half as much again when it grows (not doubled row by row, which
        left up to half the matrix empty)."""
        if self._vectors is None:
            first = next((c.vector for c in chunks if c.vector is not None), None)
            if first is None:
                return
            self._vectors = np.zeros((max(64, slots), np.asarray(first).size), np.float32)
            return
        rows, dim = self._vectors.shape
        if slots > rows:
            grown = np.zeros((max(slots, rows + rows // 2), dim), np.float32)
            grown[:rows] = self._vectors
            self._vectors = grown

    def _put_vector(self, slot: int, vector: npt.NDArray[np.float32] | None) -> None:
        """Store the vector of ``slot``; once a vector exists, the matrix has a row per slot
        (a zero row where a chunk has none), so rows and slots line up."""
        vec = None if vector is None else np.asarray(vector, dtype=np.float32).reshape(-1)
        if self._vectors is None:
            if vec is None:
                self._has_vector.append(0)
                return
            self._vectors = np.zeros((max(64, slot + 1), vec.shape[0]), dtype=np.float32)
        rows, dim = self._vectors.shape
        if slot >= rows:
            grown = np.zeros((max(slot + 1, 2 * rows), dim), np.float32)
            grown[:rows] = self._vectors
            self._vectors = grown
        if vec is None:
            self._vectors[slot] = 0.0
            self._has_vector.append(0)
        else:
            self._vectors[slot] = vec
            self._has_vector.append(1)

    def _drop_slot(self, slot: int) -> None:
        chunk = self._chunks[slot]
        if chunk is None:
            return
        self._generation += 1
        self._chunks[slot] = None
        del self._slot_of[chunk.chunk_id]
        slots = self._doc_slots[chunk.doc.doc_id]
        slots.remove(slot)
        if not slots:
            del self._doc_slots[chunk.doc.doc_id]
        self._bm25.remove(slot)
        self._has_vector[slot] = 0

    def prepare(self) -> None:
        with self._lock:
            self._bm25.prepare()

    def _settle(self) -> None:
        """After a bulk load: the keyword postings merged into one segment (a load adds one a
        slice), so a query term's postings are one slice of one array, not one part per
        segment joined and kept in a cache. One copy of the postings, once; then, as after
        any bulk load, every term scored (:meth:`prepare`)."""
        with self._lock:
            self._bm25.merge_segments()
            self.prepare()

    def delete_documents(self, doc_ids: Iterable[str]) -> int:
        removed = 0
        with self._lock:
            for doc_id in doc_ids:
                for slot in list(self._doc_slots.get(doc_id, ())):
                    self._drop_slot(slot)
                    removed += 1
            self._maybe_compact()
        return removed

    def clear(self) -> None:
        with self._lock:
            self._reset()

    def _maybe_compact(self) -> None:
        dead = len(self._chunks) - len(self._slot_of)
        if dead > max(1000, len(self._slot_of)):
            self._compact()

    def _compact(self) -> None:
        keep = np.array([i for i, c in enumerate(self._chunks) if c is not None], dtype=np.int64)
        self._generation += 1
        self._bm25.compact(keep)
        self._chunks = [self._chunks[i] for i in keep]
        self._slot_of = {c.chunk_id: i for i, c in enumerate(self._chunks) if c is not None}
        self._doc_slots = {}
        # Metadata no live chunk carries any more (old versions of edited documents) goes too,
        # and with it the masks, or every new filter would still check each of them.
        self._meta_code = {}
        codes = array("i")
        for i, c in enumerate(self._chunks):
            assert c is not None
            self._doc_slots.setdefault(c.doc.doc_id, []).append(i)
            codes.append(self._meta_code.setdefault(c.doc, len(self._meta_code)))
        self._metas = list(self._meta_code)
        self._slot_meta = codes
        self._masks.clear()
        self._has_vector = array("b", np.frombuffer(self._has_vector, np.int8)[keep].tobytes())
        if not self.keeps_texts:
            hashes = np.frombuffer(self._text_hash, np.int64)[keep]
            self._text_hash = array("q", hashes.tobytes())
            self._text_at = array("q", np.frombuffer(self._text_at, np.int64)[keep].tobytes())
        if self._vectors is not None:
            self._vectors = np.ascontiguousarray(self._vectors[keep])

    # -- reads -------------------------------------------------------------------------------

    def documents(self) -> dict[str, DocumentMeta]:
        with self._lock:
            out: dict[str, DocumentMeta] = {}
            for doc_id, slots in self._doc_slots.items():
                chunk = self._chunks[max(slots)]  # the latest write wins
                assert chunk is not None
                out[doc_id] = chunk.doc
            return out

    def chunks_of(self, doc_id: str) -> list[IndexedChunk]:
        """The chunks with their vectors (a search's hits carry none: the matrix holds them)."""
        with self._lock:
            found = []
            slots = []
            for slot in self._doc_slots.get(doc_id, ()):
                chunk = self._chunks[slot]
                if chunk is None:
                    continue
                if self._has_vector[slot] and self._vectors is not None:
                    chunk = replace(chunk, vector=self._vectors[slot].copy())
                found.append(chunk)
                slots.append(slot)
            refs = None if self.keeps_texts else self._refs(slots)
        if refs is not None:
            found = [c for c in self._with_texts(found, refs) if c is not None]
        return sorted(found, key=lambda c: c.seq)

    def _chunk_ids(self, doc_id: str) -> set[str]:
        """The ids of a document's chunks (the mirror only: no text is fetched)."""
        with self._lock:
            return {
                chunk.chunk_id
                for slot in self._doc_slots.get(doc_id, ())
                if (chunk := self._chunks[slot]) is not None
            }

    def _refs(self, slots: Sequence[int]) -> list[TextRef]:
        """Where the texts of these (live) slots are; under the lock."""
        chunks, digests, at = self._chunks, self._text_hash, self._text_at
        return [TextRef(s, chunks[s], digests[s], at[s]) for s in slots]  # type: ignore[arg-type]

    def _learn(self, ref: TextRef, location: int) -> None:
        """Where the store keeps the text of ``ref``'s slot, found by a fetch (kept if the
        slot still holds the same chunk)."""
        with self._lock:
            if ref.slot < len(self._chunks) and self._chunks[ref.slot] is ref.held:
                self._text_at[ref.slot] = location

    def _with_texts(
        self, chunks: Sequence[IndexedChunk], refs: Sequence[TextRef]
    ) -> list[IndexedChunk | None]:
        """``chunks`` (held without their texts) with their texts, each checked against the
        hash of the text that was indexed (``refs``, one per chunk); ``None`` for a chunk
        whose text is gone or has changed since. Only called when :attr:`keeps_texts` is
        False: a subclass that sets it implements this."""
        raise NotImplementedError("an index that does not keep texts must fetch them")

    def count(self) -> int:
        return len(self._slot_of)

    def admits_any(self, flt: IndexFilter) -> bool:
        """From the filter's cached mask (a routed search asks it of every table)."""
        with self._lock:
            mask = self._slot_mask(flt)
            chunks = self._chunks
            return mask is None or any(chunks[s] is not None for s in np.flatnonzero(mask))

    def _slot_mask(self, flt: IndexFilter | None) -> npt.NDArray[np.bool_] | None:
        if flt is None:
            return None
        last = self._last_mask
        if last is not None and last[0] is flt and last[1] == self._generation:
            return last[2]
        if flt.access is not None and flt.access_key is None:
            # Filters compare equal regardless of ``access``: without a key to tell two checks
            # apart, a cached mask could be another principal's.
            fresh = np.fromiter((flt.admits(m) for m in self._metas), bool, len(self._metas))
            return self._section_mask(flt, fresh)
        doc_mask = self._masks.get(flt)
        if doc_mask is None or len(doc_mask) < len(self._metas):
            start = 0 if doc_mask is None else len(doc_mask)
            extra = np.fromiter(
                (flt.admits(m) for m in self._metas[start:]), bool, len(self._metas) - start
            )
            doc_mask = extra if doc_mask is None else np.concatenate([doc_mask, extra])
            self._masks[flt] = doc_mask
            if len(self._masks) > _MASK_CACHE:
                self._masks.popitem(last=False)
        self._masks.move_to_end(flt)
        known = self._slot_masks.get(flt)
        if known is not None and known[0] == self._generation:
            mask = known[1]
        else:
            mask = self._section_mask(flt, doc_mask)
            self._slot_masks[flt] = (self._generation, mask)
        self._last_mask = (flt, self._generation, mask)
        return mask

    def _section_mask(
        self, flt: IndexFilter, doc_mask: npt.NDArray[np.bool_]
    ) -> npt.NDArray[np.bool_]:
        """Per-document mask -> per-slot mask, with the section condition applied."""
        mask = doc_mask[np.frombuffer(self._slot_meta, dtype=np.int32)]
        if flt.section is not None:
            for slot in np.flatnonzero(mask):
                chunk = self._chunks[slot]
                if chunk is not None and not flt.admits_section(chunk.section):
                    mask[slot] = False
        return mask

    def search_keyword(
        self,
        query: str,
        k: int,
        flt: IndexFilter | None = None,
        *,
        statistics: Statistics | None = None,
    ) -> list[IndexHit]:
        with self._lock:
            slots, scores = self._bm25.matches(query, self._slot_mask(flt), statistics)
            hits, refs = self._best(slots, scores, k)
        return hits if refs is None else self._texted(hits, refs)

    def keyword_statistics(self, query: str, flt: IndexFilter | None = None) -> Statistics:
        with self._lock:
            return self._bm25.statistics(query, self._slot_mask(flt))

    def search_vector(
        self, vector: npt.NDArray[np.float32], k: int, flt: IndexFilter | None = None
    ) -> list[IndexHit]:
        with self._lock:
            n = len(self._chunks)
            if self._vectors is None or n == 0:
                return []
            query = np.asarray(vector, dtype=np.float32).reshape(-1)
            scores = self._vectors[:n] @ query
            ok = np.frombuffer(self._has_vector, dtype=np.int8).astype(bool)
            mask = self._slot_mask(flt)
            if mask is not None:
                ok &= mask
            scores[~ok] = -np.inf
            candidates = np.flatnonzero(np.isfinite(scores))
            hits, refs = self._best(candidates, scores[candidates], k)
        return hits if refs is None else self._texted(hits, refs)

    def _texted(self, hits: list[IndexHit], refs: list[TextRef]) -> list[IndexHit]:
        """The hits with their chunks' texts (:meth:`_with_texts`); a hit whose text changed
        or went after it was scored is left out (its text would not be the one scored)."""
        if not hits:
            return hits
        chunks = self._with_texts([hit.chunk for hit in hits], refs)
        return [
            IndexHit(chunk, hit.score)
            for chunk, hit in zip(chunks, hits, strict=True)
            if chunk is not None
        ]

    def _best(
        self, candidates: npt.NDArray[np.int64], values: npt.NDArray[np.float32], k: int
    ) -> tuple[list[IndexHit], list[TextRef] | None]:
        """The ``k`` best of ``candidates`` (slots) by ``values``, ties by slot; with where
        their texts are when texts are not kept (``None`` when they are)."""
        if k <= 0 or not len(candidates):
            return [], None
        if len(candidates) > k:
            # the k best, back in slot order (``candidates`` increase): a stable sort by score
            # then breaks ties by slot, as a two-key sort would, in a tenth of the time
            part = np.sort(np.argpartition(values, len(values) - k)[len(values) - k :])
            candidates, values = candidates[part], values[part]
        ranked = np.argsort(-values, kind="stable")
        chunks = self._chunks
        hit = tuple.__new__  # IndexHit's own __new__ is a Python frame per hit
        slots = candidates[ranked].tolist()
        hits = [
            hit(IndexHit, (chunk, score))
            for slot, score in zip(slots, values[ranked].tolist(), strict=True)
            if (chunk := chunks[slot]) is not None
        ]
        if self.keeps_texts:
            return hits, None
        return hits, self._refs([slot for slot in slots if chunks[slot] is not None])


def _slim(chunk: IndexedChunk, doc: DocumentMeta, keep_text: bool = True) -> IndexedChunk:
    """The chunk as a slot keeps it: its document's metadata shared with every chunk of the
    same labels (``doc``, equal to its own), no vector (the matrix row holds it), and, unless
    ``keep_text``, no text. A load made a metadata record and a vector array per chunk: at
    100,000 documents they were about as large as the matrix itself; the texts were a third
    of the rest (``bench/scale_corpus.py``)."""
    if chunk.doc is doc and chunk.vector is None and (keep_text or not chunk.text):
        return chunk
    return IndexedChunk(
        chunk_id=chunk.chunk_id,
        doc=doc,
        seq=chunk.seq,
        text=chunk.text if keep_text else "",
        start_line=chunk.start_line,
        end_line=chunk.end_line,
        section=chunk.section,
    )
