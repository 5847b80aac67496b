"""Files to index records: labels, parse, chunk, line numbers; large documents as a stream.

:meth:`Knowledge.index_files <bastion.knowledge.engine.Knowledge.index_files>` runs these
steps. A batch of ordinary files is parsed, chunked and mapped to records in one worker-thread
call (one hop, not one per file: on a loaded machine each hop costs a context switch), then
embedded in one call and written in one index write. A document whose clean text is longer
than ``Knowledge.stream_chars`` (:data:`STREAM_CHARS`) is chunked a segment at a time
(``Chunker.chunk_stream``), each segment's chunks embedded and written before the next is
made, so memory stays bounded and the caller hears of each step through an
:class:`IndexProgress` callback.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field

from bastion.core.models import Labels
from bastion.core.principal import Classifications
from bastion.knowledge.chunking import Chunk, Chunker
from bastion.knowledge.index.models import DocumentMeta, IndexedChunk
from bastion.knowledge.ingest import IngestError, IngestLimits, ParsedDocument, parse_document
from bastion.knowledge.linemap import line_map
from bastion.knowledge.relations import Relation, extract_relations
from bastion.labels.frontmatter import LABEL_BYTES
from bastion.labels.resolve import resolve_labels

__all__ = ["STREAM_CHARS", "FileToIndex", "IndexProgress", "Parsed", "ProgressCallback"]

STREAM_CHARS = 1 << 20
"""By default, a document whose clean text is longer than this (1 Mi characters) is indexed
as a stream of segments; shorter ones are chunked whole, in one batch with the other files
(``Knowledge(stream_chars=...)``)."""


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


@dataclass(frozen=True, kw_only=True, slots=True)
class IndexProgress:
    """Told after each write of chunks to the index (once per file for ordinary files, once
    per segment of a large one)."""

    path: str
    chunks: int
    """Chunks of this file in the index so far."""
    done: int
    """Characters of the file's clean text chunked so far."""
    total: int
    """Characters of the file's clean text."""

    @property
    def finished(self) -> bool:
        return self.done >= self.total


ProgressCallback = Callable[[IndexProgress], None]


@dataclass(slots=True)
class Parsed:
    """A file that parsed: its position in the batch, document, metadata and line map."""

    index: int
    doc: ParsedDocument
    meta: DocumentMeta
    lines: Sequence[int] | None
    """Clean-text line -> file line, or ``None`` when they are the same (or meaningless)."""
    relations: tuple[Relation, ...]
    """Its outgoing relations (found with the parse, before the index grows: the extraction
    copies a large text once more)."""


def parse_files(
    files: Sequence[FileToIndex], order: Classifications, limits: IngestLimits
) -> tuple[list[int | IngestError], list[Parsed]]:
    """Labels and parse of every file: per file 0 (to be counted) or the error that keeps it
    out, and the files that parsed."""
    results: list[int | IngestError] = []
    parsed: list[Parsed] = []
    for i, item in enumerate(files):
        # The one resolver, over the same bytes the readers see: labels are never taken from
        # what a format parser extracted (HTML or PDF metadata), so the index cannot disagree
        # with read and grep.
        final = (
            item.labels
            if item.resolved
            else resolve_labels(item.labels, order, head=item.data[:LABEL_BYTES], where=item.path)
        )
        if final.undetermined:
            results.append(IngestError(f"{item.path}: labels cannot be determined"))
            continue
        try:
            doc = parse_document(item.data, item.path, limits=limits)
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
        lines = source_lines(doc, item.data)
        parsed.append(
            Parsed(i, doc, meta, lines, extract_relations(doc.path, doc.text, doc.metadata))
        )
    return results, parsed


def chunk_whole(chunker: Chunker, docs: Sequence[Parsed]) -> list[list[IndexedChunk]]:
    """The records of ordinary documents, chunked in one batch (no vectors yet)."""
    chunked = chunker.chunk_many(
        [p.doc.text for p in docs], [p.doc.doc_id for p in docs], [p.doc.headings for p in docs]
    )
    return [records(p, chunks) for p, chunks in zip(docs, chunked, strict=True)]


def chunk_stream(chunker: Chunker, doc: Parsed) -> Iterator[tuple[list[IndexedChunk], int]]:
    """The records of one large document, a segment at a time, each with how many characters
    of the text are chunked by then."""
    done = 0
    for chunks in chunker.chunk_stream(doc.doc.text, doc.doc.doc_id, headings=doc.doc.headings):
        done = chunks[-1].char_end if chunks else done
        yield records(doc, chunks), done


def records(doc: Parsed, chunks: Sequence[Chunk]) -> list[IndexedChunk]:
    lines = doc.lines
    return [
        IndexedChunk(
            chunk_id=c.chunk_id,
            doc=doc.meta,
            seq=c.seq,
            text=c.text,
            start_line=lines[c.start_line - 1] if lines else c.start_line,
            end_line=lines[c.end_line - 1] if lines else c.end_line,
            section=c.section,
        )
        for c in chunks
    ]


_TEXT_TYPES = ("text/markdown", "text/plain")


def source_lines(doc: ParsedDocument, data: bytes) -> Sequence[int] | None:
    """Clean-text line -> file line, for formats whose file lines mean something; ``None``
    where the clean text is the file's text (then each line is itself: the common case,
    answered without splitting either text into lines)."""
    if doc.mime not in _TEXT_TYPES:
        return None
    source = data.decode("utf-8", "replace")
    if "\r" in source:
        source = source.replace("\r\n", "\n").replace("\r", "\n")
    clean = doc.text
    if source.startswith(clean) and not source[len(clean) :].strip():
        return None
    return line_map(source, clean)
