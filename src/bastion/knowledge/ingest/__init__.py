"""Ingest: bytes in, a clean structured document out. Pure functions, no I/O.

    parse_document(data, path)      detect -> parse -> clean -> metadata -> ParsedDocument
    ingest_many([(path, data), ...]) the same for a batch; failures skipped with their reasons

Supported: Markdown (with YAML front matter), plain text, HTML (main content), PDF, DOCX.
See ``docs/ingestion.md`` for what each parser keeps and drops.
"""

from __future__ import annotations

from bastion.knowledge.ingest.clean import clean_text
from bastion.knowledge.ingest.detect import SUPPORTED, detect_type
from bastion.knowledge.ingest.errors import (
    DocumentTooLargeError,
    EmptyDocumentError,
    IngestError,
    ParseError,
    UnsupportedTypeError,
)
from bastion.knowledge.ingest.metadata import stable_doc_id
from bastion.knowledge.ingest.models import (
    DEFAULT_LIMITS,
    BatchResult,
    Heading,
    IngestLimits,
    ParsedDocument,
    SkippedDocument,
)
from bastion.knowledge.ingest.pipeline import ingest_many, parse_document

__all__ = [
    "DEFAULT_LIMITS",
    "SUPPORTED",
    "BatchResult",
    "DocumentTooLargeError",
    "EmptyDocumentError",
    "Heading",
    "IngestError",
    "IngestLimits",
    "ParseError",
    "ParsedDocument",
    "SkippedDocument",
    "UnsupportedTypeError",
    "clean_text",
    "detect_type",
    "ingest_many",
    "parse_document",
    "stable_doc_id",
]
