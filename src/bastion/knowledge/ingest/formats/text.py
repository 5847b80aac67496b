"""Plain text: decoded strictly, kept as it is (cleaning happens later)."""

from __future__ import annotations

from bastion.knowledge.ingest.errors import ParseError
from bastion.knowledge.ingest.models import Extraction, IngestLimits
from bastion.labels.frontmatter import FrontMatterError
from bastion.labels.frontmatter import decode_text as _decoded

__all__ = ["decode_text", "parse_text"]


def decode_text(data: bytes, where: str) -> str:
    """UTF-8 (or UTF-16/32 marked by a byte-order mark); anything else is a ``ParseError``
    (the one decoder, :func:`bastion.labels.frontmatter.decode_text`)."""
    try:
        return _decoded(data, where)
    except FrontMatterError as exc:
        raise ParseError(str(exc), path=where) from None


def parse_text(data: bytes, where: str, limits: IngestLimits) -> Extraction:
    """Plain text: no headings, no metadata."""
    del limits
    return Extraction(text=decode_text(data, where), structured=False)
