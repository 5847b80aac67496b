"""The index port: upsert chunks by id, delete by document, search with a filter pushed down.

Contract (``tests/knowledge/index_contract.py`` runs it against every index):

* ``upsert`` replaces a chunk with the same ``chunk_id``; a search right after it sees it.
* ``delete_documents`` removes every chunk of those documents.
* ``search_keyword`` / ``search_vector`` return at most ``k`` hits, best first, each of which
  passes the filter; the filter is applied before ranking, so ``k`` hits come back whenever
  ``k`` chunks pass it and match.
* ``keyword_statistics`` gives what keyword scoring counts for a query under a filter (over
  the chunks the filter admits only); ``search_keyword(..., statistics=)`` scores with counts
  summed over several indexes, so that tables searched together score on one scale. An index
  that cannot (``keyword_statistics`` returns ``None``) scores with its own.
* ``documents()`` lists what is indexed (to notice stale or missing documents).
* ``refresh()`` takes in what other processes wrote to a shared index since this one last
  looked; an index that every process reads directly (PostgreSQL) or that no other process
  can write (in memory) has nothing to do.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Iterable, Sequence

import numpy as np
import numpy.typing as npt

from bastion.knowledge.index.bm25 import Statistics
from bastion.knowledge.index.models import DocumentMeta, IndexedChunk, IndexFilter, IndexHit

__all__ = ["Index"]


class Index(ABC):
    """A searchable store of chunks. Implementations are thread-safe."""

    kind: str = "index"

    @abstractmethod
    def upsert(self, chunks: Sequence[IndexedChunk]) -> None: ...

    @abstractmethod
    def delete_documents(self, doc_ids: Iterable[str]) -> int:
        """Remove every chunk of these documents; return how many chunks went."""

    @abstractmethod
    def search_keyword(
        self,
        query: str,
        k: int,
        flt: IndexFilter | None = None,
        *,
        statistics: Statistics | None = None,
    ) -> list[IndexHit]: ...

    def keyword_statistics(self, query: str, flt: IndexFilter | None = None) -> Statistics | None:
        """What keyword scoring counts for ``query`` over the chunks ``flt`` admits, to be
        summed with other indexes' and given back to :meth:`search_keyword`; ``None`` when this
        index scores with its own counts only."""
        return None

    @abstractmethod
    def search_vector(
        self, vector: npt.NDArray[np.float32], k: int, flt: IndexFilter | None = None
    ) -> list[IndexHit]: ...

    def admits_any(self, flt: IndexFilter) -> bool:
        """True when ``flt`` admits at least one document here (its ``access`` check
        included): whether a router may be told of this index's source."""
        return any(map(flt.admits, self.documents().values()))

    @abstractmethod
    def documents(self) -> dict[str, DocumentMeta]:
        """doc id -> what is indexed for it."""

    @abstractmethod
    def chunks_of(self, doc_id: str) -> list[IndexedChunk]:
        """The chunks of one document, in order."""

    @abstractmethod
    def count(self) -> int:
        """Chunks indexed."""

    @abstractmethod
    def clear(self) -> None:
        """Remove everything."""

    def replace_documents(self, doc_ids: Sequence[str], chunks: Sequence[IndexedChunk]) -> None:
        """Make ``chunks`` the whole content of ``doc_ids`` (derived: delete, then upsert)."""
        self.delete_documents(doc_ids)
        self.upsert(chunks)

    def replace_document(self, doc_id: str, chunks: Sequence[IndexedChunk]) -> None:
        """Make ``chunks`` the whole content of ``doc_id``."""
        self.replace_documents([doc_id], chunks)

    def refresh(self) -> bool:
        """Take in the writes other processes made since this index last looked; True when
        anything changed. Cheap when nothing did: the workspace calls it before every search."""
        return False

    def prepare(self) -> None:  # noqa: B027 (optional hook)
        """A bulk load ended (the workspace calls it after indexing many files): do now the
        work the first search would otherwise do (BM25 scores every term at once)."""

    def close(self) -> None:  # noqa: B027 (optional hook)
        """Release resources."""
