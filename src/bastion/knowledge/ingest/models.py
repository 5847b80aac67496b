"""Records of the ingest layer: limits in, parsed documents and batch results out."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from bastion.core.errors import ConfigurationError

__all__ = [
    "DEFAULT_LIMITS",
    "BatchResult",
    "Extraction",
    "Heading",
    "IngestLimits",
    "ParsedDocument",
    "SkippedDocument",
]

_MIB = 1024 * 1024


@dataclass(frozen=True, kw_only=True, slots=True)
class IngestLimits:
    """Bounds on the work one document may cause; over a bound the document is refused."""

    max_bytes: int = 50 * _MIB
    """Largest input accepted, in bytes (``DocumentTooLargeError`` above it)."""
    max_unpacked_bytes: int = 200 * _MIB
    """DOCX: largest total uncompressed size of the zip members (``ParseError`` above it)."""
    max_zip_entries: int = 10_000
    """DOCX: most members a zip may list."""
    max_pdf_pages: int = 10_000
    """PDF: most pages read (``DocumentTooLargeError`` above it)."""
    max_front_matter_bytes: int = 64 * 1024
    """Markdown: largest YAML front matter block."""
    max_front_matter_nodes: int = 10_000
    """Markdown: most values in the front matter once aliases are expanded."""

    def __post_init__(self) -> None:
        for name in self.__slots__:
            value = getattr(self, name)
            if not isinstance(value, int) or isinstance(value, bool) or value <= 0:
                raise ConfigurationError(f"IngestLimits.{name} must be a positive integer")


DEFAULT_LIMITS = IngestLimits()


@dataclass(frozen=True, slots=True)
class Heading:
    """A section heading of the cleaned text."""

    level: int
    """1 for a top-level heading (``#``), up to 6."""
    text: str
    """The heading's text, without the ``#`` markers."""
    line: int
    """1-based line number of the heading in ``ParsedDocument.text``."""


@dataclass(frozen=True, kw_only=True, slots=True)
class ParsedDocument:
    """One document, parsed and cleaned: Markdown-ish text plus what is known about it."""

    path: str
    """The workspace path, normalized (``/docs/a.md``)."""
    doc_id: str
    """``stable_doc_id(path)``: the same path always gives the same id."""
    mime: str
    """The type the document was parsed as."""
    text: str
    """Clean text; ``#`` headings and Markdown tables where the source had them."""
    title: str | None = None
    author: str | None = None
    date: str | None = None
    """ISO 8601 (``2024-03-05`` or ``2024-03-05T10:00:00+00:00``) when the source date parsed."""
    headings: tuple[Heading, ...] = ()
    keywords: tuple[str, ...] = ()
    metadata: dict[str, Any] = field(default_factory=dict, hash=False)
    """Front matter or document properties, JSON-compatible (dates as ISO strings); label keys
    such as ``classification``, ``roles``, ``tenant`` and ``tags`` pass through as written.
    Treat as read-only."""


@dataclass(frozen=True, slots=True)
class SkippedDocument:
    """A document the batch could not ingest, and why."""

    path: str
    reason: str
    """The error's one-line message."""
    error: str
    """The error's class name (``ParseError``, ``UnsupportedTypeError``...)."""


@dataclass(frozen=True, slots=True)
class BatchResult:
    """What ``ingest_many`` parsed and what it skipped."""

    documents: tuple[ParsedDocument, ...]
    skipped: tuple[SkippedDocument, ...]

    @property
    def parsed(self) -> int:
        """How many documents parsed."""
        return len(self.documents)

    @property
    def reasons(self) -> dict[str, str]:
        """Skipped path -> reason."""
        return {s.path: s.reason for s in self.skipped}

    def summary(self) -> str:
        """One line: ``3 parsed, 1 skipped``."""
        return f"{self.parsed} parsed, {len(self.skipped)} skipped"


@dataclass(frozen=True, kw_only=True, slots=True)
class Extraction:
    """What a format parser hands to the pipeline, before cleaning (internal)."""

    text: str
    structured: bool
    """True when ``#`` lines in ``text`` are headings (Markdown, HTML, DOCX)."""
    keep_indent: bool = True
    """False where leading spaces are layout noise (PDF)."""
    title: str | None = None
    author: str | None = None
    date: object = None
    """Raw date (string, ``date`` or ``datetime``); normalized by the pipeline."""
    keywords: tuple[str, ...] = ()
    metadata: Mapping[str, Any] = field(default_factory=dict)
