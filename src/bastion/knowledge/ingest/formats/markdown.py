"""Markdown: YAML front matter becomes metadata; the body is kept as written.

Front matter is read by the project's one parser (:mod:`bastion.labels.frontmatter`), the same
that works out a document's labels on every read path; its errors are this format's
``ParseError``.
"""

from __future__ import annotations

from bastion.knowledge.ingest.errors import ParseError
from bastion.knowledge.ingest.metadata import one_line, person, split_keywords
from bastion.knowledge.ingest.models import Extraction, IngestLimits
from bastion.labels.frontmatter import FrontMatterError, decode, split_front_matter

__all__ = ["parse_markdown"]


def parse_markdown(data: bytes, where: str, limits: IngestLimits) -> Extraction:
    """Markdown: title, author, date and keywords from front matter; the rest passes through.

    Front matter that is not valid YAML, is not a mapping, or is over the size limits raises
    :class:`~bastion.knowledge.ingest.errors.ParseError` (the message gives the line, never
    the content). A ``---`` first line with no closing ``---`` is a thematic break.
    """
    try:
        text = decode(data, where)
        found = split_front_matter(
            text,
            where,
            max_bytes=limits.max_front_matter_bytes,
            max_nodes=limits.max_front_matter_nodes,
        )
    except FrontMatterError as exc:
        raise ParseError(str(exc)) from None
    meta = found.metadata if found is not None else {}
    body = text[found.end :] if found is not None else text
    return Extraction(
        text=body,
        structured=True,
        title=one_line(meta.get("title")),
        author=person(meta.get("author", meta.get("authors"))),
        date=meta.get("date"),
        keywords=split_keywords(meta.get("keywords"), meta.get("tags")),
        metadata=meta,
    )
