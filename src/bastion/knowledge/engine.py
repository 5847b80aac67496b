"""Knowledge: files in, searchable chunks out. Ingest, chunk, embed, index; then search.

:class:`Knowledge` is what a :class:`~bastion.Workspace` uses to keep its index in step with
its files and to answer ``search``. It knows nothing of principals: the workspace hands it a
filter that encodes who is asking, and the index applies that filter before ranking.
"""

from __future__ import annotations

import asyncio
import logging
import os
from collections.abc import Callable, Sequence
from dataclasses import replace
from pathlib import Path

from bastion.core.errors import ConfigurationError, OperationError, StoreError
from bastion.core.extras import needs
from bastion.core.models import Labels
from bastion.core.principal import Classifications
from bastion.knowledge.chunking import Chunker, ChunkingConfig
from bastion.knowledge.embedders.base import Embedder
from bastion.knowledge.index import fusion
from bastion.knowledge.index.hybrid import hybrid
from bastion.knowledge.index.memory import MemoryIndex
from bastion.knowledge.index.models import (
    IndexedChunk,
    IndexFilter,
    IndexHit,
    SearchMode,
)
from bastion.knowledge.index.port import Index
from bastion.knowledge.indexer import (
    STREAM_CHARS,
    FileToIndex,
    IndexProgress,
    Parsed,
    ProgressCallback,
    chunk_stream,
    chunk_whole,
    parse_files,
)
from bastion.knowledge.ingest import DEFAULT_LIMITS, IngestError, IngestLimits, stable_doc_id
from bastion.knowledge.ingest.detect import detect_type
from bastion.knowledge.relations import RelationGraph
from bastion.knowledge.routing import Router, route

__all__ = ["FileToIndex", "Fusion", "IndexProgress", "Knowledge", "ProgressCallback"]

Fusion = str
"""``"zscore"`` (the default), ``"rrf"`` or ``"weighted"`` (see
:mod:`bastion.knowledge.index.fusion`)."""


_log = logging.getLogger(__name__)

_MAX_K = 1 << 31
"""A larger ``k`` asks for every hit there is, as this one does (a database's LIMIT is a
64-bit integer: ``k = 10**30`` failed there as an index fault)."""

_CANDIDATES = 100
"""Each input of a hybrid search contributes its best this-many chunks (at least ``k``)."""


