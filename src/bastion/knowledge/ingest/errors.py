"""Errors raised while turning bytes into a document.

All of them are agent-facing (:class:`~bastion.core.errors.OperationError`): a one-line message
that names the path, says what failed and what to do next, and never quotes the document.

    OperationError
    └── IngestError               a document could not be ingested
        ├── UnsupportedTypeError  the type is not one Bastion can read
        ├── ParseError            the bytes are malformed, hostile (zip bomb) or undecodable
        ├── EmptyDocumentError    nothing but whitespace once parsed and cleaned
        └── DocumentTooLargeError over a configured limit (bytes, pages)
"""

from __future__ import annotations

from bastion.core.errors import OperationError

__all__ = [
    "DocumentTooLargeError",
    "EmptyDocumentError",
    "IngestError",
    "ParseError",
    "UnsupportedTypeError",
]


class IngestError(OperationError):
    """A document could not be ingested; the batch skips it and goes on."""


class UnsupportedTypeError(IngestError):
    """The detected (or given) MIME type has no parser."""


class ParseError(IngestError):
    """The bytes are malformed, truncated, encrypted, hostile or not valid text."""


class EmptyDocumentError(IngestError):
    """The document holds no text once parsed and cleaned."""


class DocumentTooLargeError(IngestError):
    """The document is over a configured limit (``IngestLimits``)."""
