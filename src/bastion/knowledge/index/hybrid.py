"""Hybrid search over one index: keyword and vector candidates, fused, texts fetched once.

An index that keeps its chunks' texts out of memory (:class:`LanceIndex` past
``_KEEP_TEXTS`` chunks) fetches the texts of the hits each search returns. A hybrid search
asks for a hundred candidates of each mode and keeps the ``k`` best of their fusion, so
fetching each list's texts as it is found read about ``2 x 100`` texts for the ``k`` shown.
:func:`hybrid` runs both candidate searches while :func:`deferring` is in force: such an
index then hands back its candidates without their texts and says where they are
(:meth:`DeferredTexts.hold`); after the fusion, :meth:`DeferredTexts.fill` fetches the texts
of the fused top ``k`` only, in one fetch per index, each checked against the hash of the
text that was scored (the check the index's own fetch makes).

A candidate whose text changed or went since it was scored (another process rewrote its
document between the search and the fetch) is left out, as a direct search leaves it out,
and the next fused hit takes its place; the fusion itself saw it, which a direct search's
fusion would not have (the scores of the others move by that candidate's share of the list
statistics: only under a concurrent rewrite, and the hits shown are still current).
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator, Sequence
from contextvars import ContextVar
from typing import TYPE_CHECKING, Protocol

import numpy as np
import numpy.typing as npt

from bastion.knowledge.index.models import IndexedChunk, IndexFilter, IndexHit

if TYPE_CHECKING:
    from bastion.knowledge.index.memory import TextRef
    from bastion.knowledge.index.port import Index

__all__ = ["DeferredTexts", "TextSource", "deferring", "hybrid"]


class TextSource(Protocol):
    """An index that fetches its chunks' texts (and can be asked to later)."""

    def fetch_texts(
        self, chunks: Sequence[IndexedChunk], refs: Sequence[TextRef]
    ) -> list[IndexedChunk | None]:
        """``chunks`` with their texts; ``None`` for one whose text is gone or changed."""
        ...


class DeferredTexts:
    """The candidates of the searches run under :func:`deferring` whose texts were not
    fetched: where each one's text is, until :meth:`fill`."""

    def __init__(self) -> None:
        self._held: dict[int, tuple[TextSource, IndexedChunk, TextRef]] = {}
        """``id`` of a held chunk -> its index, the chunk (kept alive: its ``id`` stays its
        own) and where its text is."""

    def hold(
        self, source: TextSource, chunks: Sequence[IndexedChunk], refs: Sequence[TextRef]
    ) -> None:
        """Remember where the texts of ``chunks`` (returned without them) are."""
        for chunk, ref in zip(chunks, refs, strict=True):
            self._held[id(chunk)] = (source, chunk, ref)

    def fill(self, hits: Sequence[IndexHit], k: int) -> list[IndexHit]:
        """The first ``k`` of ``hits`` with their texts: one fetch per index for the top
        ``k``; a hit whose text is gone is left out and the next one taken (and fetched)."""
        out: list[IndexHit] = []
        at = 0
        while len(out) < k and at < len(hits):
            batch = hits[at : at + k - len(out)]
            at += len(batch)
            out += [hit for hit in self._texted(batch) if hit is not None]
        return out

    def _texted(self, hits: Sequence[IndexHit]) -> list[IndexHit | None]:
        found: list[IndexHit | None] = list(hits)
        groups: dict[int, tuple[TextSource, list[int]]] = {}
        for n, hit in enumerate(hits):
            held = self._held.get(id(hit.chunk))
            if held is not None and held[1] is hit.chunk:
                groups.setdefault(id(held[0]), (held[0], []))[1].append(n)
        for source, places in groups.values():
            refs = [self._held[id(hits[n].chunk)][2] for n in places]
            chunks = source.fetch_texts([hits[n].chunk for n in places], refs)
            for n, chunk in zip(places, chunks, strict=True):
                found[n] = None if chunk is None else IndexHit(chunk, hits[n].score)
        return found


_DEFERRED: ContextVar[DeferredTexts | None] = ContextVar("bastion_deferred_texts", default=None)


def deferred() -> DeferredTexts | None:
    """The texts being deferred in this context (:func:`deferring`), else ``None``."""
    return _DEFERRED.get()


@contextlib.contextmanager
def deferring() -> Iterator[DeferredTexts]:
    """While in force (in this thread or task), an index that fetches texts returns its hits
    without them and records where they are in the :class:`DeferredTexts` given."""
    later = DeferredTexts()
    token = _DEFERRED.set(later)
    try:
        yield later
    finally:
        _DEFERRED.reset(token)


def hybrid(
    index: Index,
    query: str,
    vector: npt.NDArray[np.float32],
    *,
    k: int,
    depth: int,
    fuse: Callable[[Sequence[IndexHit], Sequence[IndexHit]], list[IndexHit]],
    flt: IndexFilter | None = None,
) -> list[IndexHit]:
    """The ``k`` best of the fusion of ``depth`` keyword and ``depth`` vector candidates,
    with the texts of those ``k`` only fetched (once per index)."""
    with deferring() as later:
        keyword = index.search_keyword(query, depth, flt)
        dense = index.search_vector(vector, depth, flt)
    return later.fill(fuse(keyword, dense), k)
