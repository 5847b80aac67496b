"""One index table per tenant and source, behind the same :class:`Index` port.

Documents of tenant ``t`` under source ``s`` (a path's first segment, usually a mount) live in
their own table, named ``chunks__tenant_{t}__src_{s}`` (documents bound to no tenant in
``chunks__tenant_shared__src_{s}``). A search visits only the tables its filter can admit:
the asker's tenant and the shared ones, narrowed by ``path_prefix`` and ``sources``. Another
tenant's table is never opened for a query, so one tenant's documents cannot appear in another
tenant's results even through a bug in a per-document check, and a tenant's data can be
dropped or moved as a unit.

Scores are merged by value. Vector scores (cosine) compare across tables as they are. BM25
scores are computed with statistics summed over every table the search visits, each table
counting only the documents the search's filter admits in it (never a hidden one): a file
that says a word eight times outranks one that says it once whichever tables they sit in,
and no score moves with documents the asker may not see. Tables that cannot share their
counts (:meth:`Index.keyword_statistics` is ``None``: PostgreSQL) score with their own.
"""

from __future__ import annotations

import functools
import hashlib
import heapq
import logging
import re
import threading
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence

import numpy as np
import numpy.typing as npt

from bastion.core.errors import (
    BastionError,
    ConfigurationError,
    StoreError,
    StoreUnavailableError,
)
from bastion.knowledge.index.bm25 import Statistics
from bastion.knowledge.index.models import (
    DocumentMeta,
    IndexedChunk,
    IndexFilter,
    IndexHit,
    source_of,
)
from bastion.knowledge.index.port import Index

__all__ = ["Partition", "PartitionedIndex", "table_name"]

Partition = tuple[str | None, str]
"""(tenant or ``None`` for shared documents, source)."""

_log = logging.getLogger(__name__)

_UNSAFE = re.compile(r"[^a-z0-9]+")
_NAME = re.compile(r"^chunks__tenant_[a-z0-9_]+__src_[a-z0-9_]+$")


def _slug(text: str, reserved: str) -> str:
    """``text`` as it is when it is already a plain name (``[a-z0-9]`` words joined by single
    ``_``, at most 40 characters) other than ``reserved``; else its reduction to such words,
    ``__`` and a 64-bit hash of the original. A plain name never holds ``__``, so the two
    forms never meet, and ``__src_`` (the separator) appears in neither: one name, one
    partition. ``reserved`` is the name of the part without a tenant (``shared``) or of the
    root source (``root``): a tenant or a mount called so is hashed."""
    slug = _UNSAFE.sub("_", text.casefold()).strip("_")
    if slug == text and len(slug) <= 40 and slug != reserved:
        return slug
    return f"{slug[:32]}__{hashlib.blake2b(text.encode(), digest_size=8).hexdigest()}"


@functools.lru_cache(maxsize=4096)  # every search names each table: two regex passes
def table_name(tenant: str | None, source: str) -> str:
    """``chunks__tenant_{t}__src_{s}`` with both parts reduced to ``[a-z0-9_]`` (a hash keeps
    names distinct when that loses information, see :func:`_slug`): no two partitions share
    a table. Tables named by an earlier rule are found by the documents they hold."""
    t = "shared" if tenant is None else _slug(tenant, "shared") or "_"
    s = _slug(source.strip("/"), "root") if source.strip("/") else "root"
    name = f"chunks__tenant_{t}__src_{s}"
    if not _NAME.match(name):
        raise ConfigurationError(f"cannot name an index table for tenant {tenant!r}")
    return name


