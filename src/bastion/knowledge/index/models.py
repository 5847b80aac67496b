"""Records of the index: what goes in (a chunk with its labels and vector), how a search is
narrowed (a filter), and what comes out (hits)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from enum import StrEnum
from typing import NamedTuple

import numpy as np
import numpy.typing as npt

from bastion.core.errors import ConfigurationError
from bastion.core.models import Labels

__all__ = [
    "DocumentMeta",
    "IndexFilter",
    "IndexHit",
    "IndexedChunk",
    "SearchMode",
    "searchable_text",
    "source_of",
]


def source_of(path: str) -> str:
    """The source a document belongs to: its path's first segment (``/hr/a.md`` -> ``/hr``;
    ``/a.md`` -> ``/``), usually a mount. Indexes may keep each tenant's sources in separate
    tables."""
    end = path.find("/", 1)
    return "/" if end < 0 else path[:end]


class SearchMode(StrEnum):
    BM25 = "bm25"
    VECTOR = "vector"
    HYBRID = "hybrid"

    @classmethod
    def parse(cls, value: str | SearchMode) -> SearchMode:
        try:
            return cls(value)
        except ValueError:
            raise ConfigurationError(
                f"unknown search mode {value!r}; choose bm25, vector or hybrid"
            ) from None


@dataclass(frozen=True, kw_only=True, slots=True)
class DocumentMeta:
    """What the index knows of a document as a whole: where it is and how it is labelled.
    Every chunk of the document carries these labels."""

    doc_id: str
    path: str
    """Workspace path (``/docs/a.md``)."""
    title: str | None = None
    date: str | None = None
    """ISO 8601 date of the document, when known."""
    tenant: str | None = None
    classification: str = "public"
    roles: frozenset[str] = frozenset()
    """Roles allowed to read; empty means every role."""
    tags: frozenset[str] = frozenset()
    version: str | None = None
    """The file version the chunks were made from (to notice a stale index)."""
    labels: Labels = field(init=False, repr=False, compare=False)
    """The access labels as one record (derived from the fields above)."""
    _hash: int = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        # Every search hashes the metadata of each hit (memoized access answers, labels):
        # compute the hash and the labels once, since the record never changes.
        labels = Labels(self.tenant, self.classification, self.roles, self.tags)
        object.__setattr__(self, "labels", labels)
        key = (self.doc_id, self.path, self.title, self.date, labels, self.version)
        object.__setattr__(self, "_hash", hash(key))

    def __hash__(self) -> int:
        return self._hash


@dataclass(frozen=True, kw_only=True, slots=True)
class IndexedChunk:
    """One chunk as stored in an index."""

    chunk_id: str
    doc: DocumentMeta
    seq: int
    text: str
    start_line: int
    end_line: int
    section: str = ""
    vector: npt.NDArray[np.float32] | None = field(default=None, compare=False, repr=False)


def searchable_text(chunk: IndexedChunk) -> str:
    """What keyword search indexes (in every index): the chunk, preceded by its heading path
    when the chunk does not open with it (a chunk deep in a section still matches the
    section's name)."""
    section = chunk.section.rsplit(" > ", 1)[-1] if chunk.section else ""
    if section and section not in chunk.text[: len(section) + 8]:
        return f"{chunk.section}\n{chunk.text}"
    return chunk.text


AccessCheck = Callable[[DocumentMeta], bool]


@dataclass(frozen=True, kw_only=True, slots=True)
class IndexFilter:
    """Conditions every hit satisfies; evaluated inside the index, before ranking, so ``k``
    results are ``k`` results that pass. ``None`` or empty means no condition."""

    path_prefix: str | None = None
    """Only documents at or under this workspace path (per segment: ``/docs`` not ``/docs2``)."""
    doc_ids: frozenset[str] | None = None
    tenant: str | None = None
    """Only documents of this tenant (documents bound to no tenant pass)."""
    classifications: frozenset[str] | None = None
    """Only these classifications."""
    roles: frozenset[str] | None = None
    """The asker's roles: a document passes when it allows every role or one of these."""
    tags: frozenset[str] = frozenset()
    """Only documents carrying every one of these tags."""
    sources: frozenset[str] | None = None
    """Only documents of these sources (see :func:`source_of`: a path's first segment)."""
    section: str | None = None
    """Only chunks whose heading path starts with this (case-insensitive)."""
    date_from: str | None = None
    date_to: str | None = None
    """Only documents dated in ``[date_from, date_to]`` (ISO strings; undated ones fail)."""
    access: AccessCheck | None = field(default=None, compare=False, hash=False)
    """A final per-document check (the guard's path policy), cached per ``access_key``."""
    access_key: object = None
    """Identifies ``access`` for caching; two filters with equal keys must check alike."""

    def admits(self, doc: DocumentMeta) -> bool:
        """The document-level part of the filter (everything but ``section``)."""
        if self.path_prefix is not None and self.path_prefix not in ("", "/"):
            prefix = self.path_prefix.rstrip("/")
            if doc.path != prefix and not doc.path.startswith(prefix + "/"):
                return False
        if self.doc_ids is not None and doc.doc_id not in self.doc_ids:
            return False
        if self.tenant is not None and doc.tenant not in (None, self.tenant):
            return False
        if self.classifications is not None and doc.classification not in self.classifications:
            return False
        if self.roles is not None and doc.roles and not (doc.roles & self.roles):
            return False
        if self.tags and not self.tags <= doc.tags:
            return False
        if self.sources is not None and source_of(doc.path) not in self.sources:
            return False
        if self.date_from is not None or self.date_to is not None:
            if doc.date is None:
                return False
            if self.date_from is not None and doc.date[: len(self.date_from)] < self.date_from:
                return False
            if self.date_to is not None and doc.date[: len(self.date_to)] > self.date_to:
                return False
        return self.access is None or self.access(doc)

    def admits_section(self, section: str) -> bool:
        return self.section is None or section.casefold().startswith(self.section.casefold())


class IndexHit(NamedTuple):
    """A chunk and its score for one query (higher is better; scales differ by mode).

    A named tuple, not a frozen dataclass: a search makes one per hit (100 at ``k=100``),
    and a tuple is made in half the time (``docs/decisions/``)."""

    chunk: IndexedChunk
    score: float