class Knowledge:
    """An index with the means to fill it (``chunker``, ``embedder``) and to query it.

    ``embedder=None`` makes a keyword-only knowledge base (``bm25`` search only).
    """

    def __init__(
        self,
        index: Index | None = None,
        *,
        embedder: Embedder | None = None,
        chunking: ChunkingConfig | None = None,
        chunker: Chunker | None = None,
        fusion: Fusion = "zscore",
        alpha: float = 0.5,
        limits: IngestLimits = DEFAULT_LIMITS,
        relations: RelationGraph | None = None,
        router: Router | None = None,
        stream_chars: int = STREAM_CHARS,
    ) -> None:
        if fusion not in ("zscore", "rrf", "weighted"):
            raise ConfigurationError(f"unknown fusion {fusion!r}; choose zscore, rrf or weighted")
        self.index = index if index is not None else MemoryIndex()
        self.embedder = embedder
        self.chunker = chunker or Chunker(chunking)
        self.fusion = fusion
        self.alpha = alpha
        self.limits = limits
        self.relations = relations if relations is not None else RelationGraph()
        self.router = router
        """Optional: picks the sources a query searches (``bastion.knowledge.routing``)."""
        self.stream_chars = stream_chars
        """A document whose clean text is longer is indexed a segment at a time."""

    @classmethod
    def open(
        cls,
        folder: str | os.PathLike[str],
        *,
        embedder: Embedder | str | None = "local",
        embedding_cache: str | os.PathLike[str] | None = None,
        partitioned: bool = True,
        index: str = "auto",
        **kwargs: object,
    ) -> Knowledge:
        """The embedded default: a LanceDB index in ``folder``, the packaged local model
        (``"local"``), vectors cached in ``embedding_cache`` (default
        ``folder/embeddings.sqlite``). ``partitioned`` keeps one table per tenant and source
        (``chunks__tenant_{t}__src_{s}``, see :mod:`bastion.knowledge.index.partitioned`).

        ``index``: ``"lancedb"`` (the extra), ``"sqlite"`` (the core: one SQLite file,
        :mod:`bastion.knowledge.index.sqlite`) or ``"auto"``: what the folder already holds,
        else LanceDB when it is installed, else SQLite."""
        from bastion.knowledge.embedders.cache import CachedEmbedder, EmbeddingCache
        from bastion.knowledge.index.sqlite import FILE_NAME

        root = Path(folder)
        kind = _index_kind(root, index, FILE_NAME)
        if kind == "lancedb":
            with needs("the LanceDB index ([knowledge] index = 'lancedb')"):
                import lancedb  # noqa: F401  # fail here, not at the first table

                from bastion.knowledge.index.lance import LanceIndex

        root.mkdir(parents=True, exist_ok=True)
        model: Embedder | None
        if embedder == "local":
            with needs("the local embedder (embedder = 'local')"):
                from bastion.knowledge.embedders.local import LocalEmbedder

                model = LocalEmbedder()
        elif isinstance(embedder, str):
            raise ConfigurationError(f"unknown embedder {embedder!r}; use 'local' or an Embedder")
        else:
            model = embedder
        if model is not None:
            cache_file = Path(embedding_cache or root / "embeddings.sqlite")
            cache_file.parent.mkdir(parents=True, exist_ok=True)
            model = CachedEmbedder(model, EmbeddingCache(cache_file))
        dim = model.dim if model is not None else None
        name = model.name if model is not None else None
        found: Index
        if kind == "sqlite":
            from bastion.knowledge.index.sqlite import SQLiteIndex

            found = SQLiteIndex(root / FILE_NAME, dim=dim, embedder=name)
        elif partitioned:
            from bastion.knowledge.index.partitioned import PartitionedIndex

            tables = root / "tables"
            tables.mkdir(exist_ok=True)

            def table(table: str) -> Index:
                return LanceIndex(tables / table, dim=dim, embedder=name)

            listed = _Tables(tables)
            found = PartitionedIndex(
                table,
                existing=_opened(table, _tables(tables)),
                discover=listed,
                announce=listed.announce,
                closing=listed.close,
            )
        else:
            found = LanceIndex(root / "lance", dim=dim, embedder=name)
        return cls(found, embedder=model, **kwargs)  # type: ignore[arg-type]

    @property
    def modes(self) -> tuple[SearchMode, ...]:
        if self.embedder is None:
            return (SearchMode.BM25,)
        return (SearchMode.BM25, SearchMode.VECTOR, SearchMode.HYBRID)

    # -- indexing ----------------------------------------------------------------------------

    @staticmethod
    def indexable(path: str, data: bytes) -> bool:
        """True when ``data`` is a type the ingest pipeline reads (text, Markdown, HTML, PDF,
        DOCX); images, archives and other binaries are not indexed."""
        return detect_type(data, path) != "application/octet-stream"

    async def index_file(
        self,
        path: str,
        data: bytes,
        *,
        labels: Labels | None = None,
        version: str | None = None,
        classifications: Classifications | None = None,
    ) -> int:
        """(Re)index one file; return its number of chunks. Raises an ``IngestError`` when
        the file cannot be parsed (its old chunks are removed first: never stale)."""
        [result] = await self.index_files(
            [FileToIndex(path, data, labels or Labels(), version)], classifications=classifications
        )
        if isinstance(result, BaseException):
            raise result
        return result

    async def index_files(
        self,
        files: Sequence[FileToIndex],
        *,
        classifications: Classifications | None = None,
        progress: ProgressCallback | None = None,
    ) -> list[int | IngestError]:
        """(Re)index many files at once: one parse-and-chunk pass in a worker thread, one
        embedding call (the model batches by length), one index write; a document over
        :data:`~bastion.knowledge.indexer.STREAM_CHARS` characters is chunked, embedded and
        written a segment at a time (searchable in part while the rest is on its way).
        ``progress`` is told after each index write (:class:`IndexProgress`). Per file: its
        chunk count, or the error that kept it out (its old chunks are removed either way)."""
        order = classifications or Classifications()
        results, parsed = await asyncio.to_thread(parse_files, files, order, self.limits)
        whole = [p for p in parsed if len(p.doc.text) <= self.stream_chars]
        chunked = await asyncio.to_thread(chunk_whole, self.chunker, whole)
        batch = [r for doc_records in chunked for r in doc_records]
        batch = await self._embedded(batch)
        streamed = {p.doc.doc_id for p in parsed if len(p.doc.text) > self.stream_chars}
        doc_ids = [i for i in dict.fromkeys(stable_doc_id(f.path) for f in files)]
        await asyncio.to_thread(
            self.index.replace_documents, [i for i in doc_ids if i not in streamed], batch
        )
        for p, doc_records in zip(whole, chunked, strict=True):
            results[p.index] = len(doc_records)
            if progress is not None:
                size = len(p.doc.text)
                progress(
                    IndexProgress(path=p.doc.path, chunks=len(doc_records), done=size, total=size)
                )
        for p in parsed:
            if len(p.doc.text) > self.stream_chars:
                results[p.index] = await self._index_stream(p, progress)
        for p in parsed:
            self.relations.set_document(p.doc.path, p.relations)
        for f, result in zip(files, results, strict=True):
            if isinstance(result, IngestError):
                self.relations.remove_document(str(f.path))
        return results

    async def _embedded(self, batch: list[IndexedChunk]) -> list[IndexedChunk]:
        if self.embedder is None or not batch:
            return batch
        vectors = await self.embedder.embed([r.text for r in batch])
        return [replace(r, vector=v) for r, v in zip(batch, vectors, strict=True)]

    async def _index_stream(self, doc: Parsed, progress: ProgressCallback | None) -> int:
        """Chunk, embed and write one large document a segment at a time; its old chunks go
        with the first write."""
        segments = chunk_stream(self.chunker, doc)
        count = 0
        first = True
        size = len(doc.doc.text)
        while (step := await asyncio.to_thread(next, segments, None)) is not None:
            batch = await self._embedded(step[0])
            if first:
                await asyncio.to_thread(self.index.replace_documents, [doc.doc.doc_id], batch)
                first = False
            elif batch:
                await asyncio.to_thread(self.index.upsert, batch)
            count += len(batch)
            if progress is not None and batch:
                progress(IndexProgress(path=doc.doc.path, chunks=count, done=step[1], total=size))
        if first:
            await asyncio.to_thread(self.index.replace_documents, [doc.doc.doc_id], [])
        if progress is not None:
            progress(IndexProgress(path=doc.doc.path, chunks=count, done=size, total=size))
        return count

    async def remove(self, path: str) -> bool:
        """Forget one file; True when it was indexed."""
        return await self.remove_many([path]) > 0

    async def remove_many(self, paths: Sequence[str]) -> int:
        """Forget these files in one index write; return how many chunks went."""
        if not paths:
            return 0
        ids = [stable_doc_id(p) for p in paths]
        removed = await asyncio.to_thread(self.index.delete_documents, ids)
        for path in paths:
            self.relations.remove_document(str(path))
        return removed

    # -- search ------------------------------------------------------------------------------

    async def search(
        self,
        query: str,
        *,
        mode: SearchMode | str = SearchMode.HYBRID,
        k: int = 10,
        flt: IndexFilter | None = None,
    ) -> list[IndexHit]:
        """The best ``k`` chunks for ``query`` among those ``flt`` admits."""
        chosen = SearchMode.parse(mode)
        if chosen is not SearchMode.BM25 and self.embedder is None:
            raise ConfigurationError(
                f"{chosen.value} search needs an embedder; this knowledge base is keyword-only "
                "(pass mode='bm25')"
            ).needing("mode", "bm25")
        if k <= 0 or not query.strip():
            return []
        k = min(k, _MAX_K)
        if self.router is not None and flt is not None:
            flt = await route(self.router, query, self.index, flt)
        # The index's own work (scoring, a table's files, a database) runs in a worker
        # thread: never on the event loop (issue 26).
        if chosen is SearchMode.BM25:
            return await asyncio.to_thread(self.index.search_keyword, query, k, flt)
        assert self.embedder is not None
        vector = (await self.embedder.embed([query]))[0]
        if chosen is SearchMode.VECTOR:
            return await asyncio.to_thread(self.index.search_vector, vector, k, flt)
        depth = max(k, _CANDIDATES)
        return await asyncio.to_thread(
            hybrid, self.index, query, vector, k=k, depth=depth, fuse=self.fuse, flt=flt
        )

    def fuse(self, keyword: Sequence[IndexHit], dense: Sequence[IndexHit]) -> list[IndexHit]:
        if self.fusion == "zscore":
            return fusion.zscore(keyword, dense)
        if self.fusion == "rrf":
            return fusion.rrf(keyword, dense)
        return fusion.weighted(keyword, dense, alpha=self.alpha)

    def close(self) -> None:
        self.index.close()