class PartitionedIndex(Index):
    """Tables made on demand by ``factory(table_name)``; see the module docstring."""

    kind = "partitioned"

    def __init__(
        self,
        factory: Callable[[str], Index],
        *,
        existing: Mapping[str, Index] | Iterable[Index] = (),
        discover: Callable[[], Iterable[str]] | None = None,
        announce: Callable[[str], None] | None = None,
        closing: Callable[[], None] | None = None,
    ) -> None:
        self._factory = factory
        self._announce = announce
        """Told the name of a table this process is about to write to for the first time
        (before the write), so that other processes' ``discover`` lists it."""
        self._closing = closing
        """Called by :meth:`close` (what ``discover`` holds open)."""
        self._discover = discover
        """The names of the tables that exist now (other processes make new ones): read by
        :meth:`refresh`. A ``discover`` that answers with the same tuple as before says that
        nothing changed (the check of each name is skipped)."""
        self._listed: tuple[str, ...] | None = None
        """The last tuple ``discover`` gave: each of its names is a table here (a name, once
        known, stays known: tables are never dropped from ``_parts`` or ``_empty`` but to
        move from the second to the first)."""
        self._lock = threading.RLock()
        self._parts: dict[Partition, Index] = {}
        self._named: dict[Partition, str] = {}
        """The table name of each partition whose table was named when it came (a table made
        under an earlier naming rule keeps its name: see :meth:`_name`)."""
        self._where: dict[str, Partition] = {}
        self._empty: dict[str, Index] = {}
        """Tables found by ``discover`` that held no document yet (name -> index)."""
        self._broken: dict[str, BastionError] = {}
        """Tables (by name) that failed to open or to take in other processes' writes at the
        last :meth:`refresh`: a search that would read one fails (in words that name no
        table); every other search goes on. One tenant's broken table is none of another
        tenant's business: neither its failure nor its name reaches that tenant."""
        named = existing.items() if isinstance(existing, Mapping) else ((None, i) for i in existing)
        for name, index in named:  # tables found on disk: learn their partition from a document
            if not self._adopt(index, name):
                index.close()

    def _adopt(self, index: Index, name: str | None = None) -> bool:
        """Take a table found on disk (folder ``name``, when known) as its partition's
        (learnt from a document); False when it holds none."""
        docs = index.documents()
        if not docs:
            return False
        meta = next(iter(docs.values()))
        key = (meta.tenant, source_of(meta.path))
        self._parts[key] = index
        if name is not None:
            self._named[key] = name
        for doc_id in docs:
            self._where[doc_id] = key
        return True

    def refresh(self) -> bool:
        """Each table takes in other processes' writes; tables they made are opened; the
        document -> partition map is made again when anything changed."""
        with self._lock:
            changed = False
            for key, index in self._parts.items():  # a table's refresh leaves these dicts alone
                try:
                    changed = index.refresh() or changed
                except BastionError as exc:
                    self._fail(self._name(key), exc)
                else:
                    if self._broken:
                        self._broken.pop(self._name(key), None)
            for name, index in self._empty.items():
                try:
                    changed = index.refresh() or changed
                except BastionError as exc:
                    self._fail(name, exc)
                else:
                    self._broken.pop(name, None)
            if self._discover is not None:
                names = self._discover()
                if names is not self._listed:  # a tuple seen before holds no new table
                    known = {self._name(key) for key in self._parts} | set(self._empty)
                    complete = isinstance(names, tuple)
                    for name in names:
                        if name not in known:
                            try:
                                self._empty[name] = self._factory(name)
                            except BastionError as exc:  # tried again at the next refresh
                                self._fail(name, exc)
                                complete = False
                                continue
                            self._broken.pop(name, None)
                            changed = True
                    self._listed = names if complete and isinstance(names, tuple) else None
            if not changed:
                return False
            for name, index in list(self._empty.items()):
                if index.documents():
                    del self._empty[name]
                    self._adopt(index, name)
            self._where = {
                doc_id: key for key, index in self._parts.items() for doc_id in index.documents()
            }
            return True

    def _name(self, key: Partition) -> str:
        """The name of the table of ``key``: as it was found, else :func:`table_name`."""
        return self._named.get(key) or table_name(*key)

    def _fail(self, name: str, exc: BastionError) -> None:
        """Keep ``exc`` for the searches that read table ``name`` (logged once)."""
        if name not in self._broken:
            _log.warning("index table %s cannot be refreshed: %s", name, exc)
        self._broken[name] = exc

    # -- routing -----------------------------------------------------------------------------

    def partitions(self, flt: IndexFilter | None = None) -> list[Partition]:
        """The partitions a search with ``flt`` may visit (all of them without a filter)."""
        with self._lock:
            return [key for key in self._parts if _may_hold(key, flt)]

    def sources_admitted(self, flt: IndexFilter) -> list[str]:
        """The sources holding at least one document ``flt`` admits, its ``access`` check
        included (what a router may be shown): a table whose every document is hidden from
        the asker is as if it did not exist."""
        with self._lock:
            targets = [(key[1], index) for key, index in self._parts.items() if _may_hold(key, flt)]
        found: set[str] = set()
        for source, index in targets:
            if source not in found and index.admits_any(flt):
                found.add(source)
        return sorted(found)

    def tables(self, flt: IndexFilter | None = None) -> list[str]:
        with self._lock:
            return [self._name(key) for key in self._parts if _may_hold(key, flt)]

    def _targets(self, flt: IndexFilter | None) -> list[Index]:
        """The tables a search with ``flt`` reads; :class:`StoreError` (naming none) when one
        of them failed its last refresh."""
        with self._lock:
            if self._broken:
                for key in self._parts:
                    failed = self._broken.get(self._name(key))
                    if failed is not None and _may_hold(key, flt):
                        raise _unnamed(failed) from failed
            return [index for key, index in self._parts.items() if _may_hold(key, flt)]

    def _part(self, key: Partition) -> Index:
        """The table of ``key``, to write to: one this process has not written to yet (made
        now, or found empty) is announced first (a writer that died before its first write
        left an empty table nobody was told of: its next writer announces it)."""
        index = self._parts.get(key)
        if index is None:
            name = table_name(*key)
            found = self._empty.pop(name, None)
            index = found if found is not None else self._factory(name)  # made, then told
            if self._announce is not None:
                try:
                    self._announce(name)
                except BaseException:
                    self._empty[name] = index  # not written to: the next write tells again
                    raise
            self._parts[key] = index
        return index

    # -- writes ------------------------------------------------------------------------------

    def upsert(self, chunks: Sequence[IndexedChunk]) -> None:
        with self._lock:
            groups: dict[Partition, list[IndexedChunk]] = {}
            for chunk in chunks:
                key = (chunk.doc.tenant, source_of(chunk.doc.path))
                old = self._where.get(chunk.doc.doc_id)
                if old is not None and old != key:  # relabelled to another tenant: move it
                    self._parts[old].delete_documents([chunk.doc.doc_id])
                groups.setdefault(key, []).append(chunk)
            for key, group in groups.items():
                self._part(key).upsert(group)
                for chunk in group:
                    self._where[chunk.doc.doc_id] = key

    def replace_documents(self, doc_ids: Sequence[str], chunks: Sequence[IndexedChunk]) -> None:
        """Each table touched replaces its part in one call (atomic per table): tables that
        receive chunks first, so a refused batch leaves the old chunks where they were."""
        with self._lock:
            incoming: dict[Partition, list[IndexedChunk]] = {}
            for chunk in chunks:
                incoming.setdefault((chunk.doc.tenant, source_of(chunk.doc.path)), []).append(chunk)
            moved_to = {c.doc.doc_id: key for key, group in incoming.items() for c in group}
            ids = list(dict.fromkeys([*doc_ids, *moved_to]))
            old = {doc_id: self._where.get(doc_id) for doc_id in ids}
            for key, group in incoming.items():
                mine = [d for d in ids if moved_to.get(d) == key or old[d] == key]
                self._part(key).replace_documents(mine, group)
            for key in {k for k in old.values() if k is not None} - set(incoming):
                self._parts[key].delete_documents([d for d in ids if old[d] == key])
            for doc_id in ids:
                target = moved_to.get(doc_id)
                was = old[doc_id]
                if target is None:
                    self._where.pop(doc_id, None)
                else:
                    if was is not None and was != target:
                        self._parts[was].delete_documents([doc_id])
                    self._where[doc_id] = target

    def delete_documents(self, doc_ids: Iterable[str]) -> int:
        with self._lock:
            groups: dict[Partition, list[str]] = {}
            for doc_id in doc_ids:
                key = self._where.pop(doc_id, None)
                if key is not None:
                    groups.setdefault(key, []).append(doc_id)
            return sum(self._parts[key].delete_documents(ids) for key, ids in groups.items())

    def clear(self) -> None:
        with self._lock:
            for index in self._parts.values():
                index.clear()
            self._where.clear()

    def prepare(self) -> None:
        with self._lock:
            parts = list(self._parts.values())
        for index in parts:
            index.prepare()

    def close(self) -> None:
        with self._lock:
            for index in [*self._parts.values(), *self._empty.values()]:
                index.close()
            if self._closing is not None:
                self._closing()

    # -- reads -------------------------------------------------------------------------------

    def search_keyword(
        self,
        query: str,
        k: int,
        flt: IndexFilter | None = None,
        *,
        statistics: Statistics | None = None,
    ) -> list[IndexHit]:
        targets = self._targets(flt)
        try:
            if statistics is None and len(targets) > 1:
                statistics = _summed(index.keyword_statistics(query, flt) for index in targets)
            return _best(
                k,
                (index.search_keyword(query, k, flt, statistics=statistics) for index in targets),
            )
        except StoreError as exc:
            raise _unnamed(exc) from exc

    def keyword_statistics(self, query: str, flt: IndexFilter | None = None) -> Statistics | None:
        targets = self._targets(flt)
        try:
            return _summed(index.keyword_statistics(query, flt) for index in targets)
        except StoreError as exc:
            raise _unnamed(exc) from exc

    def search_vector(
        self, vector: npt.NDArray[np.float32], k: int, flt: IndexFilter | None = None
    ) -> list[IndexHit]:
        targets = self._targets(flt)
        try:
            return _best(k, (index.search_vector(vector, k, flt) for index in targets))
        except StoreError as exc:
            raise _unnamed(exc) from exc

    def documents(self) -> dict[str, DocumentMeta]:
        with self._lock:
            out: dict[str, DocumentMeta] = {}
            for index in self._parts.values():
                out.update(index.documents())
            return out

    def chunks_of(self, doc_id: str) -> list[IndexedChunk]:
        with self._lock:
            key = self._where.get(doc_id)
            if key is None:
                return []
            try:
                return self._parts[key].chunks_of(doc_id)
            except StoreError as exc:
                raise _unnamed(exc) from exc

    def count(self) -> int:
        with self._lock:
            return sum(index.count() for index in self._parts.values())


