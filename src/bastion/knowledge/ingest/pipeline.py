"""Bytes in, a clean structured document out: detect -> parse -> clean -> metadata."""

from __future__ import annotations

from collections.abc import Iterable

from bastion.core.errors import InvalidPathError
from bastion.core.paths import VPath
from bastion.knowledge.ingest.clean import clean_text
from bastion.knowledge.ingest.detect import PDF, SUPPORTED, detect_type, normalize_mime
from bastion.knowledge.ingest.errors import (
    DocumentTooLargeError,
    EmptyDocumentError,
    IngestError,
    UnsupportedTypeError,
)
from bastion.knowledge.ingest.formats import PARSERS
from bastion.knowledge.ingest.metadata import iso_date, markdown_headings, stable_doc_id
from bastion.knowledge.ingest.models import (
    DEFAULT_LIMITS,
    BatchResult,
    IngestLimits,
    ParsedDocument,
    SkippedDocument,
)

__all__ = ["ingest_many", "parse_document"]

_SUPPORTED_NAMES = "Markdown, plain text (UTF-8), HTML, PDF or DOCX"


def parse_document(
    data: bytes,
    path: str,
    mime: str | None = None,
    *,
    limits: IngestLimits = DEFAULT_LIMITS,
) -> ParsedDocument:
    """Parse ``data`` (the file at workspace ``path``) into a :class:`ParsedDocument`.

    ``mime`` overrides detection (:func:`detect_type`). Raises an :class:`IngestError` subclass
    (or ``InvalidPathError`` for a bad path); messages name the path, never the content.
    """
    where = str(VPath.parse(path))
    if len(data) > limits.max_bytes:
        raise DocumentTooLargeError(
            f"{where} is {_size(len(data))}, over the {_size(limits.max_bytes)} ingest limit; "
            "split the file or raise IngestLimits.max_bytes"
        )
    if not data:
        raise EmptyDocumentError(f"{where} is empty; write some text into it first")
    kind = normalize_mime(mime) if mime else detect_type(data, where)
    parser = PARSERS.get(kind)
    if parser is None or kind not in SUPPORTED:
        raise UnsupportedTypeError(
            f"{where}: {kind} files cannot be ingested; convert the file to {_SUPPORTED_NAMES}"
        )
    extraction = parser(data, where, limits)
    text = clean_text(extraction.text, keep_indent=extraction.keep_indent)
    if not text:
        raise EmptyDocumentError(
            f"{where} has no text once parsed ({kind}); a scanned PDF needs OCR first"
            if kind == PDF
            else f"{where} has no text once parsed ({kind}); nothing to index"
        )
    headings = markdown_headings(text) if extraction.structured else ()
    title = _one_line(extraction.title) or next((h.text for h in headings if h.level == 1), None)
    return ParsedDocument(
        path=where,
        doc_id=stable_doc_id(where),
        mime=kind,
        text=text,
        title=title,
        author=_one_line(extraction.author),
        date=iso_date(extraction.date),
        headings=headings,
        keywords=tuple(k for k in map(_one_line, extraction.keywords) if k),
        metadata=dict(extraction.metadata),
    )


def ingest_many(
    items: Iterable[tuple[str, bytes]], *, limits: IngestLimits = DEFAULT_LIMITS
) -> BatchResult:
    """Parse every ``(path, data)``; a document that fails is skipped with its reason.

    Only ingest failures (:class:`IngestError`, ``InvalidPathError``) are skipped; anything else
    is a bug and propagates.
    """
    documents: list[ParsedDocument] = []
    skipped: list[SkippedDocument] = []
    for path, data in items:
        try:
            documents.append(parse_document(data, path, limits=limits))
        except (IngestError, InvalidPathError) as exc:
            skipped.append(SkippedDocument(path, str(exc), type(exc).__name__))
    return BatchResult(tuple(documents), tuple(skipped))


def _size(size: int) -> str:
    for unit, scale in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if size >= scale:
            return f"{size / scale:.1f}".removesuffix(".0") + f" {unit}"
    return f"{size} bytes"


def _one_line(value: str | None) -> str | None:
    text = " ".join(value.split()) if value else ""
    return (clean_text(text) or None) if text else None