INDEX_KINDS = ("auto", "sqlite", "lancedb")
"""What ``Knowledge.open(index=)`` and ``[knowledge] index`` accept."""


def _index_kind(root: Path, asked: str, sqlite_file: str) -> str:
    """The index ``Knowledge.open`` makes in ``root``: the one asked for, else (``"auto"``)
    the one the folder holds, else LanceDB where it is installed, else SQLite (the core)."""
    if asked not in INDEX_KINDS:
        raise ConfigurationError(f"unknown index {asked!r}; choose {', '.join(INDEX_KINDS)}")
    if asked != "auto":
        return asked
    if (root / sqlite_file).exists():
        return "sqlite"
    if (root / "tables").is_dir() or (root / "lance").is_dir():
        return "lancedb"
    import importlib.util

    try:
        found = importlib.util.find_spec("lancedb")
    except ImportError:  # an import hook that refuses it: not installed, as far as we know
        found = None
    return "lancedb" if found is not None else "sqlite"


def _opened(table: Callable[[str], Index], names: Sequence[str]) -> dict[str, Index]:
    """The tables that open, by name; one that fails to (a broken table of one tenant) is
    left to the index's next look for new tables, which tries it again (and keeps its failure
    for the searches that read it): it never keeps the other tenants' tables from opening. A
    table built differently (another embedder) is a configuration error, raised as before."""
    opened: dict[str, Index] = {}
    for name in names:
        try:
            opened[name] = table(name)
        except OperationError as exc:  # a table of another embedder is still refused
            _log.warning("index table %s cannot be opened: %s", name, exc)
    return opened


