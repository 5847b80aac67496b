"""DOCX: body paragraphs and tables in order, as Markdown; core properties as metadata.

Heading styles (``Heading 1``..``Heading 9``, ``Title``) become ``#`` headings, list styles
become list items, tables become Markdown tables. Page headers and footers, footnotes,
comments, text boxes and images are not read. Before python-docx sees the file, the zip is
checked: a bounded number of members, only stored or deflated, and a total uncompressed size
under ``IngestLimits.max_unpacked_bytes``, measured while decompressing (so a zip that lies
about its sizes is caught too).
"""

from __future__ import annotations

import io
import re
import zipfile
from collections.abc import Iterator
from datetime import datetime
from typing import Any

import docx
from docx.document import Document
from docx.table import Table
from docx.text.paragraph import Paragraph

from bastion.knowledge.ingest.errors import ParseError
from bastion.knowledge.ingest.formats.common import translated
from bastion.knowledge.ingest.formats.tables import markdown_table
from bastion.knowledge.ingest.metadata import one_line, split_keywords
from bastion.knowledge.ingest.models import Extraction, IngestLimits

__all__ = ["check_zip", "parse_docx"]

_CHUNK = 1024 * 1024
_HEADING_STYLE = re.compile(r"^heading\s*([1-9])$", re.I)
_CORE_FIELDS = (
    "title", "author", "subject", "keywords", "category", "comments", "created", "modified",
    "last_modified_by", "language", "identifier", "content_status", "version", "revision",
)  # fmt: skip


def check_zip(data: bytes, where: str, limits: IngestLimits) -> list[str]:
    """The member names, once the zip is known to unpack within the limits; else ParseError."""
    broken = (zipfile.BadZipFile, "is not a valid DOCX (broken zip)")
    with translated(where, "DOCX", broken), zipfile.ZipFile(io.BytesIO(data)) as archive:
        members = archive.infolist()
        if len(members) > limits.max_zip_entries:
            raise ParseError(
                f"{where}: the DOCX has over {limits.max_zip_entries} parts; not ingested"
            )
        total = 0
        for member in members:
            if member.compress_type not in (zipfile.ZIP_STORED, zipfile.ZIP_DEFLATED):
                raise ParseError(f"{where}: the DOCX uses an unsupported zip compression")
            total += member.file_size
            if total > limits.max_unpacked_bytes:
                raise _bomb(where, limits)
        unpacked = 0
        for member in members:
            with archive.open(member) as stream:
                while chunk := stream.read(_CHUNK):
                    unpacked += len(chunk)
                    if unpacked > limits.max_unpacked_bytes:
                        raise _bomb(where, limits)
        return [m.filename for m in members]


def _bomb(where: str, limits: IngestLimits) -> ParseError:
    mib = limits.max_unpacked_bytes // (1024 * 1024)
    return ParseError(f"{where}: the DOCX unpacks to over {mib} MiB (zip bomb?); not ingested")


def parse_docx(data: bytes, where: str, limits: IngestLimits) -> Extraction:
    """Body as Markdown; title, author, dates, keywords and other core properties."""
    names = check_zip(data, where, limits)
    if "word/document.xml" not in names:
        raise ParseError(f"{where} is a zip but not a DOCX (no word/document.xml); check the file")
    with translated(where, "DOCX"):
        document = docx.Document(io.BytesIO(data))
        body = "\n\n".join(_blocks(document))
        meta = _core_properties(document) if "docProps/core.xml" in names else {}
    return Extraction(
        text=body,
        structured=True,
        title=one_line(meta.get("title")),
        author=one_line(meta.get("author")),
        date=meta.get("created") or meta.get("modified"),
        keywords=split_keywords(meta.get("keywords")),
        metadata=meta,
    )


def _blocks(document: Document) -> Iterator[str]:
    for item in document.iter_inner_content():
        if isinstance(item, Table):
            rows = [[cell.text for cell in row.cells] for row in item.rows]
            yield markdown_table(rows)
        else:
            yield _paragraph(item)


def _paragraph(paragraph: Paragraph) -> str:
    text = " ".join(paragraph.text.split())
    if not text:
        return ""
    style = paragraph.style.name if paragraph.style is not None else ""
    style = (style or "").strip()
    heading = _HEADING_STYLE.match(style)
    if heading:
        return "#" * min(int(heading.group(1)), 6) + " " + text
    if style.lower() == "title":
        return "# " + text
    lowered = style.lower()
    if lowered.startswith("list bullet"):
        return "- " + text
    if lowered.startswith("list number"):
        return "1. " + text
    return text


def _core_properties(document: Document) -> dict[str, Any]:
    props = document.core_properties
    found: dict[str, Any] = {}
    for name in _CORE_FIELDS:
        value = getattr(props, name, None)
        if isinstance(value, datetime):
            found[name] = value.isoformat()
        elif isinstance(value, int) and not isinstance(value, bool):
            found[name] = value
        elif (text := one_line(value)) is not None:
            found[name] = text
    return found
