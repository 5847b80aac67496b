"""Knowledge: files in, searchable chunks out. Ingest, chunk, embed, index; then search.

:class:`Knowledge` is what a :class:`~bastion.Workspace` uses to keep its index in step with
its files and to answer ``search``. It knows nothing of principals: the workspace hands it a
filter that encodes who is asking, and the index applies that filter before ranking.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from bastion.core.errors import ConfigurationError
from bastion.core.models import Labels
from bastion.core.principal import Classifications
from bastion.knowledge.chunking import Chunker, ChunkingConfig
from bastion.knowledge.embedders.base import Embedder
from bastion.knowledge.index import fusion
from bastion.knowledge.index.memory import MemoryIndex
from bastion.knowledge.index.models import (
    DocumentMeta,
    IndexedChunk,
    IndexFilter,
    IndexHit,
    SearchMode,
)
from bastion.knowledge.index.port import Index
from bastion.knowledge.ingest import (
    DEFAULT_LIMITS,
    IngestError,
    IngestLimits,
    ParsedDocument,
    parse_document,
    stable_doc_id,
)
from bastion.knowledge.ingest.detect import detect_type
from bastion.knowledge.ingest.frontmatter import LABEL_BYTES
from bastion.knowledge.labels import resolve_labels
from bastion.knowledge.linemap import line_map
from bastion.knowledge.relations import RelationGraph, extract_relations
from bastion.knowledge.routing import Router, route

__all__ = ["FileToIndex", "Fusion", "Knowledge"]

Fusion = str
"""``"rrf"`` or ``"weighted"`` (see :mod:`bastion.knowledge.index.fusion`)."""


@dataclass(frozen=True, slots=True)
class FileToIndex:
    """One file handed to :meth:`Knowledge.index_files`."""

    path: str
    data: bytes
    labels: Labels = field(default_factory=Labels)
    version: str | None = None
    resolved: bool = False
    """``labels`` are already the document's effective labels, as the workspace's read path
    worked them out from these bytes: the index takes them as they are (one computation, and
    the index cannot disagree with the readers)."""


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
        fusion: Fusion = "weighted",
        alpha: float = 0.5,
        limits: IngestLimits = DEFAULT_LIMITS,
        relations: RelationGraph | None = None,
        router: Router | None = None,
    ) -> None:
        if fusion not in ("rrf", "weighted"):
            raise ConfigurationError(f"unknown fusion {fusion!r}; choose rrf or weighted")
        self.index = index if index is not None else MemoryIndex()
        self.embedder = embedder
        self.chunker = chunker or Chunker(chunking)
        self.fusion = fusion
        self.alpha = alpha
        self.limits = limits
        self.relations = relations if relations is not None else RelationGraph()
        self.router = router
        """Optional: picks the sources a query searches (``bastion.knowledge.routing``)."""

    @classmethod
    def open(
        cls,
        folder: str | os.PathLike[str],
        *,
        embedder: Embedder | str | None = "local",
        embedding_cache: str | os.PathLike[str] | None = None,
        partitioned: bool = True,
        **kwargs: object,
    ) -> Knowledge:
        """The embedded default: a LanceDB index in ``folder``, the packaged local model
        (``"local"``), vectors cached in ``embedding_cache`` (default
        ``folder/embeddings.sqlite``). ``partitioned`` keeps one table per tenant and source
        (``chunks__tenant_{t}__src_{s}``, see :mod:`bastion.knowledge.index.partitioned`)."""
        from bastion.knowledge.embedders.cache import CachedEmbedder, EmbeddingCache
        from bastion.knowledge.index.lance import LanceIndex

        root = Path(folder)
        root.mkdir(parents=True, exist_ok=True)
        model: Embedder | None
        if embedder == "local":
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
        index: Index
        if partitioned:
            from bastion.knowledge.index.partitioned import PartitionedIndex

            tables = root / "tables"
            tables.mkdir(exist_ok=True)

            def table(table: str) -> Index:
                return LanceIndex(tables / table, dim=dim, embedder=name)

            def names() -> list[str]:
                return [p.name for p in sorted(tables.iterdir()) if p.is_dir()]

            index = PartitionedIndex(table, existing=[table(n) for n in names()], discover=names)
        else:
            index = LanceIndex(root / "lance", dim=dim, embedder=name)
        return cls(index, embedder=model, **kwargs)  # type: ignore[arg-type]

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
    ) -> list[int | IngestError]:
        """(Re)index many files at once: one chunking pass, one embedding call (the model
        batches by length), one index write. Per file: its chunk count, or the error that
        kept it out (its old chunks are removed either way)."""
        order = classifications or Classifications()
        results: list[int | IngestError] = []
        parsed: list[tuple[int, ParsedDocument, DocumentMeta]] = []
        for i, item in enumerate(files):
            # The one resolver, over the same bytes the readers see: labels are never taken
            # from what a format parser extracted (HTML or PDF metadata), so the index cannot
            # disagree with read and grep.
            final = (
                item.labels
                if item.resolved
                else resolve_labels(
                    item.labels, order, head=item.data[:LABEL_BYTES], where=item.path
                )
            )
            if final.undetermined:
                results.append(IngestError(f"{item.path}: labels cannot be determined"))
                continue
            try:
                doc = await asyncio.to_thread(  # off the loop: bounded, but can take a while
                    parse_document, item.data, item.path, limits=self.limits
                )
            except IngestError as exc:
                results.append(exc)
                continue
            results.append(0)
            meta = DocumentMeta(
                doc_id=doc.doc_id,
                path=doc.path,
                title=doc.title,
                date=doc.date,
                tenant=final.tenant,
                classification=final.classification,
                roles=final.roles,
                tags=final.tags,
                version=item.version,
            )
            parsed.append((i, doc, meta))
        chunked = await asyncio.to_thread(
            self.chunker.chunk_many,
            [d.text for _, d, _ in parsed],
            [d.doc_id for _, d, _ in parsed],
            [d.headings for _, d, _ in parsed],
        )
        texts = [c.text for chunks in chunked for c in chunks]
        vectors = None
        if self.embedder is not None and texts:
            vectors = await self.embedder.embed(texts)
        records: list[IndexedChunk] = []
        row = 0
        for (i, doc, meta), chunks in zip(parsed, chunked, strict=True):
            results[i] = len(chunks)
            lines = _source_lines(doc, files[i].data)
            for c in chunks:
                records.append(
                    IndexedChunk(
                        chunk_id=c.chunk_id,
                        doc=meta,
                        seq=c.seq,
                        text=c.text,
                        start_line=lines[c.start_line - 1] if lines else c.start_line,
                        end_line=lines[c.end_line - 1] if lines else c.end_line,
                        section=c.section,
                        vector=None if vectors is None else vectors[row],
                    )
                )
                row += 1
        doc_ids = [stable_doc_id(f.path) for f in files]
        await asyncio.to_thread(self.index.replace_documents, doc_ids, records)
        for _, doc, _ in parsed:
            found = await asyncio.to_thread(extract_relations, doc.path, doc.text, doc.metadata)
            self.relations.set_document(doc.path, found)
        for f, result in zip(files, results, strict=True):
            if isinstance(result, IngestError):
                self.relations.remove_document(str(f.path))
        return results

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
                "(use mode='bm25')"
            )
        if k <= 0 or not query.strip():
            return []
        if self.router is not None and flt is not None:
            flt = await route(self.router, query, self.index, flt)
        if chosen is SearchMode.BM25:
            return self.index.search_keyword(query, k, flt)
        assert self.embedder is not None
        vector = (await self.embedder.embed([query]))[0]
        if chosen is SearchMode.VECTOR:
            return self.index.search_vector(vector, k, flt)
        depth = max(k, _CANDIDATES)
        keyword = self.index.search_keyword(query, depth, flt)
        dense = self.index.search_vector(vector, depth, flt)
        return self.fuse(keyword, dense)[:k]

    def fuse(self, keyword: Sequence[IndexHit], dense: Sequence[IndexHit]) -> list[IndexHit]:
        if self.fusion == "rrf":
            return fusion.rrf(keyword, dense)
        return fusion.weighted(keyword, dense, alpha=self.alpha)

    def close(self) -> None:
        self.index.close()


_TEXT_TYPES = ("text/markdown", "text/plain")


def _source_lines(doc: ParsedDocument, data: bytes) -> list[int] | None:
    """Clean-text line -> file line, for formats whose file lines mean something."""
    if doc.mime not in _TEXT_TYPES:
        return None
    source = data.decode("utf-8", "replace").replace("\r\n", "\n").replace("\r", "\n")
    return line_map(source, doc.text)