def _tables(folder: Path) -> tuple[str, ...]:
    return tuple(p.name for p in sorted(folder.iterdir()) if p.is_dir())


class _Tables:
    """The table folders in ``folder``, listed again only when a table was announced since.

    Every search first looks for tables other processes made. A process that is about to
    write to a table for the first time appends its name to the folder's journal
    (:data:`_JOURNAL`, :meth:`announce`, called by :class:`PartitionedIndex`), before the
    write; a look reads one byte past the end of the journal as last seen (one ``pread``):
    nothing there, nothing new. The end is read before the folder is listed, so a table
    announced during a listing is listed at the next look. Cheaper than a ``stat`` of the
    folder (a path walk and a ``stat_result`` per search; measured in ``docs/decisions/``).
    A table made by a writer that does not announce (a version before the journal) is found
    when the index is opened again."""

    def __init__(self, folder: Path) -> None:
        self._folder = folder
        try:
            self._fd: int | None = os.open(
                folder / _JOURNAL, os.O_RDWR | os.O_CREAT | os.O_APPEND | os.O_CLOEXEC, 0o644
            )
        except OSError as exc:
            raise _failed("open", folder, exc) from exc
        self._end = -1
        """How far the journal had been read at the last listing (-1: never listed)."""
        self._names: tuple[str, ...] = ()

    def __call__(self) -> tuple[str, ...]:
        fd = self._fd
        if fd is None:
            return self._names
        if self._end >= 0 and not os.pread(fd, 1, self._end):
            return self._names  # the same tuple: PartitionedIndex skips its names
        end = os.fstat(fd).st_size  # before the listing: a later announcement is seen next
        self._names = _tables(self._folder)
        self._end = end
        return self._names

    def announce(self, name: str) -> None:
        """Tell every process's next look that table ``name`` is (about to be) written."""
        if self._fd is not None:
            try:  # O_APPEND: one whole line; no write to the table without it
                os.write(self._fd, name.encode("utf-8") + b"\n")
            except OSError as exc:
                raise _failed("write to", self._folder, exc) from exc

    def close(self) -> None:
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None


def _failed(what: str, folder: Path, exc: OSError) -> StoreError:
    return StoreError(
        f"cannot {what} the index tables in {folder.name} ({exc.strerror}); check the "
        "folder's disk and permissions"
    )


_JOURNAL = "tables.log"
"""The journal of the tables folder: names of tables announced, one a line (never a folder, so
never taken for a table)."""