def _unnamed(exc: BastionError) -> StoreError:
    """A table's failure in words that name no table (a table's name tells its tenant and
    source): the asker learns that its search failed, not where."""
    kind = StoreUnavailableError if isinstance(exc, StoreUnavailableError) else StoreError
    return kind(
        f"the search index failed ({type(exc).__name__}); retry, or rebuild the index if it "
        "keeps failing"
    )


def _may_hold(key: Partition, flt: IndexFilter | None) -> bool:
    """Could a document of partition ``key`` pass ``flt``? (Shared documents pass any tenant.)"""
    if flt is None:
        return True
    tenant, source = key
    if flt.tenant is not None and tenant not in (None, flt.tenant):
        return False
    if flt.sources is not None and source not in flt.sources:
        return False
    prefix = (flt.path_prefix or "").rstrip("/")
    if prefix and source != "/":
        return (
            source == prefix or prefix.startswith(source + "/") or source.startswith(prefix + "/")
        )
    return True


def _summed(counts: Iterable[Statistics | None]) -> Statistics | None:
    """The sum, or ``None`` when any table keeps its counts to itself."""
    total = Statistics(0, 0.0, {})
    for found in counts:
        if found is None:
            return None
        total = total + found
    return total


def _best(k: int, lists: Iterator[list[IndexHit]] | Iterable[list[IndexHit]]) -> list[IndexHit]:
    hits = [hit for found in lists for hit in found]
    return heapq.nlargest(k, hits, key=lambda hit: hit.score)
